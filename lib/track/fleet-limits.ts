/**
 * Fleet-wide limits per task and per queue: at most `concurrency` jobs running at once and at most
 * `perSecond` starting a second (a token bucket holding `burst`), across every dispatcher of a
 * version. Kept in DynamoDB with conditional writes (lib/adapters/dynamo-limits.ts), reserved per
 * batch, not per job.
 */
import type { Limits } from '../config/limit-config';

/** Where a limit lives: the key of its item and what it allows. */
export interface LimitKey {
  readonly key: string;
  readonly limits: Limits;
}

export const taskLimitKey = (task: string) => `task:${task}`;
export const queueLimitKey = (queue: string) => `queue:${queue}`;
/** One key value's limit of a task with `limits.per: 'key'` (a job without a key: the empty key, one group). */
export const keyLimitKey = (task: string, key: string | undefined) => `key:${task}:${key ?? ''}`;

/**
 * Concurrency slots and rate tokens in a shared store. A holder is one batch of one dispatcher;
 * its slots lapse at `until` if it never releases them (its process died), so a dead holder shrinks
 * a limit only for the length of its lease.
 */
export interface LimitStore {
  /** Takes up to `want` of `limit` slots of `key` for `holder` until `until`; resolves with how many it got. */
  acquire(request: AcquireRequest): Promise<number>;
  /** Gives back what `holder` holds of `key`; resolves with the key's count of parked jobs ({@link parked}). */
  release(key: string, holder: string, now: number): Promise<number>;
  /**
   * Adds `delta` to the count of jobs parked waiting for a slot of `key` (a per-key limit's line);
   * resolves with the count after it. The count is a hint, never a reservation: it says whether a
   * release should look for parked jobs, and how far back a newly parked job stands.
   */
  parked(key: string, delta: number): Promise<number>;
  /** Sets the parked count of `key` to 0 if it is still `seen` (a release found no parked job to wake). */
  clearParked(key: string, seen: number): Promise<void>;
  /**
   * Makes the caller the key line's watch until `until`, if no watch is set or the last one's time
   * has come: true when it did. One job per key comes back when the slots' holders' leases end —
   * should a holder die, its slots lapse with no release to move the line — rather than every
   * parked job.
   */
  watchLine(key: string, now: number, until: number): Promise<boolean>;
  /** Slots of `key` held at `now` by holders whose lease has not ended (a strongly consistent read). */
  held(key: string, now: number): Promise<number>;
  /** Takes up to `want` tokens; with fewer, says when the next one comes (ms from `now`). */
  take(request: TakeRequest): Promise<TakeResult>;
  /**
   * Puts `want` jobs the bucket had no token for in the key's line, after every job put there before
   * whose turn has not come: per job, ms from `now` until its turn (when its token can be booked).
   * The line is spacing, not a reservation — a job back at its turn takes a token like any other —
   * so a backlog over the rate comes back about once per job, not every second, and a lost job
   * costs the line nothing.
   */
  waitInLine(request: TakeRequest): Promise<number[]>;
}

export interface AcquireRequest {
  readonly key: string;
  readonly limit: number;
  readonly holder: string;
  readonly want: number;
  readonly now: number;
  readonly until: number;
}

export interface TakeRequest {
  readonly key: string;
  readonly perSecond: number;
  readonly burst: number;
  readonly want: number;
  readonly now: number;
  /**
   * How far ahead tokens may be booked, ms: a token earned within this of `now` is granted with its
   * start delayed until it is earned. A batch can then take the whole of a second's tokens in one
   * write rather than the `burst` the bucket holds, and the fleet's rate no longer depends on how
   * often its dispatchers ask. @defaultValue 0
   */
  readonly aheadMs?: number;
}

export interface TakeResult {
  readonly granted: number;
  /** Per granted token, ascending: ms from `now` until it is earned (0 for a token in the bucket). */
  readonly startAfterMs: readonly number[];
  /** With fewer than wanted: ms from `now` until the next token can be taken (booked), else 0. */
  readonly retryAfterMs: number;
}

export function burstOf(limits: Limits): number {
  return limits.burst ?? Math.max(1, Math.ceil(limits.perSecond ?? 1));
}

/**
 * A token bucket kept as counts: tokens `spent` since the bucket's `start`, and the `line`, the last
 * token number promised a turn to a waiting job (never below what can be booked now). By `now` it has earned
 * `burst + (now − start) × perSecond` whole tokens, and the n-th token (n = spent after taking it) is
 * earned at `start + (n − burst) / perSecond`. A bucket idle long enough holds `burst`, no more: its
 * `spent` is never below `earned − burst` (the stores raise it there). Both stores keep this
 * arithmetic, so the fake and DynamoDB grant the same tokens at the same times.
 */
export const bucket = {
  earned: (start: number, r: TakeRequest): number => Math.floor(r.burst + ((r.now - start) * r.perSecond) / 1000),
  /** Tokens that may be booked beyond those earned. */
  ahead: (r: TakeRequest): number => Math.floor(((r.aheadMs ?? 0) * r.perSecond) / 1000),
  /** When the n-th token is earned, ms from `now` (0 if it is). */
  earnedInMs(start: number, n: number, r: TakeRequest): number {
    return Math.max(0, Math.ceil(start + ((n - r.burst) * 1000) / r.perSecond - r.now));
  },
  /** When the n-th token can be booked (`aheadMs` before it is earned), ms from `now`, at least 1. */
  bookableInMs(start: number, n: number, r: TakeRequest): number {
    return Math.max(1, bucket.earnedInMs(start, n, r) - (r.aheadMs ?? 0));
  },
  /** The turns of the jobs that took places `after − want + 1 … after` in the line. */
  turns(start: number, after: number, r: TakeRequest): number[] {
    return Array.from({ length: r.want }, (_, i) => bucket.bookableInMs(start, after - r.want + 1 + i, r));
  },
  /** The result of taking `granted` tokens that bring `spent` to `after`. */
  result(start: number, after: number, granted: number, r: TakeRequest): TakeResult {
    const startAfterMs = Array.from({ length: granted }, (_, i) => bucket.earnedInMs(start, after - granted + 1 + i, r));
    return { granted, startAfterMs, retryAfterMs: granted === r.want ? 0 : bucket.bookableInMs(start, after + 1, r) };
  },
};

/** What a held map looks like in a store: per holder, slots and lease end. */
export type Holders = Readonly<Record<string, { readonly n: number; readonly until: number }>>;

/** The holders still live at `now`, and the slots they hold (`holder`'s own counted apart). */
export function liveHolders(holders: Holders, now: number): Record<string, { n: number; until: number }> {
  return Object.fromEntries(Object.entries(holders).filter(([, h]) => h.until >= now && h.n > 0));
}
