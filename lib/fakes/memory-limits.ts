import {
  type AcquireRequest,
  bucket,
  type Holders,
  type LimitStore,
  liveHolders,
  type TakeRequest,
  type TakeResult,
} from '../track/fleet-limits';

/** In-memory {@link LimitStore} with the DynamoDB adapter's arithmetic; `writes` counts as DynamoDB would bill. */
export class MemoryLimitStore implements LimitStore {
  private readonly slots = new Map<string, Holders>();
  private readonly buckets = new Map<string, { start: number; spent: number; line: number }>();
  private readonly parkedCounts = new Map<string, number>();
  private readonly watches = new Map<string, number>();
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

  async release(key: string, holder: string, now: number): Promise<number> {
    const live = liveHolders(this.slots.get(key) ?? {}, now);
    if (!live[holder]) return this.parkedCounts.get(key) ?? 0;
    delete live[holder];
    this.slots.set(key, live);
    this.writes += 1;
    return this.parkedCounts.get(key) ?? 0;
  }

  async parked(key: string, delta: number): Promise<number> {
    const n = Math.max(0, (this.parkedCounts.get(key) ?? 0) + delta);
    this.parkedCounts.set(key, n);
    this.writes += 1;
    return n;
  }

  async watchLine(key: string, now: number, until: number): Promise<boolean> {
    this.writes += 1;
    if ((this.watches.get(key) ?? 0) > now) return false;
    this.watches.set(key, until);
    return true;
  }

  async clearParked(key: string, seen: number): Promise<void> {
    if ((this.parkedCounts.get(key) ?? 0) === seen) this.parkedCounts.set(key, 0);
    this.writes += 1;
  }

  async held(key: string, now: number): Promise<number> {
    return Object.values(liveHolders(this.slots.get(key) ?? {}, now)).reduce((a, h) => a + h.n, 0);
  }

  async take(r: TakeRequest): Promise<TakeResult> {
    const { start, spent: before, line } = this.buckets.get(r.key) ?? { start: r.now, spent: 0, line: 0 };
    const earned = bucket.earned(start, r);
    const spent = Math.max(before, earned - r.burst);
    const granted = Math.max(0, Math.min(r.want, earned + bucket.ahead(r) - spent));
    this.buckets.set(r.key, { start, spent: spent + granted, line });
    this.writes += 1;
    return bucket.result(start, spent + granted, granted, r);
  }

  async waitInLine(r: TakeRequest): Promise<number[]> {
    const known = this.buckets.get(r.key) ?? { start: r.now, spent: 0, line: 0 };
    const after = Math.max(known.line, bucket.earned(known.start, r) + bucket.ahead(r)) + r.want;
    this.buckets.set(r.key, { ...known, line: after });
    this.writes += 1;
    return bucket.turns(known.start, after, r);
  }
}
