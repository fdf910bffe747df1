import { createHash } from 'node:crypto';
import { stringify } from 'safe-stable-stringify';
import { type QueueConfig, SUCCEEDED_INDEX_SHARDS } from '../config/app-config';
import {
  type Completion,
  type HistoryEntry,
  type JobIdentity,
  type JobRecord,
  type JobState,
  STEP_PARKED_STATES,
} from '../track/job-record';
import type { PayloadRef } from '../wire/payload-ref';

/** Settings both job stores apply identically. */
export interface JobStoreSettings {
  /** Most recent transitions kept per job. */
  readonly historyLimit: number;
  /** Days a record lives after its last write (DynamoDB TTL). */
  readonly retentionDays: number;
  /** Queues whose succeeded jobs carry the state index key (`listSucceeded`); none when absent. */
  readonly listSucceeded?: readonly string[];
}

/** The queues of a config whose succeeded jobs are listed from the index. */
export function listedSucceeded(queues: readonly Pick<QueueConfig, 'name' | 'listSucceeded'>[]): string[] {
  return queues.filter((q) => q.listSucceeded).map((q) => q.name);
}

/** States operators list by queue; only these carry the sparse index key, so success writes no index entry. */
export const INDEXED_STATES: readonly JobState[] = [
  'retrying',
  'archived',
  'scheduled',
  'cancelled',
  'waiting',
  'deduplicated',
  'sleeping',
  'waiting-token',
  'waiting-event',
  'waiting-key',
];

export { TERMINAL_STATES } from '../track/job-record';

export function indexKey(queue: string, state: JobState): string | undefined {
  return INDEXED_STATES.includes(state) ? `${queue}#${state}` : undefined;
}

/** Which of `shards` index partitions an item of `id` goes to: stable for the id, even over the shards. */
export function shardOf(id: string, shards: number): number {
  return createHash('sha256').update(id).digest().readUInt32BE(0) % shards;
}

/**
 * The index keys a queue's succeeded jobs spread over (`listSucceeded`): a success is by far the
 * commonest write, and one key takes at most DynamoDB's 1,000 writes a second.
 */
export function succeededIndexKeys(queue: string): string[] {
  return Array.from({ length: SUCCEEDED_INDEX_SHARDS }, (_, shard) => `${queue}#succeeded#${shard}`);
}

/** The index key a job's record carries in `state`: {@link indexKey}'s, and a listed queue's success's. */
export function stateIndexKey(settings: JobStoreSettings, queue: string, state: JobState, jobId: string): string | undefined {
  if (state !== 'succeeded') return indexKey(queue, state);
  if (!settings.listSucceeded?.includes(queue)) return undefined;
  return succeededIndexKeys(queue)[shardOf(jobId, SUCCEEDED_INDEX_SHARDS)];
}

/** Whether jobs in `state` of every one of `queues` are listed from the index (newest first), not found by a scan. */
export function listedFromIndex(listSucceeded: readonly string[] | undefined, state: JobState, queues: readonly string[]): boolean {
  if (state === 'succeeded') return queues.length > 0 && queues.every((queue) => listSucceeded?.includes(queue));
  return INDEXED_STATES.includes(state);
}

/**
 * The jobs table's item that holds a task's key under its `unique` rule. No job id has a space, so no
 * job (nor another item kept beside the jobs: `<id> tag <tag>`, `<id> w<n>`, `<id> rejected`) takes it.
 */
export function uniqueItemKey(task: string, key: string): string {
  return `${task} unique ${key}`;
}

/** The jobs-table item of an `ordered` task's key: its counter and its `next` (lib/track/job-stores.ts `OrderStore`). */
export function orderItemKey(task: string, key: string): string {
  return `${task} order ${key}`;
}

/** The jobs table's item of a schedule's ticks (ScheduleTicks, lib/track/job-record.ts); no job id has a space. */
export function scheduleItemKey(schedule: string): string {
  return `~ schedule ${schedule}`;
}

/**
 * The jobs table's item of a key's open debounce cycle (`debounce` rule). Like the unique hold's, no
 * job id has a space, so no job takes that key.
 */
export function debounceItemKey(task: string, key: string): string {
  return `${task} debounce ${key}`;
}

