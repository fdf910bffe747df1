/**
 * Waiting for a job's outcome: backoff polling of its one item in the jobs table (a strongly
 * consistent GetItem; no scans, no streams), until it is terminal or the time is up.
 */
import { readClaimCheck } from '../claim-check';
import type { Clock } from '../clock';
import type { SerializedError } from '../errors';
import { ClaimCheckError, ResultTimeoutError } from '../errors';
import { RESULT_PREFIX } from '../layout/payloads';
import type { PayloadStore } from '../ports';
import { attemptsUsed, type JobRecord } from '../track/job-record';
import type { JobReader } from '../track/job-stores';
import type { ArchiveReason } from '../wire/archive-reasons';
import type { PayloadRef } from '../wire/payload-ref';

/** How a job ended, as a caller waiting for it sees it. */
export type JobResult =
  | {
      readonly jobId: string;
      readonly state: 'succeeded';
      /**
       * The task's return value: JSON up to 1 KB from the record; a larger one (up to 10 MiB) from
       * the version's bucket, where the dispatcher kept it. Undefined when there was none, or when
       * it could not be kept (over 10 MiB, no bucket): then `resultBytes` says its size.
       */
      readonly result: unknown;
      /** The size of a return value too large for the record (its JSON, bytes). */
      readonly resultBytes?: number;
      readonly attempts: number;
      readonly finishedAt?: number;
    }
  | {
      readonly jobId: string;
      readonly state: 'archived';
      readonly reason?: ArchiveReason;
      readonly error?: SerializedError;
      readonly attempts: number;
      readonly finishedAt?: number;
    }
  | { readonly jobId: string; readonly state: 'cancelled'; readonly finishedAt?: number };

export interface WaitOptions {
  /** @defaultValue 30 000 */
  readonly timeoutMs?: number;
  /** First pause between reads, doubled up to `maxIntervalMs`. @defaultValue 100 */
  readonly intervalMs?: number;
  /** @defaultValue 2 000 */
  readonly maxIntervalMs?: number;
  readonly signal?: AbortSignal;
  /** Called with each record read; throws to stop waiting (a queue whose outcomes are not recorded). */
  readonly check?: (record: JobRecord) => void;
}

/**
 * Reads a result the dispatcher kept in the version's bucket (`results/` only; one GetObject,
 * its size and SHA-256 checked). Throws what the store throws (no such object, access denied,
 * `@aws-sdk/client-s3` not installed) or `ClaimCheckError`.
 */
export type StoredResultReader = (ref: PayloadRef) => Promise<unknown>;

/** A {@link StoredResultReader} on `store`, which refuses a reference outside `results/`. */
export function storedResultReader(store: () => PayloadStore): StoredResultReader {
  return (ref) => {
    if (!ref.key.startsWith(RESULT_PREFIX))
      return Promise.reject(new ClaimCheckError(ref.bucket, ref.key, `is not a result: results are kept under ${RESULT_PREFIX}`));
    return readClaimCheck(store(), ref);
  };
}

/** The record's result, read from the bucket when the dispatcher kept it there and a reader is given. */
export async function resultWithStored(record: JobRecord, readStored: StoredResultReader | undefined): Promise<JobResult | undefined> {
  const result = resultOf(record);
  if (result?.state !== 'succeeded' || !record.resultRef || !readStored) return result;
  return { ...result, result: await readStored(record.resultRef) };
}

const TERMINAL = new Set(['succeeded', 'archived', 'cancelled']);

/** The record as a {@link JobResult}, when it is terminal. */
export function resultOf(record: JobRecord): JobResult | undefined {
  if (!TERMINAL.has(record.state)) return undefined;
  const ended = record.finishedAt !== undefined ? { finishedAt: record.finishedAt } : {};
  if (record.state === 'cancelled') return { jobId: record.jobId, state: 'cancelled', ...ended };
  if (record.state === 'succeeded') {
    return {
      jobId: record.jobId,
      state: 'succeeded',
      result: record.result === undefined ? undefined : JSON.parse(record.result),
      ...(record.resultBytes !== undefined ? { resultBytes: record.resultBytes } : {}),
      attempts: attemptsUsed(record),
      ...ended,
    };
  }
  return {
    jobId: record.jobId,
    state: 'archived',
    ...(record.reason ? { reason: record.reason } : {}),
    ...(record.lastError ? { error: record.lastError } : {}),
    attempts: attemptsUsed(record),
    ...ended,
  };
}

/**
 * Resolves once the job is terminal; throws {@link ResultTimeoutError} (with the state last seen)
 * when `timeoutMs` passes first. Reads: about log2(timeout / interval) + timeout / maxInterval.
 */
export async function waitForResult(
  jobs: JobReader,
  jobId: string,
  clock: Clock,
  options: WaitOptions = {},
  readStored?: StoredResultReader,
): Promise<JobResult> {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const until = clock.now() + timeoutMs;
  let pause = options.intervalMs ?? 100;
  const maxPause = options.maxIntervalMs ?? 2_000;
  let last: JobRecord | undefined;
  for (;;) {
    options.signal?.throwIfAborted();
    last = await jobs.get(jobId);
    if (last) options.check?.(last);
    const result = last ? await resultWithStored(last, readStored) : undefined;
    if (result) return result;
    const left = until - clock.now();
    if (left <= 0) {
      throw new ResultTimeoutError(
        jobId,
        timeoutMs,
        last?.state,
        last ? '' : " (an unknown id, a job not yet claimed, or one on a queue not tracked 'full')",
      );
    }
    await clock.sleep(Math.min(pause, left), options.signal);
    pause = Math.min(maxPause, pause * 2);
  }
}
