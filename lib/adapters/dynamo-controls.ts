import { ConditionalCheckFailedException, type DynamoDBClient, GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { type ControlChange, type ControlStore, type Controls, changed, type QueueControl } from '../track/operator-controls';
import { fromItem, toItem } from './dynamo-values';

/** The key of the controls item in the version's stats table (no queue's stats key lacks a `#`, no limit's a `limit:`). */
export const CONTROLS_KEY = 'controls';
/** Tries of one change when another operator's change landed between its read and its write. */
const TRIES = 5;

/**
 * {@link ControlStore} on the version's stats table: one item, `pk` = `controls`, holding every
 * queue's controls and a `revision`. A dispatcher's read is one eventually consistent GetItem (half
 * a read unit: the item stays far below 4 KB); an operator's change reads it strongly and writes it
 * back on condition the revision did not move.
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
    if (!out.Item) return { revision: 0, queues: {} };
    const raw = fromItem(out.Item) as { revision?: number; queues?: Record<string, QueueControl> };
    return { revision: raw.revision ?? 0, queues: raw.queues ?? {} };
  }

  async change(queue: string, change: ControlChange, now: number): Promise<Controls> {
    for (let tries = 1; ; tries++) {
      const current = await this.read(true);
      const queues = { ...current.queues };
      const next = changed(queues[queue], change, now);
      if (next) queues[queue] = next;
      else delete queues[queue];
      const controls: Controls = { revision: current.revision + 1, queues };
      try {
        await this.dynamo.send(
          new PutItemCommand({
            TableName: this.tableName,
            Item: toItem({ pk: CONTROLS_KEY, revision: controls.revision, queues }),
            ConditionExpression: 'attribute_not_exists(#pk) OR #revision = :seen',
            ExpressionAttributeNames: { '#pk': 'pk', '#revision': 'revision' },
            ExpressionAttributeValues: { ':seen': { N: String(current.revision) } },
          }),
        );
        return controls;
      } catch (error) {
        const lost =
          error instanceof ConditionalCheckFailedException || (error instanceof Error && error.name === 'ConditionalCheckFailedException');
        if (!lost || tries >= TRIES) throw error;
      }
    }
  }
}
