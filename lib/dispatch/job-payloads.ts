import { claimCheckRef, putClaimCheck, readClaimCheck } from '../claim-check';
import type { QueueConfig } from '../config/app-config';
import { ClaimCheckError, describe, PayloadMissingError } from '../errors';
import { EVENT_PAYLOAD_PREFIX, isOwnPayloadKey, PAYLOAD_PREFIX, resultKey } from '../layout/payloads';
import { TERMINAL_STATES } from '../policy/job-rules';
import type { TaskOutcome } from '../run/executor-types';
import { decideArchive, decideHandBack } from '../settle/decisions';
import type { BatchState } from '../settle/settle';
import type { DependencyOutcome } from '../tasks/task';
import type { PayloadRef } from '../wire/payload-ref';
import { CLAIM_RETRY_SECONDS } from './claim';
import type { StoredDependencyOutcome } from './dependency-outcomes';
import type { DispatcherDeps, Planned } from './dispatcher-deps';

/**
 * Reads the claim-checked payloads of the jobs about to run, all at once (one GetObject each), so
 * the task sees its payload. A reference already passed the bucket and prefix check in the plan;
 * here an object that is missing, of another size or SHA-256, or not JSON is archived
 * (`bad-payload-ref`, a rejection: it never ran); one that could not be read (S3 throttled or
 * unreachable) is handed back to come again, no attempt used. A missing object of a job that has
 * already ended (its object deleted then) is that job's duplicate delivery and is deleted unrun.
 * Returns the jobs that run, in message order, each with its payload.
 */
export async function resolvePayloads(
  deps: DispatcherDeps,
  queue: QueueConfig,
  planned: readonly Planned[],
  state: BatchState,
): Promise<Planned[]> {
  const store = deps.payloads?.store;
  if (!store || !planned.some((p) => p.job.payloadRef)) return [...planned];
  const resolved = await Promise.all(
    planned.map(async (p): Promise<Planned | undefined> => {
      const ref = p.job.payloadRef;
      if (!ref) return p;
      const reject = (detail: string) =>
        decideArchive(deps, queue, state, p.message, p.job, 'bad-payload-ref', {
          type: 'PayloadRefError',
          code: 'bad-payload-ref',
          message: detail,
        });
      let payload: unknown;
      try {
        payload = await readClaimCheck(store, ref);
      } catch (error) {
        if (error instanceof ClaimCheckError) {
          reject(`payloadRef: ${error.message}`);
          return undefined;
        }
        if (!(error instanceof PayloadMissingError)) {
          deps.logger.warn('payload could not be read; the message will come back', {
            jobId: p.job.id,
            key: ref.key,
            error: describe(error),
          });
          decideHandBack(
            deps,
            { queue, mode: 'full', state, message: p.message, job: p.job },
            { kind: 'visibility', seconds: CLAIM_RETRY_SECONDS },
            { messageId: p.message.messageId, jobId: p.job.id, task: p.def.name, outcome: 'deferred', attempt: 0 },
          );
          return undefined;
        }
        if (await endedAlready(deps, queue, p)) {
          state.decide(
            { kind: 'delete', message: p.message },
            { messageId: p.message.messageId, jobId: p.job.id, task: p.def.name, outcome: 'duplicate', attempt: 0 },
          );
          return undefined;
        }
        reject(`payloadRef names s3://${ref.bucket}/${ref.key}, which is not there`);
        return undefined;
      }
      return { ...p, job: { ...p.job, payload } };
    }),
  );
  return resolved.filter((p): p is Planned => p !== undefined);
}

/**
 * Deletes the objects of jobs that have ended for good in this batch: succeeded or cancelled, their
 * outcome settled and recorded, each its own object only (an event's, which its other subscribers
 * read, or another job's that a pointer named, is left). An archived job's object is kept, so
 * replaying it within the retention finds its payload; the bucket's lifecycle expires it (and any a
 * failed delete left) after the job retention days. DeleteObject costs no request charge. Never throws.
 */
export async function dropPayloads(deps: DispatcherDeps, ran: readonly Planned[], state: BatchState): Promise<void> {
  const store = deps.payloads?.store;
  if (!store) return;
  const ended = ran.filter((p) => {
    const report = state.reports.get(p.message.messageId);
    return (
      p.job.payloadRef !== undefined &&
      isOwnPayloadKey(p.job.id, p.job.payloadRef.key) &&
      report !== undefined &&
      (report.outcome === 'succeeded' || report.outcome === 'cancelled') &&
      !report.unsettled &&
      !report.unrecorded
    );
  });
  await Promise.all(
    ended.map(async (p) => {
      const ref = p.job.payloadRef as PayloadRef;
      try {
        await store.delete(ref.bucket, ref.key);
      } catch (error) {
        deps.logger.warn('payload object not deleted; the bucket lifecycle expires it', {
          jobId: p.job.id,
          key: ref.key,
          error: describe(error),
        });
      }
    }),
  );
}

