/**
 * Rate-limit pauses (RateLimitedError): the dispatcher whose task was told "too many requests"
 * pauses the error's scope fleet-wide (the controls item, lib/track/operator-controls.ts), and every
 * dispatcher holds the received jobs of a paused scope back until the pause ends — each handed back
 * to its queue once, invisible until then, using no attempt — while everything else runs. A queue's
 * pause also keeps the loop from receiving from it (effectiveQueues).
 */
import type { QueueConfig } from '../config/app-config';
import { describe } from '../errors';
import { MAX_VISIBILITY_SECONDS } from '../layout/sqs-limits';
import type { TaskOutcome } from '../run/executor-types';
import { decideHandBack } from '../settle/decisions';
import type { BatchState } from '../settle/settle';
import { pauseHolding, pauseScopeId } from '../track/operator-controls';
import type { DecodedJob } from '../wire/envelope';
import type { DispatcherDeps, Planned } from './dispatcher-deps';

/** The most a held job's return is spread past its pause's end, so a scope's backlog does not all come back at once. */
const HELD_SPREAD_MS = 5_000;

/**
 * Pauses the scope a rate-limited outcome names until its asked time (at most SQS's 12 hours):
 * in this container at once, fleet-wide with one conditional write. Never throws: a pause that
 * cannot be written leaves the other dispatchers to find the limit themselves.
 */
export async function pauseForRateLimit(
  deps: Pick<DispatcherDeps, 'clock' | 'controls' | 'tracking' | 'logger'>,
  queue: QueueConfig,
  job: DecodedJob,
  outcome: TaskOutcome,
): Promise<void> {
  if (outcome.status !== 'failed' || outcome.kind !== 'rate-limited') return;
  const now = deps.clock.now();
  const until = now + Math.min(MAX_VISIBILITY_SECONDS * 1000, Math.max(0, outcome.retryAfterMs ?? 0));
  const scope = pauseScopeId(outcome.pauseScope ?? 'task', { task: job.task, queue: queue.name, key: job.key });
  deps.controls?.notePause(scope, until);
  const store = deps.tracking?.controls;
  deps.logger.info('rate limited: scope paused', { scope, until: new Date(until).toISOString(), jobId: job.id });
  if (!store) return;
  try {
    await store.pause(scope, until, now);
  } catch (error) {
    deps.logger.error('rate-limit pause not written; other dispatchers find the limit themselves', { scope, error: describe(error) });
  }
}

/**
 * The batch's jobs no rate-limit pause holds, in order. Each held job is handed back invisible
 * until its pause ends (plus a spread of up to a tenth of the pause, at most 5 s), reported
 * `deferred` with the scope that holds it. Without controls nothing is held.
 */
export function holdPaused(deps: DispatcherDeps, queue: QueueConfig, planned: readonly Planned[], state: BatchState): Planned[] {
  const controls = deps.controls?.last;
  if (!controls || Object.keys(controls.pauses).length === 0) return [...planned];
  const now = deps.clock.now();
  const free: Planned[] = [];
  for (const p of planned) {
    const holding = pauseHolding(controls, { task: p.def.name, queue: queue.name, key: p.job.key }, now);
    if (!holding) {
      free.push(p);
      continue;
    }
    const leftMs = holding.until - now;
    const spreadMs = deps.random() * Math.min(HELD_SPREAD_MS, leftMs / 10);
    const seconds = Math.min(MAX_VISIBILITY_SECONDS, Math.max(1, Math.ceil((leftMs + spreadMs) / 1000)));
    // As a limit's deferral: near its redrive limit the message is replaced by a fresh copy, so a
    // long pause never sends a job to the dead-letter queue.
    decideHandBack(
      deps,
      { queue, mode: 'full', state, message: p.message, job: p.job },
      { kind: 'visibility', seconds },
      { messageId: p.message.messageId, jobId: p.job.id, task: p.def.name, outcome: 'deferred', heldBy: holding.scope, attempt: 0 },
    );
  }
  return free;
}
