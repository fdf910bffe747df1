/**
 * Messages of a debounced task's keyed jobs (`debounce` rule) before anything else is decided for
 * them: the key's pending job waits, handed back until its cycle is due, while publishes put it off;
 * once due the cycle is closed (lib/settle/debounce-cycles.ts) and the job goes on with the last
 * publish's envelope, claimed and run as any job. Every later delivery of it finds the body kept at
 * the close and runs with that, so a dispatcher lost after closing loses nothing: the message, deleted
 * only after the run, comes back. A message that is no cycle's job (sent from another SDK) counts as
 * a publish of its key at its arrival: it opens a cycle, and waits as its job, or joins the open one
 * and is recorded `deduplicated` pointing at it, never run.
 */
import type { QueueConfig } from '../config/app-config';
import { describe } from '../errors';
import { secondsUntil } from '../policy/debounce-rules';
import { dueJob, publishDebounced } from '../settle/debounce-cycles';
import { decideHandBack, type MessageAt } from '../settle/decisions';
import { ref } from '../settle/records';
import type { JobReport } from '../settle/report';
import type { BatchState } from '../settle/settle';
import type { DebounceWindow } from '../tasks/task';
import type { JobStore } from '../track/job-stores';
import { decodeEnvelope, pinEnvelope } from '../wire/envelope';
import { CLAIM_RETRY_SECONDS } from './claim';
import type { DispatcherDeps, Planned } from './dispatcher-deps';

/** Whether the debounce rule applies to this message: a keyed job of a debounced task, on a queue whose jobs table keeps cycles. */
export function isDebounced(deps: Pick<DispatcherDeps, 'tracking'>, queue: QueueConfig, p: Planned): boolean {
  return p.def.debounce !== undefined && p.job.key !== undefined && queue.tracking === 'full' && deps.tracking?.jobs !== undefined;
}

/** Keeps back the batch's debounced jobs that are not due; returns the ones that go on (due ones with their cycle's last envelope), in message order. */
export async function holdForDebounce(
  deps: DispatcherDeps,
  queue: QueueConfig,
  planned: readonly Planned[],
  state: BatchState,
): Promise<Planned[]> {
  const going = await Promise.all(planned.map((p) => (isDebounced(deps, queue, p) ? debounceOne(deps, queue, p, state) : p)));
  return going.filter((p): p is Planned => p !== undefined);
}

async function debounceOne(deps: DispatcherDeps, queue: QueueConfig, p: Planned, state: BatchState): Promise<Planned | undefined> {
  const { message, job, def } = p;
  const jobs = deps.tracking?.jobs as JobStore;
  const key = job.key as string;
  const at: MessageAt = { queue, mode: 'full', state, message, job };
  const report: JobReport = { messageId: message.messageId, jobId: job.id, task: def.name, outcome: 'scheduled', attempt: 0 };
  const now = deps.clock.now();
  try {
    const due = await dueJob(jobs, def.name, key, job.id, now);
    if (due.kind === 'run') return withBody(p, due.body);
    if (due.kind === 'wait') {
      decideHandBack(deps, at, { kind: 'visibility', seconds: secondsUntil(due.dueAt, now) }, report);
      return undefined;
    }
    // No cycle's job: a publish at its arrival. One recorded as a joiner already (its delete was lost) is not published twice;
    // one its publisher recorded (a publisher that knew only the task's name) runs as any job: its record fixes its payload.
    const own = await jobs.get(job.id);
    if (own?.state === 'deduplicated') {
      state.decide({ kind: 'delete', message }, { ...report, outcome: 'duplicate' });
      return undefined;
    }
    if (own) return p;
    const body = pinEnvelope(message.body, job);
    const published = await publishDebounced(jobs, { task: def.name, key, jobId: job.id, body }, def.debounce as DebounceWindow, now);
    if (published.outcome === 'started') {
      decideHandBack(deps, at, { kind: 'visibility', seconds: secondsUntil(published.dueAt, now) }, report);
      return undefined;
    }
    await jobs.recordDeduplicated({ ...ref(deps, queue, job), key, duplicateOf: published.jobId, workerId: deps.workerId, now });
    deps.logger.info('a pending job of the same task and key runs with this payload; recorded deduplicated', {
      jobId: job.id,
      duplicateOf: published.jobId,
    });
    state.decide({ kind: 'delete', message }, { ...report, outcome: 'duplicate' });
    return undefined;
  } catch (error) {
    deps.logger.error('debounce cycle not read or written; the message will come back', { jobId: job.id, error: describe(error) });
    decideHandBack(deps, at, { kind: 'visibility', seconds: CLAIM_RETRY_SECONDS }, { ...report, outcome: 'deferred' });
    return undefined;
  }
}

/**
 * The job as its cycle's last publish left it: that publish's envelope (payload or claim check,
 * appData, tags) under the cycle's job id, the message's body rewritten to it so a copy requeued or
 * archived from here on carries it.
 */
function withBody(p: Planned, body: string): Planned {
  const fields = JSON.parse(body) as Record<string, unknown>;
  const pinned = JSON.stringify({ ...fields, id: p.job.id });
  const job = decodeEnvelope(pinned, { messageId: p.message.messageId, sentTimestamp: p.message.sentTimestamp });
  return { ...p, job, message: { ...p.message, body: pinEnvelope(pinned, job) } };
}
