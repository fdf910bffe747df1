import { type AttributeValue, BatchGetItemCommand, type DynamoDBClient, GetItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import {
  type DurationStats,
  type MinuteCounts,
  type QueueDayStats,
  STAT_COUNTERS,
  type StatCounter,
  type StatsStore,
  type TaskCost,
} from '../track/stats-store';
import { BATCH_GET, type CapacityMeter } from './dynamo-job-table';
import { Expression, fromItem } from './dynamo-values';

/** Flat attribute names of a stats item: counters, `archived_<reason>`, and `<wait|run>_<count|sum|sumsq|bucket>`. */
const durationAttributes = (prefix: 'wait' | 'run', d: DurationStats): Array<[string, number]> => [
  [`${prefix}_count`, d.count],
  [`${prefix}_sum`, d.sum],
  [`${prefix}_sumsq`, d.sumSquares],
  ...Object.entries(d.buckets).map(([bucket, n]): [string, number] => [`${prefix}_${bucket}`, n]),
];

/** A task day's attributed cost (lib/policy/cost-attribution.ts), ADDed like the counters; rounded so a DynamoDB number holds it. */
const costAttributes = (c: TaskCost): Array<[string, number]> => [
  ['cost_mbms', Math.round(c.lambdaMbMs)],
  ['cost_sqs', Math.round(c.sqsRequests * 1e6) / 1e6],
  ['cost_wcu', Math.round(c.writeUnits * 1e6) / 1e6],
];

/**
 * {@link StatsStore} on a DynamoDB table: each `add` is one UpdateItem of ADDs, so any number of
 * dispatchers update a queue's day without reading it or racing.
 */
export class DynamoStatsStore implements StatsStore {
  /** Its client (the dispatcher meters it: lib/adapters/usage-meter.ts). */
  readonly capacity: CapacityMeter = { writeUnits: 0, readUnits: 0 };

  constructor(
    private readonly tableName: string,
    readonly dynamo: DynamoDBClient,
  ) {}

  async add(delta: QueueDayStats, expiresAtSeconds: number): Promise<void> {
    const pairs: Array<[string, number]> = [
      ...Object.entries(delta.counters).map(([k, n]): [string, number] => [k, n ?? 0]),
      ...Object.entries(delta.archived).map(([k, n]): [string, number] => [`archived_${k}`, n ?? 0]),
      ...durationAttributes('wait', delta.wait),
      ...durationAttributes('run', delta.run),
      ...(delta.cost ? costAttributes(delta.cost) : []),
    ].filter(([, n]) => n !== 0);
    if (pairs.length === 0) return;
    const e = new Expression();
    const out = await this.dynamo.send(
      new UpdateItemCommand({
        TableName: this.tableName,
        Key: { pk: { S: `${delta.queue}#${delta.day}` } },
        UpdateExpression:
          `SET ${e.name('queue')} = ${e.value(delta.queue)}, ${e.name('day')} = ${e.value(delta.day)}, ${e.name('expiresAt')} = ${e.value(expiresAtSeconds)} ` +
          `ADD ${pairs.map(([k, n]) => `${e.name(k)} ${e.value(n)}`).join(', ')}`,
        ReturnConsumedCapacity: 'TOTAL',
        ...e.params(),
      }),
    );
    this.capacity.writeUnits += out.ConsumedCapacity?.CapacityUnits ?? 0;
  }

  async get(queue: string, day: string): Promise<QueueDayStats | undefined> {
    const out = await this.dynamo.send(
      new GetItemCommand({ TableName: this.tableName, Key: { pk: { S: `${queue}#${day}` } }, ConsistentRead: true }),
    );
    if (!out.Item) return undefined;
    const raw = fromItem(out.Item) as Record<string, number>;
    const counters: Partial<Record<StatCounter, number>> = {};
    for (const c of STAT_COUNTERS) if (raw[c] !== undefined) counters[c] = raw[c];
    const archived: Record<string, number> = {};
    const duration = (prefix: 'wait' | 'run'): DurationStats => {
      const buckets: Record<string, number> = {};
      for (const [k, v] of Object.entries(raw)) {
        const m = new RegExp(`^${prefix}_([smhd]\\d+)$`).exec(k);
        if (m?.[1]) buckets[m[1]] = v;
      }
      return { count: raw[`${prefix}_count`] ?? 0, sum: raw[`${prefix}_sum`] ?? 0, sumSquares: raw[`${prefix}_sumsq`] ?? 0, buckets };
    };
    for (const [k, v] of Object.entries(raw)) if (k.startsWith('archived_')) archived[k.slice('archived_'.length)] = v;
    const cost =
      raw.cost_mbms !== undefined || raw.cost_sqs !== undefined || raw.cost_wcu !== undefined
        ? { lambdaMbMs: raw.cost_mbms ?? 0, sqsRequests: raw.cost_sqs ?? 0, writeUnits: raw.cost_wcu ?? 0 }
        : undefined;
    return { queue, day, counters, archived, wait: duration('wait'), run: duration('run'), ...(cost ? { cost } : {}) };
  }

  /** One UpdateItem of ADDs on the item `<queue>#<YYYY-MM-DDTHH:MM>` (three numbers: 1 WCU). */
  async addMinute(queue: string, minute: string, counts: MinuteCounts, expiresAtSeconds: number): Promise<void> {
    const pairs = Object.entries(counts).filter(([, n]) => n !== 0);
    if (pairs.length === 0) return;
    const e = new Expression();
    const out = await this.dynamo.send(
      new UpdateItemCommand({
        TableName: this.tableName,
        Key: { pk: { S: `${queue}#${minute}` } },
        UpdateExpression:
          `SET ${e.name('expiresAt')} = ${e.value(expiresAtSeconds)} ` +
          `ADD ${pairs.map(([k, n]) => `${e.name(k)} ${e.value(n)}`).join(', ')}`,
        ReturnConsumedCapacity: 'TOTAL',
        ...e.params(),
      }),
    );
    this.capacity.writeUnits += out.ConsumedCapacity?.CapacityUnits ?? 0;
  }

  /** BatchGetItem (eventually consistent, 0.5 RCU an item) of the queue's minute items; unprocessed keys asked again. */
  async minutes(queue: string, minutes: readonly string[]): Promise<Record<string, MinuteCounts>> {
    const out: Record<string, MinuteCounts> = {};
    for (let i = 0; i < minutes.length; i += BATCH_GET) {
      let pending: Record<string, AttributeValue>[] = minutes.slice(i, i + BATCH_GET).map((m) => ({ pk: { S: `${queue}#${m}` } }));
      for (let round = 0; pending.length > 0; round++) {
        if (round > 0) await new Promise((resolve) => setTimeout(resolve, Math.min(1_000, 25 * 2 ** round)));
        const answer = await this.dynamo.send(
          new BatchGetItemCommand({ RequestItems: { [this.tableName]: { Keys: pending } }, ReturnConsumedCapacity: 'TOTAL' }),
        );
        for (const c of answer.ConsumedCapacity ?? []) this.capacity.readUnits += c.CapacityUnits ?? 0;
        for (const item of answer.Responses?.[this.tableName] ?? []) {
          const raw = fromItem(item) as Record<string, number | string>;
          const minute = String(raw.pk).slice(queue.length + 1);
          out[minute] = { started: Number(raw.started ?? 0), succeeded: Number(raw.succeeded ?? 0), archived: Number(raw.archived ?? 0) };
        }
        pending = (answer.UnprocessedKeys?.[this.tableName]?.Keys ?? []) as Record<string, AttributeValue>[];
      }
    }
    return out;
  }
}