/** The jobs table's item holding the body a closed debounce cycle's job runs with (two words, never a cycle's three). */
export function debouncedBodyKey(jobId: string): string {
  return `${jobId} debounced`;
}

/** The TTL attribute value (epoch seconds) for a write at `now`. */
export function expiresAt(now: number, retentionDays: number): number {
  return Math.floor(now / 1000) + retentionDays * 86_400;
}

/** The history after appending `entry`, trimmed to the newest `limit` entries. */
export function appendHistory(history: readonly HistoryEntry[], entry: HistoryEntry, limit: number): HistoryEntry[] {
  const next = [...history, entry];
  return next.length > limit ? next.slice(next.length - limit) : next;
}

/** A job record's state before a write: one of the states, or no record yet. */
export type PriorState = JobState | 'absent';

/**
 * Every write to a job record: the states it may find, and whether the record must already be
 * the same job (task and payload digest, see {@link sameJob}) for it to land. A write that finds
 * anything else changes nothing. Both job stores follow this table (the in-memory one reads it,
 * the DynamoDB one turns it into condition expressions) and the conformance suite exercises every
 * row on both. Token-guarded writes (heartbeat, complete) need the claim's attempt number as well;
 * a take-over needs a lapsed lease.
 */
export const TRANSITIONS = {
  /** The publisher's `queued` record. */
  queue: { from: ['absent'], sameJob: false },
  /**
   * The publisher's `scheduled` record of a job published to run later (`announced`): its message is
   * in SQS, delayed up to 15 minutes or waiting for a dispatcher to park it. No `dueShard`: a sweep
   * never sees it (it has no body to send), until a dispatcher parks it with its body.
   */
  schedule: { from: ['absent'], sameJob: false },
  /**
   * A dispatcher starts an attempt; a parked `scheduled` job only once due (see {@link isDue}), an
   * `announced` one whenever its message arrives (SQS held it until then).
   */
  claim: {
    from: ['absent', 'queued', 'retrying', 'scheduled', 'sleeping', 'waiting-token', 'waiting-event', 'waiting-key'],
    sameJob: true,
  },
  /** A dispatcher starts an attempt whose previous holder's lease lapsed. */
  takeOver: { from: ['running'], sameJob: true },
  /** Also refused once a cancel was asked (`cancelRequestedAt`): the attempt no longer holds the job. */
  heartbeat: { from: ['running'], sameJob: false },
  /** The claim's holder ends its attempt: succeeded, retrying or archived. */
  complete: { from: ['running'], sameJob: false },
  /** Tracking `failures`: a failed attempt (nothing claimed it). */
  unclaimedFailure: { from: ['absent', 'queued', 'retrying'], sameJob: true },
  /** Tracking `failures`: a success after failures ends the `retrying` record. */
  unclaimedSuccess: { from: ['retrying'], sameJob: true },
  /** A job whose task and key another live job holds (a `unique` task), or that joined its key's debounce burst: it joins that one and never runs. */
  deduplicate: { from: ['absent'], sameJob: false },
  /** A message that never ran, under its own message id. */
  reject: { from: ['absent'], sameJob: false },
  duplicate: {
    from: ['succeeded', 'archived', 'cancelled', 'scheduled', 'deduplicated', 'sleeping', 'waiting-token', 'waiting-event', 'waiting-key'],
    sameJob: true,
  },
  replay: { from: ['archived'], sameJob: true },
  /**
   * A dispatcher keeps a job whose runAt is more than 15 minutes ahead (over the publisher's `announced`
   * record, not a parked one), or a job over its key's limit (`waiting-key`, in its key's line).
   */
  park: { from: ['absent', 'queued', 'scheduled'], sameJob: true },
  /** A sweep takes a parked job to send it (when no other sweep's lease is live). */
  sweep: { from: ['scheduled', 'sleeping', 'waiting-token', 'waiting-event', 'waiting-key'], sameJob: false },
  /** The sweep sent it: it is a queued job again. */
  handOver: { from: ['scheduled', 'sleeping', 'waiting-token', 'waiting-event', 'waiting-key'], sameJob: false },
  /**
   * The attempt's holder ends it parked at a step (a sleep, a token wait, a continuation), fenced by
   * its token like a completion; also refused once a cancel was asked.
   */
  parkAttempt: { from: ['running'], sameJob: false },
  /**
   * The attempt's holder gives its claim back before the body started (its message goes back to
   * SQS at once): `queued` again, fenced by its token, with no attempt used; the next claim need not
   * wait out the lease. Also after a cancel was asked: that claim ends the job `cancelled`.
   */
  handBack: { from: ['running'], sameJob: false },
  /** A token's completion resumes the job waiting for it (the token it names, not an earlier wait's). */
  /**
   * (Also a running job whose attempt kept the wait's step but has not parked on it yet: the value is
   * kept, and the park, finding it, continues at once. Never a wait the job parked on and left.)
   */
  completeToken: { from: ['waiting-token', 'waiting-event', 'running'], sameJob: false },
  /**
   * An operator cancels a job that has not started (or is between attempts): a queued or retrying
   * job's message is deleted when a dispatcher next receives it, its claim finding the job ended.
   */
  cancel: {
    from: ['scheduled', 'waiting', 'queued', 'retrying', 'sleeping', 'waiting-token', 'waiting-event', 'waiting-key'],
    sameJob: false,
  },
  /**
   * An operator runs a parked job now: its `runAt` and body (the same envelope, due now) rewritten
   * while it is parked as read (not announced, no sweep holding it), for the sweep's path to send.
   */
  bringForward: { from: ['scheduled', 'sleeping', 'waiting-token', 'waiting-event', 'waiting-key'], sameJob: false },
  /** An operator asks a running job to stop: its heartbeats are refused from then on, and it ends `cancelled`. */
  requestCancel: { from: ['running'], sameJob: false },
  /**
   * A dispatcher keeps a job whose dependencies have not all ended: a new one, or one replayed from
   * the archive (`queued`, never released; a released one's copy runs).
   */
  wait: { from: ['absent', 'queued'], sameJob: true },
  /**
   * Any recorded job takes a dependent: one that has not ended counts it when it ends; one that has
   * is counted at once by the dependent (the edge kept all the same, for `jobs show` and a replay).
   */
  addDependent: {
    from: [
      'queued',
      'running',
      'retrying',
      'scheduled',
      'waiting',
      'succeeded',
      'archived',
      'cancelled',
      'sleeping',
      'waiting-token',
      'waiting-event',
      'waiting-key',
    ],
    sameJob: false,
  },
  /** Its last dependency counted: it becomes a parked job due now, sent by the sweep's path. */
  release: { from: ['waiting'], sameJob: false },
  /** A dependency failed (policy `fail`), is unknown, or closes a cycle. */
  failWaiting: { from: ['waiting'], sameJob: false },
  /** The dependency that failed it was replayed: it waits again (only an `archived` job whose reason is `dependency-failed`). */
  reopen: { from: ['archived'], sameJob: false },
} as const satisfies Record<string, { readonly from: readonly PriorState[]; readonly sameJob: boolean }>;

