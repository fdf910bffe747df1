import { type AttributeValue, type DynamoDBClient, GetItemCommand, ScanCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import {
  type AcquireRequest,
  bucket,
  type Holders,
  keyLimitKey,
  type LimitStore,
  liveHolders,
  type TakeRequest,
  type TakeResult,
} from '../track/fleet-limits';
import { Expression, fromItem, isConditionFailure } from './dynamo-values';

/** What begins the item key of a per-key limit (`limit:` and lib/track/fleet-limits.ts `keyLimitKey`). */
const KEY_ITEMS = 'limit:key:';

/** One key's limit item, as `taskworker keys` shows it (lib/operate/keys.ts). */
export interface KeyUsage {
  readonly task: string;
  readonly key: string;
  /** Jobs of the key running now: slots held by holders whose lease has not ended. */
  readonly running: number;
  /** Jobs parked in the key's line (`waiting-key`), as the count kept beside the line says. */
  readonly waiting: number;
  /** At most this many of the key run at once, as its last reservation asked (absent: a rate only). */
  readonly concurrency?: number;
}

/** A limit item as `keys` reads it. */
type LimitItem = { pk: string; holders?: Holders; parked?: number; limit?: number };

/** A per-key limit item's usage at `now`; undefined for an item that is no key's. */
function usageOf(item: LimitItem, now: number): KeyUsage | undefined {
  if (!item.pk.startsWith(KEY_ITEMS)) return undefined;
  const rest = item.pk.slice(KEY_ITEMS.length);
  const colon = rest.indexOf(':');
  if (colon < 0) return undefined;
  const running = Object.values(liveHolders(item.holders ?? {}, now)).reduce((a, h) => a + h.n, 0);
  return {
    task: rest.slice(0, colon),
    key: rest.slice(colon + 1),
    running,
    waiting: Math.max(0, Number(item.parked ?? 0)),
    ...(item.limit !== undefined ? { concurrency: Number(item.limit) } : {}),
  };
}

/** Tries of one reservation when the item changed under it (another dispatcher's write). */
const TRIES = 4;

/**
 * {@link LimitStore} on the version's stats table, one item per limit key (`limit:<key>`), with
 * atomic counters under conditions — no read before the common write, no lock, no version to race
 * on, so dispatchers reserving the same key at once do not fail each other.
 *
 * Concurrency: `ADD used :k` on condition `used <= limit − k`, with the batch's entry in `holders`
 * (its count and lease end). When the condition fails, lapsed holders (dead dispatchers) are
 * removed, each on condition it is still the entry that lapsed, and what is left is taken.
 *
 * Rate: a token bucket kept as a count of tokens `spent` since the bucket's `start` (lib/track/fleet-limits.ts
 * `bucket`): `ADD spent :k` on condition `earned − burst ≤ spent ≤ earned + ahead − k` takes k tokens,
 * the last of them booked up to `aheadMs` before they are earned (the lower bound keeps an idle
 * bucket from holding more than `burst`; a bucket below it is first raised to it, itself a
 * conditional write). The write returns the new count, which numbers the tokens taken and so says
 * when each is earned. Jobs with no token join the `line` the same way: `ADD line :k` on condition
 * `line ≥ front` (what can be booked now; a line behind it is first raised to it).
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
      const { landed, item: old } = await this.update(r.key, e, {
        // The limit kept beside: `taskworker keys` shows it (lib/operate/keys.ts).
        update: `ADD ${used} ${e.value(want)} SET ${entry} = ${e.value({ n: want, until: r.until })}, ${e.name('limit')} = ${e.value(r.limit)}`,
        condition: `${used} <= ${e.value(r.limit - want)} AND attribute_not_exists(${entry})`,
      });
      if (landed) {
        this.granted.set(`${r.key}|${r.holder}`, want);
        return want;
      }
      const holders = (old.holders ?? {}) as Record<string, { n: number; until: number }>;
      let free = r.limit - ((old.used as number | undefined) ?? 0);
      for (const [holder, held] of Object.entries(holders)) {
        if (held.until < r.now && (await this.dropLapsed(r.key, holder, held)).landed) free += held.n;
      }
      want = Math.min(want, free);
    }
    return 0;
  }

  async release(key: string, holder: string): Promise<number> {
    const n = this.granted.get(`${key}|${holder}`);
    if (n === undefined) return 0;
    this.granted.delete(`${key}|${holder}`);
    const { item } = await this.dropLapsed(key, holder, undefined, n);
    return Number(item.parked ?? 0);
  }

  /** Every per-key limit item (`key:<task>:<key>`, lib/track/fleet-limits.ts), read by one Scan of the stats table. */
  async keyUsage(now: number): Promise<KeyUsage[]> {
    const found: KeyUsage[] = [];
    let start: Record<string, AttributeValue> | undefined;
    do {
      const e = new Expression();
      const out = await this.dynamo.send(
        new ScanCommand({
          TableName: this.tableName,
          FilterExpression: `begins_with(${e.name('pk')}, ${e.value(KEY_ITEMS)})`,
          ...(start ? { ExclusiveStartKey: start } : {}),
          ...e.params(),
        }),
      );
      for (const raw of out.Items ?? []) {
        const usage = usageOf(fromItem(raw) as LimitItem, now);
        if (usage) found.push(usage);
      }
      start = out.LastEvaluatedKey;
    } while (start);
    return found;
  }

  /** One key's limit item, read strongly consistent; undefined when the key has none. */
  async keyUsageOf(task: string, key: string, now: number): Promise<KeyUsage | undefined> {
    const out = await this.dynamo.send(
      new GetItemCommand({ TableName: this.tableName, Key: { pk: { S: `limit:${keyLimitKey(task, key)}` } }, ConsistentRead: true }),
    );
    return out.Item ? usageOf(fromItem(out.Item) as LimitItem, now) : undefined;
  }

  async parked(key: string, delta: number): Promise<number> {
    const e = new Expression();
    const out = await this.dynamo.send(
      new UpdateItemCommand({
        TableName: this.tableName,
        Key: { pk: { S: `limit:${key}` } },
        UpdateExpression: `ADD ${e.name('parked')} ${e.value(delta)}`,
        ReturnValues: 'UPDATED_NEW',
        ReturnConsumedCapacity: 'TOTAL',
        ...e.params(),
      }),
    );
    const n = Number((fromItem(out.Attributes ?? {}) as { parked?: number }).parked ?? 0);
    // More taken off than was counted (the count is a hint: a woken job may have been counted once): back to 0.
    if (n < 0) await this.clearParked(key, n);
    return Math.max(0, n);
  }

  async watchLine(key: string, now: number, until: number): Promise<boolean> {
    const e = new Expression();
    const watch = e.name('watch');
    const { landed } = await this.update(key, e, {
      update: `SET ${watch} = ${e.value(until)}`,
      condition: `attribute_not_exists(${watch}) OR ${watch} <= ${e.value(now)}`,
    });
    return landed;
  }

  async clearParked(key: string, seen: number): Promise<void> {
    const e = new Expression();
    await this.update(key, e, {
      update: `SET ${e.name('parked')} = ${e.value(0)}`,
      condition: `${e.name('parked')} = ${e.value(seen)}`,
    });
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
    const earned = bucket.earned(start, r);
    const most = earned + bucket.ahead(r);
    let want = r.want;
    let spent = earned - r.burst;
    for (let tries = 0; tries < TRIES && want > 0; tries++) {
      const e = new Expression();
      const spentName = e.name('spent');
      const out = await this.update(r.key, e, {
        update: `ADD ${spentName} ${e.value(want)}`,
        condition: `${spentName} >= ${e.value(earned - r.burst)} AND ${spentName} <= ${e.value(most - want)}`,
        returnNew: true,
      });
      if (out.landed) return bucket.result(start, Number(out.item.spent), want, r);
      spent = (out.item.spent as number | undefined) ?? 0;
      if (spent < earned - r.burst) {
        // Idle long enough to have earned more than a bucket holds: it holds `burst`.
        const f = new Expression();
        await this.update(r.key, f, {
          update: `SET ${f.name('spent')} = ${f.value(earned - r.burst)}`,
          condition: `${f.name('spent')} < ${f.value(earned - r.burst)}`,
        });
        continue;
      }
      want = Math.min(want, most - spent);
    }
    return bucket.result(start, spent, 0, r);
  }

  async waitInLine(r: TakeRequest): Promise<number[]> {
    const start = await this.bucketStart(r.key, r.now);
    // What can be booked now: a line behind it has ended (its jobs' turns came).
    const front = bucket.earned(start, r) + bucket.ahead(r);
    for (let tries = 0; tries < TRIES; tries++) {
      const e = new Expression();
      const line = e.name('line');
      const out = await this.update(r.key, e, {
        update: `ADD ${line} ${e.value(r.want)}`,
        condition: `${line} >= ${e.value(front)}`,
        returnNew: true,
      });
      if (out.landed) return bucket.turns(start, Number(out.item.line), r);
      const f = new Expression();
      await this.update(r.key, f, {
        update: `SET ${f.name('line')} = ${f.value(front)}`,
        condition: `attribute_not_exists(${f.name('line')}) OR ${f.name('line')} < ${f.value(front)}`,
      });
    }
    // The line moved under every try (other dispatchers queueing at once): turns behind what is bookable.
    return bucket.turns(start, front + r.want, r);
  }

  /**
   * Removes a holder's entry and gives back its slots, on condition the entry is still `held` (or
   * holds `n`): `landed`, with the item after it (as the condition found it when not).
   */
  private async dropLapsed(
    key: string,
    holder: string,
    held?: { n: number; until: number },
    n = held?.n ?? 0,
  ): Promise<{ landed: boolean; item: Record<string, unknown> }> {
    const e = new Expression();
    const entry = `${e.name('holders')}.${e.name(holder)}`;
    return this.update(key, e, {
      update: `REMOVE ${entry} ADD ${e.name('used')} ${e.value(-n)}`,
      condition: held
        ? `${entry}.${e.name('until')} = ${e.value(held.until)} AND ${entry}.${e.name('n')} = ${e.value(held.n)}`
        : `${entry}.${e.name('n')} = ${e.value(n)}`,
      returnNew: held === undefined ? 'ALL_NEW' : false,
    });
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

  /**
   * One conditional update: `landed` with the updated attributes (when asked for), or not, with the
   * item as the condition found it.
   */
  private async update(
    key: string,
    e: Expression,
    expr: { update: string; condition: string; returnNew?: boolean | 'ALL_NEW' },
  ): Promise<{ landed: boolean; item: Record<string, unknown> }> {
    try {
      const out = await this.dynamo.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: { pk: { S: `limit:${key}` } },
          UpdateExpression: expr.update,
          ConditionExpression: expr.condition,
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          ...(expr.returnNew ? { ReturnValues: expr.returnNew === 'ALL_NEW' ? ('ALL_NEW' as const) : ('UPDATED_NEW' as const) } : {}),
          ReturnConsumedCapacity: 'TOTAL',
          ...e.params(),
        }),
      );
      return { landed: true, item: fromItem(out.Attributes ?? {}) as Record<string, unknown> };
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
      const item: Record<string, AttributeValue> | undefined = error.Item ?? (await this.read(key));
      return { landed: false, item: item ? (fromItem(item) as Record<string, unknown>) : {} };
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
