/**
 * Fleet-wide limits per task and per queue: at most `concurrency` jobs running at once and at most
 * `perSecond` starting a second (a token bucket holding `burst`), across every dispatcher of a
 * version. Kept in DynamoDB with conditional writes (lib/adapters/dynamo-limits.ts), reserved per
 * batch, not per job.
 */
import { ConfigError, TaskDefinitionError } from '../errors';

export interface Limits {
  /** Jobs running at once, fleet-wide (1..100000). */
  readonly concurrency?: number;
  /** Jobs started per second, fleet-wide (> 0). */
  readonly perSecond?: number;
  /** Starts a bucket holds when idle. @defaultValue max(1, ceil(perSecond)) */
  readonly burst?: number;
}

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

/** Validates `limits` (a task's or a queue's), naming the field; undefined when absent or empty. */
export function resolveLimits(value: unknown, field: string, owner?: string): Limits | undefined {
  if (value === undefined) return undefined;
  const fail = (f: string, v: unknown, expected: string): never => {
    throw owner ? new TaskDefinitionError(owner, f, v, expected) : new ConfigError(f, v, expected);
  };
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return fail(field, value, '{ concurrency?, perSecond?, burst? }');
  const l = value as Record<string, unknown>;
  const out: { concurrency?: number; perSecond?: number; burst?: number } = {};
  if (l.concurrency !== undefined) {
    if (!Number.isInteger(l.concurrency) || (l.concurrency as number) < 1 || (l.concurrency as number) > 100_000) {
      fail(`${field}.concurrency`, l.concurrency, 'an integer 1..100000');
    }
    out.concurrency = l.concurrency as number;
  }
  if (l.perSecond !== undefined) {
    if (typeof l.perSecond !== 'number' || !(l.perSecond > 0) || l.perSecond > 100_000)
      fail(`${field}.perSecond`, l.perSecond, 'a number in (0, 100000]');
    out.perSecond = l.perSecond as number;
  }
  if (l.burst !== undefined) {
    if (out.perSecond === undefined) fail(`${field}.burst`, l.burst, 'no burst without perSecond');
    if (!Number.isInteger(l.burst) || (l.burst as number) < 1 || (l.burst as number) > 100_000)
      fail(`${field}.burst`, l.burst, 'an integer 1..100000');
    out.burst = l.burst as number;
  }
  return Object.keys(out).length > 0 ? out : undefined;
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
