import {
  type AttributeValue,
  ConditionalCheckFailedException,
  type DynamoDBClient,
  GetItemCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import type { AcquireRequest, LimitStore, TakeRequest, TakeResult } from '../track/limits';
import { Expression, fromItem } from './dynamo-values';

/** Tries of one reservation when the item changed under it (another dispatcher's write). */
const TRIES = 4;

const isConditionFailure = (error: unknown): error is ConditionalCheckFailedException =>
  error instanceof ConditionalCheckFailedException || (error instanceof Error && error.name === 'ConditionalCheckFailedException');

/**
 * {@link LimitStore} on the version's stats table, one item per limit key (`limit:<key>`), with
 * atomic counters under conditions — no read before the common write, no lock, no version to race
 * on, so dispatchers reserving the same key at once do not fail each other.
 *
 * Concurrency: `ADD used :k` on condition `used <= limit − k`, with the batch's entry in `holders`
 * (its count and lease end). When the condition fails, lapsed holders (dead dispatchers) are
 * removed, each on condition it is still the entry that lapsed, and what is left is taken.
 *
 * Rate: a token bucket kept as a count of tokens `spent` since the bucket's `start`: at `now` the
 * bucket has earned `burst + (now − start) × perSecond` tokens, so `ADD spent :k` on condition
 * `earned − burst ≤ spent ≤ earned − k` takes k tokens (the lower bound keeps an idle bucket from
 * holding more than `burst`; a bucket below it is first raised to it, itself a conditional write).
 */
export class DynamoLimitStore implements LimitStore {
  /** Slots granted per `key|holder`, for the release (a batch releases what it took). */
  private readonly granted = new Map<string, number>();
  /** Keys whose item exists (created with empty `holders` / a `start`), and bucket starts. */
  private readonly ready = new Set<string>();
  private readonly starts = new Map<string, number>();

  constructor(
    private readonly tableName: string,
    private readonly dynamo: DynamoDBClient,
  ) {}

  async acquire(r: AcquireRequest): Promise<number> {
    await this.ensure(r.key, { holders: {}, used: 0 });
    let want = Math.min(r.want, r.limit);
    for (let tries = 0; tries < TRIES && want > 0; tries++) {
      const e = new Expression();
      const used = e.name('used');
      const entry = `${e.name('holders')}.${e.name(r.holder)}`;
      const old = await this.update(r.key, e, {
        update: `ADD ${used} ${e.value(want)} SET ${entry} = ${e.value({ n: want, until: r.until })}`,
        condition: `${used} <= ${e.value(r.limit - want)} AND attribute_not_exists(${entry})`,
      });
      if (old === undefined) {
        this.granted.set(`${r.key}|${r.holder}`, want);
        return want;
      }
      const holders = (old.holders ?? {}) as Record<string, { n: number; until: number }>;
      let free = r.limit - ((old.used as number | undefined) ?? 0);
      for (const [holder, held] of Object.entries(holders)) {
        if (held.until < r.now && (await this.dropLapsed(r.key, holder, held))) free += held.n;
      }
      want = Math.min(want, free);
    }
    return 0;
  }

  async release(key: string, holder: string): Promise<void> {
    const n = this.granted.get(`${key}|${holder}`);
    if (n === undefined) return;
    this.granted.delete(`${key}|${holder}`);
    await this.dropLapsed(key, holder, undefined, n);
  }

  async held(key: string, now: number): Promise<number> {
    const item = await this.read(key);
    const holders = ((item ? fromItem(item) : {}) as { holders?: Record<string, { n: number; until: number }> }).holders ?? {};
    let n = 0;
    for (const [holder, entry] of Object.entries(holders)) {
      // A lapsed entry is a holder that died: its slots go back as the acquire's cleanup would.
      if (entry.until < now) await this.dropLapsed(key, holder, entry);
      else n += entry.n;
    }
    return n;
  }

  async take(r: TakeRequest): Promise<TakeResult> {
    const start = await this.bucketStart(r.key, r.now);
    const earned = Math.floor(r.burst + ((r.now - start) * r.perSecond) / 1000);
    let want = r.want;
    for (let tries = 0; tries < TRIES && want > 0; tries++) {
      const e = new Expression();
      const spentName = e.name('spent');
      const old = await this.update(r.key, e, {
        update: `ADD ${spentName} ${e.value(want)}`,
        condition: `${spentName} >= ${e.value(earned - r.burst)} AND ${spentName} <= ${e.value(earned - want)}`,
      });
      if (old === undefined) return { granted: want, retryAfterMs: want === r.want ? 0 : this.nextTokenMs(start, earned, r) };
      const spent = (old.spent as number | undefined) ?? 0;
      if (spent < earned - r.burst) {
        // Idle long enough to have earned more than a bucket holds: it holds `burst`.
        const f = new Expression();
        await this.update(r.key, f, {
          update: `SET ${f.name('spent')} = ${f.value(earned - r.burst)}`,
          condition: `${f.name('spent')} < ${f.value(earned - r.burst)}`,
        });
        continue;
      }
      want = Math.min(want, earned - spent);
    }
    return { granted: 0, retryAfterMs: this.nextTokenMs(start, earned, r) };
  }

  /** When the bucket earns its next whole token, ms from `now`. */
  private nextTokenMs(start: number, earned: number, r: { perSecond: number; burst: number; now: number }): number {
    const at = start + ((earned + 1 - r.burst) * 1000) / r.perSecond;
    return Math.max(1, Math.ceil(at - r.now));
  }

  /** Removes a holder's entry and gives back its slots, on condition the entry is still `held` (or holds `n`). */
  private async dropLapsed(key: string, holder: string, held?: { n: number; until: number }, n = held?.n ?? 0): Promise<boolean> {
    const e = new Expression();
    const entry = `${e.name('holders')}.${e.name(holder)}`;
    const old = await this.update(key, e, {
      update: `REMOVE ${entry} ADD ${e.name('used')} ${e.value(-n)}`,
      condition: held
        ? `${entry}.${e.name('until')} = ${e.value(held.until)} AND ${entry}.${e.name('n')} = ${e.value(held.n)}`
        : `${entry}.${e.name('n')} = ${e.value(n)}`,
    });
    return old === undefined;
  }

  private async bucketStart(key: string, now: number): Promise<number> {
    const known = this.starts.get(key);
    if (known !== undefined) return known;
    const e = new Expression();
    const out = await this.dynamo.send(
      new UpdateItemCommand({
        TableName: this.tableName,
        Key: { pk: { S: `limit:${key}` } },
        UpdateExpression: `SET ${e.name('start')} = if_not_exists(${e.name('start')}, ${e.value(now)}), ${e.name('spent')} = if_not_exists(${e.name('spent')}, ${e.value(0)})`,
        ReturnValues: 'ALL_NEW',
        ReturnConsumedCapacity: 'TOTAL',
        ...e.params(),
      }),
    );
    const start = Number((fromItem(out.Attributes ?? {}) as { start?: number }).start ?? now);
    this.starts.set(key, start);
    return start;
  }

  /** Creates the key's item with `fields` where absent (once per process and key). */
  private async ensure(key: string, fields: Record<string, unknown>): Promise<void> {
    if (this.ready.has(key)) return;
    const e = new Expression();
    await this.dynamo.send(
      new UpdateItemCommand({
        TableName: this.tableName,
        Key: { pk: { S: `limit:${key}` } },
        UpdateExpression: `SET ${Object.entries(fields)
          .map(([name, value]) => `${e.name(name)} = if_not_exists(${e.name(name)}, ${e.value(value)})`)
          .join(', ')}`,
        ReturnConsumedCapacity: 'TOTAL',
        ...e.params(),
      }),
    );
    this.ready.add(key);
  }

  /** One conditional update: undefined when it landed, else the item as the condition found it. */
  private async update(
    key: string,
    e: Expression,
    expr: { update: string; condition: string },
  ): Promise<Record<string, unknown> | undefined> {
    try {
      await this.dynamo.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: { pk: { S: `limit:${key}` } },
          UpdateExpression: expr.update,
          ConditionExpression: expr.condition,
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          ReturnConsumedCapacity: 'TOTAL',
          ...e.params(),
        }),
      );
      return undefined;
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
      const item: Record<string, AttributeValue> | undefined = error.Item ?? (await this.read(key));
      return item ? (fromItem(item) as Record<string, unknown>) : {};
    }
  }

  private async read(key: string): Promise<Record<string, AttributeValue> | undefined> {
    const out = await this.dynamo.send(
      new GetItemCommand({
        TableName: this.tableName,
        Key: { pk: { S: `limit:${key}` } },
        ConsistentRead: true,
        ReturnConsumedCapacity: 'TOTAL',
      }),
    );
    return out.Item;
  }
}
