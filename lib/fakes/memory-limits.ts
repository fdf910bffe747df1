import {
  type AcquireRequest,
  type Holders,
  type LimitStore,
  liveHolders,
  refill,
  type TakeRequest,
  type TakeResult,
} from '../track/limits';

/** In-memory {@link LimitStore} with the DynamoDB adapter's arithmetic; `writes` counts as DynamoDB would bill. */
export class MemoryLimitStore implements LimitStore {
  private readonly slots = new Map<string, Holders>();
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  writes = 0;

  async acquire(r: AcquireRequest): Promise<number> {
    const live = liveHolders(this.slots.get(r.key) ?? {}, r.now);
    const used = Object.values(live).reduce((a, h) => a + h.n, 0);
    const got = Math.max(0, Math.min(r.want, r.limit - used));
    if (got === 0) return 0;
    live[r.holder] = { n: (live[r.holder]?.n ?? 0) + got, until: Math.max(r.until, live[r.holder]?.until ?? 0) };
    this.slots.set(r.key, live);
    this.writes += 1;
    return got;
  }

  async release(key: string, holder: string, now: number): Promise<void> {
    const live = liveHolders(this.slots.get(key) ?? {}, now);
    if (!live[holder]) return;
    delete live[holder];
    this.slots.set(key, live);
    this.writes += 1;
  }

  async held(key: string, now: number): Promise<number> {
    return Object.values(liveHolders(this.slots.get(key) ?? {}, now)).reduce((a, h) => a + h.n, 0);
  }

  async take(r: TakeRequest): Promise<TakeResult> {
    const bucket = this.buckets.get(r.key) ?? { tokens: r.burst, at: r.now };
    const tokens = refill(bucket.tokens, bucket.at, r.now, r.perSecond, r.burst);
    const granted = Math.max(0, Math.min(r.want, Math.floor(tokens)));
    this.buckets.set(r.key, { tokens: tokens - granted, at: r.now });
    this.writes += 1;
    return { granted, retryAfterMs: granted === r.want ? 0 : Math.ceil(((1 - (tokens - granted)) / r.perSecond) * 1000) };
  }
}
