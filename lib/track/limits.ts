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

/**
 * Concurrency slots and rate tokens in a shared store. A holder is one batch of one dispatcher;
 * its slots lapse at `until` if it never releases them (its process died), so a dead holder shrinks
 * a limit only for the length of its lease.
 */
export interface LimitStore {
  /** Takes up to `want` of `limit` slots of `key` for `holder` until `until`; resolves with how many it got. */
  acquire(request: AcquireRequest): Promise<number>;
  /** Gives back what `holder` holds of `key`. */
  release(key: string, holder: string, now: number): Promise<void>;
  /** Slots of `key` held at `now` by holders whose lease has not ended (a strongly consistent read). */
  held(key: string, now: number): Promise<number>;
  /** Takes up to `want` tokens; with fewer, says when the next one comes (ms from `now`). */
  take(request: TakeRequest): Promise<TakeResult>;
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
}

export interface TakeResult {
  readonly granted: number;
  readonly retryAfterMs: number;
}

export function burstOf(limits: Limits): number {
  return limits.burst ?? Math.max(1, Math.ceil(limits.perSecond ?? 1));
}

/** A bucket's tokens at `now`, refilled since `at` (epoch ms). */
export function refill(tokens: number, at: number, now: number, perSecond: number, burst: number): number {
  return Math.min(burst, tokens + (Math.max(0, now - at) * perSecond) / 1000);
}

/** What a held map looks like in a store: per holder, slots and lease end. */
export type Holders = Readonly<Record<string, { readonly n: number; readonly until: number }>>;

/** The holders still live at `now`, and the slots they hold (`holder`'s own counted apart). */
export function liveHolders(holders: Holders, now: number): Record<string, { n: number; until: number }> {
  return Object.fromEntries(Object.entries(holders).filter(([, h]) => h.until >= now && h.n > 0));
}