export type JobWrite = keyof typeof TRANSITIONS;

/**
 * Whether `write` may land on `record`: `ok`, `state` (not from this state) or `conflict` (another
 * job). A claim of a `scheduled` job needs `now` and lands only once the job is due.
 */
export function permits(write: JobWrite, record: JobRecord | undefined, identity?: JobIdentity, now?: number): 'ok' | 'state' | 'conflict' {
  const rule = TRANSITIONS[write];
  if (record && rule.sameJob && identity && !sameJob(record, identity)) return 'conflict';
  if (write === 'claim' && record && isParked(record) && (now === undefined || !isDue(record, now))) return 'state';
  if (write === 'park' && record?.state === 'scheduled' && !record.announced) return 'state';
  if ((write === 'sweep' || write === 'bringForward') && record?.announced) return 'state';
  if (write === 'wait' && record?.state === 'queued' && record.releasedAt !== undefined) return 'state';
  if (write === 'reopen' && record?.reason !== 'dependency-failed') return 'state';
  return (rule.from as readonly PriorState[]).includes(record?.state ?? 'absent') ? 'ok' : 'state';
}

/**
 * A job whose `runAt` is at most this far ahead counts as due: SQS delays in whole seconds and
 * the publisher's and dispatcher's clocks differ a little.
 */
