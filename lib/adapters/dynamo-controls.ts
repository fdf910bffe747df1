import { type AttributeValue, type DynamoDBClient, GetItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { type ControlChange, type ControlStore, type Controls, changed, type QueueControl } from '../track/operator-controls';
import { fromAttribute, fromItem, isConditionFailure, toAttribute } from './dynamo-values';

/** The key of the controls item in the version's stats table (no queue's stats key lacks a `#`, no limit's a `limit:`). */
export const CONTROLS_KEY = 'controls';
/** Tries of one change when another operator's change landed between its read and its write. */
const TRIES = 5;
/** A rate-limit pause is a top-level attribute of the controls item named this and its scope. */
const PAUSE_PREFIX = 'pause:';

/**
 * {@link ControlStore} on the version's stats table: one item, `pk` = `controls`, holding every
 * queue's controls and a `revision`, and each rate-limit pause as an attribute of its own
 * (`pause:<scope>` = epoch ms), so a dispatcher's pause is one conditional write that no operator's
 * change overwrites. A dispatcher's read is one eventually consistent GetItem (half a read unit
 * while the item stays below 4 KB: ended pauses are pruned by the next pause); an operator's change
 * reads it strongly and writes its fields back on condition the revision did not move.
 */
export class DynamoControlStore implements ControlStore {
  constructor(
    private readonly tableName: string,
    private readonly dynamo: DynamoDBClient,
  ) {}

  async read(consistent = false): Promise<Controls> {
    const out = await this.dynamo.send(
      new GetItemCommand({ TableName: this.tableName, Key: { pk: { S: CONTROLS_KEY } }, ConsistentRead: consistent }),
    );
    return out.Item ? controlsOf(out.Item) : { revision: 0, queues: {}, pauses: {} };
  }

  async change(queue: string, change: ControlChange, now: number): Promise<Controls> {
    for (let tries = 1; ; tries++) {
      const current = await this.read(true);
      const queues = { ...current.queues };
      const next = changed(queues[queue], change, now);
      if (next) queues[queue] = next;
      else delete queues[queue];
      const revision = current.revision + 1;
      try {
        // An update, not a put: the pauses beside these fields stay as they are.
        await this.dynamo.send(
          new UpdateItemCommand({
            TableName: this.tableName,
            Key: { pk: { S: CONTROLS_KEY } },
            UpdateExpression: 'SET #revision = :next, #queues = :queues',
            // Revision 0 was read as no revision at all: no item yet, or one a rate limit's pause
            // created (its attributes are the pauses alone).
            ConditionExpression: current.revision === 0 ? 'attribute_not_exists(#revision)' : '#revision = :seen',
            ExpressionAttributeNames: { '#revision': 'revision', '#queues': 'queues' },
            ExpressionAttributeValues: {
              ...(current.revision === 0 ? {} : { ':seen': { N: String(current.revision) } }),
              ':next': { N: String(revision) },
              ':queues': toAttribute(queues),
            },
          }),
        );
        return { revision, queues, pauses: current.pauses };
      } catch (error) {
        if (!isConditionFailure(error) || tries >= TRIES) throw error;
      }
    }
  }

  async pause(scope: string, until: number, now: number): Promise<number> {
    let item: Record<string, AttributeValue> | undefined;
    try {
      const out = await this.dynamo.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: { pk: { S: CONTROLS_KEY } },
          UpdateExpression: 'SET #scope = :until',
          ConditionExpression: 'attribute_not_exists(#scope) OR #scope < :until',
          ExpressionAttributeNames: { '#scope': PAUSE_PREFIX + scope },
          ExpressionAttributeValues: { ':until': { N: String(until) } },
          ReturnValues: 'ALL_NEW',
        }),
      );
      item = out.Attributes;
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
      // A longer pause of the scope is in force already.
      return (await this.read(true)).pauses[scope] ?? until;
    }
    await this.prune(item ? controlsOf(item).pauses : {}, now);
    return until;
  }

  /**
   * Removes pauses that ended before `now`, each on condition it still ends when it was read (a
   * pause extended meanwhile stays). Best effort: a lost race leaves them for the next pause.
   */
  private async prune(pauses: Readonly<Record<string, number>>, now: number): Promise<void> {
    const ended = Object.entries(pauses).filter(([, until]) => until < now);
    if (ended.length === 0) return;
    const names: Record<string, string> = {};
    const values: Record<string, AttributeValue> = {};
    ended.forEach(([scope, until], i) => {
      names[`#p${i}`] = PAUSE_PREFIX + scope;
      values[`:p${i}`] = { N: String(until) };
    });
    try {
      await this.dynamo.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: { pk: { S: CONTROLS_KEY } },
          UpdateExpression: `REMOVE ${ended.map((_, i) => `#p${i}`).join(', ')}`,
          ConditionExpression: ended.map((_, i) => `#p${i} = :p${i}`).join(' AND '),
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
        }),
      );
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
    }
  }
}

/** The controls an item holds: its queues and revision, and its `pause:` attributes. */
function controlsOf(item: Record<string, AttributeValue>): Controls {
  const pauses: Record<string, number> = {};
  for (const [name, value] of Object.entries(item)) {
    if (!name.startsWith(PAUSE_PREFIX)) continue;
    const until = fromAttribute(value);
    if (typeof until === 'number') pauses[name.slice(PAUSE_PREFIX.length)] = until;
  }
  const raw = fromItem({ ...(item.revision ? { revision: item.revision } : {}), ...(item.queues ? { queues: item.queues } : {}) }) as {
    revision?: number;
    queues?: Record<string, QueueControl>;
  };
  return { revision: raw.revision ?? 0, queues: raw.queues ?? {}, pauses };
}
