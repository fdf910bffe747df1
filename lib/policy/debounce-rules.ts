/**
 * The `debounce` rule's decisions, with no I/O: when a key's cycle is due, what a message of a
 * debounced task's keyed job does when it arrives, and how large a body a cycle keeps.
 * lib/settle/debounce-cycles.ts asks the jobs table and acts on them.
 */
import type { DebounceCycle } from '../track/job-record';

/**
 * How long past its `maxDueAt` an open cycle counts as abandoned: its publisher opened it and was
 * lost before sending its job's message (or that message is this late). The next publish of the key
 * then opens a fresh cycle over it rather than join a job that may never come.
 */
export const DEBOUNCE_ABANDONED_MS = 60 * 60_000;

/**
 * The largest envelope a cycle keeps (a DynamoDB item holds 400 KB, with room for its other
 * attributes). A payload over the config's `payloads.offloadAboveBytes` is kept as its claim check's
 * pointer, so only a threshold raised above this meets it.
 */
export const MAX_DEBOUNCED_BODY_BYTES = 350_000;

/** When the cycle's job runs: `period` after the last publish, or `maxWait` after the first, whichever is sooner. */
export function cycleDueAt(cycle: Pick<DebounceCycle, 'dueAt' | 'maxDueAt'>): number {
  return Math.min(cycle.dueAt, cycle.maxDueAt);
}

/**
 * What a keyed job's message does on arrival:
 * - `wait` until `dueAt`: it is its key's pending job and a later publish put the run off;
 * - `close` the cycle and run: it is the pending job, and due;
 * - `run` with the body kept for it: its cycle was closed (by another delivery of it, or by a
 *   dispatcher lost before it ran the job);
 * - `publish`: it is no cycle's job — a message sent from another SDK — and counts as a publish of
 *   its key at its arrival, opening a cycle with it or joining the open one.
 */
export type Arrival =
  | { readonly kind: 'wait'; readonly dueAt: number }
  | { readonly kind: 'close'; readonly cycle: DebounceCycle }
  | { readonly kind: 'run'; readonly body: string }
  | { readonly kind: 'publish' };

export function arrivalOf(jobId: string, cycle: DebounceCycle | undefined, kept: string | undefined, now: number): Arrival {
  if (cycle?.pending === jobId) {
    const dueAt = cycleDueAt(cycle);
    return dueAt > now ? { kind: 'wait', dueAt } : { kind: 'close', cycle };
  }
  return kept !== undefined ? { kind: 'run', body: kept } : { kind: 'publish' };
}

/** Whole seconds from `now` to `at`, at least 1: SQS delays and visibilities count in seconds. */
export function secondsUntil(at: number, now: number): number {
  return Math.max(1, Math.ceil((at - now) / 1000));
}
