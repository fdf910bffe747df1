/**
 * Time arithmetic for jobs that run later: what a publisher sends, what a dispatcher does with a
 * message whose `runAt` is ahead, and the delay a sweep gives a parked job. Pure: the caller passes
 * `now`, so tests drive it with any clock.
 */
import { PublishOptionError } from '../errors';
import { MAX_QUEUE_DELAY_SECONDS } from '../layout/sqs-limits';
import { DUE_SLACK_MS, shardOf } from './job-rules';

export { DUE_SLACK_MS } from './job-rules';

const MAX_QUEUE_DELAY_MS = MAX_QUEUE_DELAY_SECONDS * 1000;
/** The farthest ahead a publisher may schedule: a year, leap day included. */
export const MAX_SCHEDULE_SECONDS = 366 * 86_400;
/** Parked jobs are spread over this many index partitions, so a million due at midnight are swept in parallel without one hot key. */
export const DUE_SHARDS = 4;
/** The largest body parked in the jobs table (a DynamoDB item holds 400 KB); larger ones wait in their queue 15 minutes at a time. */
export const MAX_PARKED_BODY_BYTES = 350_000;
/** How long a sweep holds a parked job it is sending before another sweep may send it. */
export const SWEEP_LEASE_MS = 60_000;

/** What a publisher sends for `{ delaySeconds }` or `{ runAt }`: SQS's delay, and the envelope's `runAt`. */
export interface PublishTiming {
  readonly delaySeconds?: number;
  readonly runAt?: number;
  /** After this (epoch ms) the job must not start: it is archived `expired`. */
  readonly expiresAt?: number;
}

/**
 * Up to 900 s a delay is SQS's `DelaySeconds` (as before); beyond, the envelope carries `runAt` and
 * the dispatcher parks the job. A `runAt` date is carried as it is (the job's record shows it), with
 * SQS's delay covering it when it is 15 minutes away or nearer.
 */
export function publishTiming(
  now: number,
  options: { readonly delaySeconds?: number; readonly runAt?: Date; readonly expiresAt?: Date },
): PublishTiming {
  const timing = startTiming(now, options);
  if (options.expiresAt === undefined) return timing;
  const { expiresAt } = options;
  const at = expiresAt instanceof Date ? expiresAt.getTime() : Number.NaN;
  if (!Number.isFinite(at)) throw new PublishOptionError('expiresAt', expiresAt, 'a valid Date');
  // The earliest the job may start: it must be able to start before it expires.
  const due = Math.max(now, timing.runAt ?? now + (timing.delaySeconds ?? 0) * 1000);
  if (at <= due) {
    const what = due > now ? `its start, ${new Date(due).toISOString()}` : 'now';
    throw new PublishOptionError('expiresAt', expiresAt, `a time after ${what} (the job could never start)`);
  }
  if (at - due > MAX_SCHEDULE_SECONDS * 1000) {
    throw new PublishOptionError('expiresAt', expiresAt, `a time at most ${MAX_SCHEDULE_SECONDS / 86_400} days after the job may start`);
  }
  return { ...timing, expiresAt: at };
}

function startTiming(now: number, options: { readonly delaySeconds?: number; readonly runAt?: Date }): PublishTiming {
  const { delaySeconds, runAt } = options;
  if (delaySeconds !== undefined && runAt !== undefined) {
    throw new PublishOptionError('runAt', runAt, 'either delaySeconds or runAt, not both');
  }
  if (runAt !== undefined) {
    const at = runAt instanceof Date ? runAt.getTime() : Number.NaN;
    if (!Number.isFinite(at)) throw new PublishOptionError('runAt', runAt, 'a valid Date');
    if (at - now > MAX_SCHEDULE_SECONDS * 1000) {
      throw new PublishOptionError('runAt', runAt, `a time at most ${MAX_SCHEDULE_SECONDS / 86_400} days ahead`);
    }
    const ahead = at - now;
    if (ahead <= 0) return { runAt: at };
    return ahead <= MAX_QUEUE_DELAY_MS ? { runAt: at, delaySeconds: Math.ceil(ahead / 1000) } : { runAt: at };
  }
  const delay = delaySeconds ?? 0;
  if (!Number.isInteger(delay) || delay < 0 || delay > MAX_SCHEDULE_SECONDS) {
    throw new PublishOptionError('delaySeconds', delay, `an integer 0..${MAX_SCHEDULE_SECONDS} (a year)`);
  }
  if (delay === 0) return {};
  return delay <= MAX_QUEUE_DELAY_SECONDS ? { delaySeconds: delay } : { runAt: now + delay * 1000 };
}

/**
 * What a dispatcher does with a message that carries `runAt`: run it (due), send a copy delayed by
 * the remaining seconds (15 minutes or nearer), or park it in the jobs table (farther).
 */
export type ArrivalTiming = { readonly kind: 'due' } | { readonly kind: 'delay'; readonly seconds: number } | { readonly kind: 'park' };

export function arrivalTiming(runAt: number | undefined, now: number): ArrivalTiming {
  if (runAt === undefined || runAt <= now + DUE_SLACK_MS) return { kind: 'due' };
  const ahead = runAt - now;
  return ahead <= MAX_QUEUE_DELAY_MS ? { kind: 'delay', seconds: Math.ceil(ahead / 1000) } : { kind: 'park' };
}

/** Whether a parked job is due for the sweep at `now`: it starts within the longest delay SQS can give it. */
export function sweepHorizon(now: number): number {
  return now + MAX_QUEUE_DELAY_MS;
}

/** The `DelaySeconds` a swept job is sent with, so it becomes visible at its `runAt`, not before. */
export function sweepDelaySeconds(runAt: number, now: number): number {
  return Math.min(MAX_QUEUE_DELAY_SECONDS, Math.max(0, Math.ceil((runAt - now) / 1000)));
}

/** The index partition a parked job goes to: stable for the id, even over the shards. */
export function dueShardOf(jobId: string, shards = DUE_SHARDS): string {
  return String(shardOf(jobId, shards));
}
