import { createHash } from 'node:crypto';
import type { QueueConfig } from '../config';
import { describe, PayloadMissingError } from '../errors';
import { decideArchive, decideHandBack } from '../settle/decisions';
import type { BatchState } from '../settle/settle';
import { TERMINAL_STATES } from '../track/rules';
import { jsonDepth, MAX_JSON_DEPTH } from '../wire/envelope';
import type { PayloadRef } from '../wire/payload-ref';
import { CLAIM_RETRY_SECONDS } from './claim';
import type { DispatcherDeps, Planned } from './types';

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
      let text: string;
      try {
        text = await store.get(ref.bucket, ref.key);
      } catch (error) {
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
      const problem = contentProblem(text, ref);
      if (problem) {
        reject(problem);
        return undefined;
      }
      let payload: unknown;
      try {
        payload = JSON.parse(text);
      } catch (error) {
        reject(`the object s3://${ref.bucket}/${ref.key} is not JSON (${describe(error)})`);
        return undefined;
      }
      if (jsonDepth(payload, MAX_JSON_DEPTH) > MAX_JSON_DEPTH) {
        reject(`the object s3://${ref.bucket}/${ref.key} nests deeper than ${MAX_JSON_DEPTH} levels`);
        return undefined;
      }
      return { ...p, job: { ...p.job, payload } };
    }),
  );
  return resolved.filter((p): p is Planned => p !== undefined);
}

/**
 * Deletes the objects of jobs that have ended for good in this batch: succeeded or cancelled, their
 * outcome settled and recorded. An archived job's object is kept, so replaying it within the
 * retention finds its payload; the bucket's lifecycle expires it (and any a failed delete left) after
 * the job retention days. DeleteObject costs no request charge. Never throws.
 */
export async function dropPayloads(deps: DispatcherDeps, ran: readonly Planned[], state: BatchState): Promise<void> {
  const store = deps.payloads?.store;
  if (!store) return;
  const ended = ran.filter((p) => {
    const report = state.reports.get(p.message.messageId);
    return (
      p.job.payloadRef !== undefined &&
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

/** Whether the object's size and (when given) SHA-256 are the reference's. */
function contentProblem(text: string, ref: PayloadRef): string | undefined {
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes !== ref.bytes) return `the object s3://${ref.bucket}/${ref.key} is ${bytes} bytes; payloadRef says ${ref.bytes}`;
  if (ref.sha256 !== undefined && createHash('sha256').update(text, 'utf8').digest('hex') !== ref.sha256)
    return `the object s3://${ref.bucket}/${ref.key} does not have payloadRef's sha256`;
  return undefined;
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