/** Whether the job's record says it has ended (queues tracked `full`; one read, only for a missing object). */
async function endedAlready(deps: DispatcherDeps, queue: QueueConfig, p: Planned): Promise<boolean> {
  const jobs = deps.tracking?.jobs;
  if (!jobs || queue.tracking !== 'full') return false;
  try {
    const record = await jobs.get(p.job.id);
    return record !== undefined && record.task === p.job.task && TERMINAL_STATES.includes(record.state);
  } catch {
    return false;
  }
}

/**
 * A return value too large for the job record, kept in the version's bucket before the record that
 * points to it is written: the outcome with its `resultRef`. Without a bucket, or when the put fails
 * after the SDK's retries, the record keeps only the size (as for a value over 10 MiB): the job has
 * succeeded and is not run again for its result. An attempt whose fenced completion then fails to
 * land leaves its object to the lifecycle.
 */
export async function keepLargeResult(deps: DispatcherDeps, jobId: string, outcome: TaskOutcome): Promise<TaskOutcome> {
  if (outcome.status !== 'succeeded' || outcome.largeResult === undefined) return outcome;
  const { largeResult, ...kept } = outcome;
  const bucket = deps.payloads;
  if (!bucket) return kept;
  try {
    const resultRef = claimCheckRef(bucket.bucket, (sha256) => resultKey(jobId, sha256), largeResult);
    await putClaimCheck(bucket.store, resultRef, largeResult);
    return { ...kept, resultRef };
  } catch (error) {
    deps.logger.warn('result too large for the record could not be kept in S3; the record keeps its size', {
      jobId,
      bytes: kept.resultBytes,
      error: describe(error),
    });
    return kept;
  }
}

/**
 * Reads the results a dependent's dependencies kept in S3 (one GetObject each, all at once, up to
 * {@link MAX_DEPENDENCY_RESULT_BYTES} together, in the order named): each becomes that dependency's
 * `result`. One that cannot be read, or past the budget, keeps only its size (reading it throws
 * `ResultTooLargeError`), rather than failing the dependent.
 */
export async function readDependencyResults(
  deps: DispatcherDeps,
  outcomes: readonly StoredDependencyOutcome[],
): Promise<DependencyOutcome[]> {
  const store = deps.payloads?.store;
  let budget = MAX_DEPENDENCY_RESULT_BYTES;
  const chosen = outcomes.map((o) => {
    if (!o.resultRef || !store || o.resultRef.bytes > budget) return false;
    budget -= o.resultRef.bytes;
    return true;
  });
  return Promise.all(
    outcomes.map(async ({ resultRef, ...o }, i) => {
      if (!resultRef || !store || !chosen[i]) return o;
      try {
        const { resultBytes: _bytes, ...rest } = o;
        return { ...rest, result: await readClaimCheck(store, resultRef) };
      } catch (error) {
        deps.logger.warn("a dependency's result could not be read from S3; reading it throws", { jobId: o.jobId, error: describe(error) });
        return o;
      }
    }),
  );
}

/** The most a dependent's dependencies' kept results read from S3 add up to before it runs: 10 MiB (the task sees them all in memory). */
export const MAX_DEPENDENCY_RESULT_BYTES = 10 * 1024 * 1024;

/**
 * Why a dispatcher of `bucket` must not read `ref` (another bucket, or outside the prefix), or
 * undefined. In a subscribed app's bucket (`eventBuckets`) it reads events' payloads only.
 */
export function foreignRefProblem(ref: PayloadRef, bucket: string | undefined, eventBuckets: readonly string[] = []): string | undefined {
  if (eventBuckets.includes(ref.bucket)) {
    return ref.key.startsWith(EVENT_PAYLOAD_PREFIX)
      ? undefined
      : `payloadRef names key ${JSON.stringify(ref.key)} in the bucket of an app this one subscribes to; this version reads only keys under ${EVENT_PAYLOAD_PREFIX} there`;
  }
  if (bucket === undefined) return `payloadRef names s3://${ref.bucket}/${ref.key}, but this version has no payload bucket`;
  if (ref.bucket !== bucket)
    return `payloadRef names bucket ${JSON.stringify(ref.bucket)}; this version reads only ${JSON.stringify(bucket)}`;
  if (!ref.key.startsWith(PAYLOAD_PREFIX))
    return `payloadRef names key ${JSON.stringify(ref.key)}; this version reads only keys under ${PAYLOAD_PREFIX}`;
  return undefined;
}