export const DUE_SLACK_MS = 1_000;

/** The states a job is parked in, due at its `runAt`: scheduled, parked at a step, and in its key's line. */
export const DUE_GATED_STATES: readonly JobState[] = ['scheduled', ...STEP_PARKED_STATES, 'waiting-key'];

/**
 * The parked states the sweep sends only once due, not up to 15 minutes ahead as it sends the others:
 * until its timeout a completion (a token's, an event's, its key's free slot) may still resume the
 * job, and a job handed to its queue ahead of time could not be.
 */
export const TIMED_OUT_ONLY: readonly JobState[] = ['waiting-token', 'waiting-event', 'waiting-key'];

/** Whether a record is parked in the jobs table until its `runAt` (not an announced one: SQS holds its message). */
export function isParked(record: Pick<JobRecord, 'state' | 'announced'> | undefined): boolean {
  return record !== undefined && DUE_GATED_STATES.includes(record.state) && !record.announced;
}

/** Whether a parked job may start at `now` (its swept copy may arrive before the sweep marks it handed over). */
export function isDue(record: Pick<JobRecord, 'runAt'>, now: number): boolean {
  return (record.runAt ?? 0) <= now + DUE_SLACK_MS;
}

/** Whether a record is the job a delivery names: same task, same payload. */
export function sameJob(record: Pick<JobRecord, 'task' | 'payloadDigest'>, identity: JobIdentity): boolean {
  return record.task === identity.task && record.payloadDigest === identity.payloadDigest;
}

/**
 * The digest that stands for a payload in a job's identity: SHA-256 of its JSON with object keys
 * sorted (so two publishers that order keys differently send the same payload), 128 bits in
 * base64url. Computed from the decoded payload, so the publisher and the dispatcher agree.
 */
/**
 * The digest that, with its task, names a job: of its payload, or of its claim check (the reference
 * as published, never the object: a dispatcher parks, waits or files a job without reading it).
 */
export function jobPayloadDigest(job: { readonly payload?: unknown; readonly payloadRef?: PayloadRef | undefined }): string {
  return job.payloadRef ? payloadDigest({ payloadRef: job.payloadRef }) : payloadDigest(job.payload);
}

export function payloadDigest(payload: unknown): string {
  return createHash('sha256')
    .update(stringify(payload ?? null) ?? 'null')
    .digest('base64url')
    .slice(0, 22);
}

/**
 * Whether a cancel would not stop the job: a queued or retrying job of a queue whose dispatchers do
 * not claim (tracking other than `full`) runs when its message comes whatever its record says.
 */
export function cancelCannotStop(
  record: Pick<JobRecord, 'state' | 'queue'>,
  queues: readonly Pick<QueueConfig, 'name' | 'tracking'>[],
): boolean {
  if (record.state !== 'queued' && record.state !== 'retrying') return false;
  return queues.find((q) => q.name === record.queue)?.tracking !== 'full';
}

/** Whether a claim at `now` may take the job: new, queued, retrying, due, or running on a lapsed lease. */
export function claimable(record: JobRecord | undefined, now: number): boolean {
  if (permits('claim', record, undefined, now) === 'ok') return true;
  return permits('takeOver', record) === 'ok' && (record?.leaseUntil ?? 0) < now;
}

/** Results larger than this are not kept on the job record. */
export const MAX_RESULT_BYTES = 1024;

/** The history entry a completion adds. */
export function historyOf(c: Completion): HistoryEntry {
  const detail =
    c.state === 'archived'
      ? c.reason
      : c.state === 'cancelled'
        ? 'stopped on request'
        : c.state === 'retrying' && c.retryAt !== undefined
          ? c.rateLimited !== undefined
            ? `${c.rateLimited} paused until ${new Date(c.retryAt).toISOString()}`
            : `${c.retryAfter ? 'asked to run again' : 'next attempt'} after ${new Date(c.retryAt).toISOString()}`
          : undefined;
  const what = c.state === 'retrying' && c.retryAfter ? (c.rateLimited !== undefined ? 'rate-limited' : 'retry-after') : c.state;
  return { what, when: c.now, worker: c.workerId, attempt: c.token, ...(detail ? { detail } : {}) };
}
