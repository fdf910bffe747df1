/**
 * The claim: a `full` tracked job is taken with a conditional write that hands out the attempt's
 * fencing token, or refused — a duplicate of a finished job, held by a live worker, an id another
 * job owns, or out of attempts lost to crashes.
 */
import { randomBytes } from 'node:crypto';
import { leaseMs, taskNeedMs } from '../deadlines';
import { describe } from '../errors';
import { MAX_VISIBILITY_SECONDS } from '../layout/sqs-limits';
import { edgesOf } from '../policy/dependency-rules';
import { type Tick, tickOf } from '../policy/recurring-ticks';
import { keptPayload } from '../policy/redaction';
import { conflictError, decideArchive, decideHandBack, type MessageAt } from '../settle/decisions';
import { propagate } from '../settle/dependents';
import { moveAfterEnd } from '../settle/key-order';
import { archiveTakeover, fencedCompletion, flowPorts, identity, membership, type RecordPorts, ref } from '../settle/records';
import { holdUniqueKey } from '../settle/unique-holds';
import type { TaskDefinition, UniqueWindow } from '../tasks/task';
import { attemptsUsed, type ClaimResult, type JobRecord, type ProgressWrite } from '../track/job-record';
import type { ClaimStore, JobStore } from '../track/job-stores';
import { RECORDED_ATTRIBUTE } from '../wire/recorded';
import type { DispatcherDeps } from './dispatcher-deps';
import { catchUpBefore, overlapOf, scheduleTurn } from './schedule-turns';

/**
 * Whether a message's job should have no record yet: its first receive, of a plain job (one that
 * waits for others, runs later, or takes its place in a key's order is recorded before it is
 * sent), and not a message taskworker sent again for a job it had recorded (marked so). A wrong
 * guess costs one more write (the claim that creates a record finds one), never another outcome.
 */
export function expectsNoRecord({ message, job }: Pick<MessageAt, 'message' | 'job'>): boolean {
  return (
    message.receiveCount === 1 &&
    message.attributes[RECORDED_ATTRIBUTE] === undefined &&
    job.dependsOn === undefined &&
    job.memberOf === undefined &&
    job.awaits === undefined &&
    job.runAt === undefined &&
    job.seq === undefined
  );
}

/** How long a message waits when its claim could not be made (the jobs table did not answer). */
export const CLAIM_RETRY_SECONDS = 10;

/**
 * Claims the job of a `full` tracked queue. Returns the attempt (the fencing token) and the claimed
 * record, or undefined when the claim already decided the message: a conflict (archived), a
 * duplicate (deleted), held elsewhere or unanswered (handed back), or attempts all lost (archived).
 */
export async function claimJob(
  deps: RecordPorts & Pick<DispatcherDeps, 'config' | 'urls'>,
  at: MessageAt,
  def: TaskDefinition,
  start: number,
): Promise<{ attempt: number; claimed?: JobRecord } | undefined> {
  const { queue, state, message, job } = at;
  const jobs = deps.tracking?.jobs as JobStore;
  const base = { messageId: message.messageId, jobId: job.id, task: def.name };
  const needMs = taskNeedMs(def.timeLimitSeconds, deps.config.dispatcher.killGraceMs);
  let claim: ClaimResult;
  let claimedAt = start;
  try {
    // A schedule's tick catches up the ticks missed before it, then runs, waits or is skipped as its overlap says.
    const tick = tickOf(job, deps.config.schedules);
    if (tick && !(await tickTurn(deps, at, tick, start))) return undefined;
    // A tick's run starts once its turn came (a run before it may have ended only now).
    claimedAt = tick ? deps.clock.now() : start;
    // A `unique` task's keyed job holds its key, or joins the live job that does (never run).
    const holder = def.unique && job.key !== undefined ? await joinedHolder(deps, at, def, start) : undefined;
    if (holder !== undefined) {
      state.decide({ kind: 'delete', message, record: async () => true }, { ...base, outcome: 'duplicate', attempt: 0 });
      deps.logger.info('a job of the same task and key is live; recorded deduplicated', { jobId: job.id, duplicateOf: holder });
      return undefined;
    }
    // Tags are indexed before the job can end, so a tag finds it in every state (idempotent per delivery).
    if (job.tags) await jobs.tagJob(job.id, job.tags, job.publishedAt);
    const kept = keptPayload(job.payload, def.redact, deps.config.tracking.keepPayloadBytes);
    claim = await jobs.claim({
      ...ref(deps, queue, job),
      ...membership(job),
      ...(kept !== undefined ? { payload: kept } : {}),
      workerId: deps.workerId,
      now: claimedAt,
      leaseUntil: claimedAt + leaseMs(needMs, deps.config.dispatcher.settleMarginMs),
      claimId: randomBytes(9).toString('base64url'),
      ...(tick === undefined && holder === undefined && expectsNoRecord(at) ? { expectNew: true } : {}),
    });
  } catch (error) {
    deps.logger.error('claim failed; the message will come back', { jobId: job.id, error: describe(error) });
    decideHandBack(
      deps,
      at,
      { kind: 'visibility', seconds: CLAIM_RETRY_SECONDS },
      {
        ...base,
        outcome: 'deferred',
        attempt: message.receiveCount,
      },
    );
    return undefined;
  }
  switch (claim.outcome) {
    case 'conflict':
      decideArchive(deps, queue, state, message, job, 'id-conflict', conflictError(job, claim.record));
      return undefined;
    case 'finished':
      if (claim.record.state === 'archived' && claim.record.archiveHolder !== undefined) {
        // Archived, its archive send perhaps not landed (its fence open): the fence decides.
        const ended = claim.record;
        const { reason = 'exhausted', lastError = { type: 'Error', message: 'archived' }, attempt } = ended;
        const takeover = archiveTakeover(deps, job.id, () => propagateAgain(deps, ended));
        decideArchive(deps, queue, state, message, job, reason, lastError, { ...base, attempt }, takeover);
        return undefined;
      }
      state.decide(
        {
          kind: 'delete',
          message,
          record: async () => {
            await jobs.recordDuplicate(job.id, identity(job), deps.workerId, deps.clock.now());
            await propagateAgain(deps, claim.record);
            return true;
          },
        },
        { ...base, outcome: 'duplicate', attempt: claim.record.attempt },
      );
      return undefined;
    case 'leased': {
      const seconds = Math.min(
        MAX_VISIBILITY_SECONDS,
        Math.max(1, Math.ceil(((claim.record.leaseUntil ?? claimedAt) - claimedAt) / 1000) + 1),
      );
      decideHandBack(
        deps,
        at,
        { kind: 'visibility', seconds },
        {
          ...base,
          outcome: 'deferred',
          attempt: claim.record.attempt,
        },
      );
      return undefined;
    }
    case 'claimed':
      break;
  }
  const attempt = claim.token;
  // Runs that asked to run again later (RetryAfterError) or parked at a step used no attempt.
  if (attemptsUsed(claim.record) > def.maxRetries + 1) {
    // Earlier attempts were started but never finished: their worker was lost (a crash, a kill).
    const error = workerLostError(claim.record, attempt, def.maxRetries);
    decideArchive(
      deps,
      queue,
      state,
      message,
      job,
      'exhausted',
      error,
      { ...base, attempt },
      fencedCompletion(deps, job, attempt, claim.record, { reason: 'exhausted', error }),
    );
    return undefined;
  }
  return { attempt, claimed: claim.record };
}

/**
 * The job a `unique` task's keyed job joins, having recorded it `deduplicated`; undefined when it
 * holds its key (taken now, or by its publisher) and is claimed as any job. One that joins a live
 * holder but already has a record of its own (it ran, or was recorded, before the key changed
 * hands) is claimed too: the claim knows what to do with it.
 */
async function joinedHolder(
  deps: RecordPorts & Pick<DispatcherDeps, 'config'>,
  { queue, job }: MessageAt,
  def: TaskDefinition,
  now: number,
): Promise<string | undefined> {
  const jobs = deps.tracking?.jobs as JobStore;
  const key = job.key as string;
  const outcome = await holdUniqueKey(
    jobs,
    { task: def.name, key, jobId: job.id, publishedAt: job.publishedAt },
    def.unique as UniqueWindow,
    now,
  );
  if (outcome.outcome === 'holds') return undefined;
  const recorded = await jobs.recordDeduplicated({
    ...ref(deps, queue, job),
    key,
    duplicateOf: outcome.holder,
    workerId: deps.workerId,
    now,
  });
  return recorded ? outcome.holder : undefined;
}

/**
 * A tick's catch-up and overlap turn: true when it goes on to its claim; false when it was decided
 * here (skipped: recorded `deduplicated` and deleted; waiting: handed back until it asks again).
 */
async function tickTurn(
  deps: RecordPorts & Pick<DispatcherDeps, 'config' | 'urls'>,
  at: MessageAt,
  tick: Tick,
  now: number,
): Promise<boolean> {
  const { queue, state, message, job } = at;
  const jobs = deps.tracking?.jobs as JobStore;
  if (!tick.owed) await catchUpBefore(deps, jobs, queue, tick, now);
  const turn = await scheduleTurn(jobs, tick, job.id, now);
  const base = { messageId: message.messageId, jobId: job.id, task: job.task, attempt: 0 };
  if (turn.kind === 'run') return true;
  if (turn.kind === 'wait') {
    decideHandBack(
      deps,
      at,
      { kind: 'visibility', seconds: turn.seconds },
      { ...base, outcome: 'deferred', heldBy: `schedule:${tick.schedule.name}` },
    );
    return false;
  }
  const recorded = await jobs.recordDeduplicated({
    ...ref(deps, queue, job),
    duplicateOf: turn.runner,
    detail: `skipped: schedule ${tick.schedule.name}'s run ${turn.runner} is live (overlap ${overlapOf(tick)})`,
    workerId: deps.workerId,
    now,
  });
  // A tick with a record of its own already (it ran, or was skipped before) goes to its claim, which knows what to do.
  if (!recorded) return true;
  await jobs.countSkipped(tick.schedule.name, now);
  deps.logger.info('schedule tick skipped: the previous run is live', { jobId: job.id, runner: turn.runner });
  state.decide({ kind: 'delete', message, record: async () => true }, { ...base, outcome: 'duplicate' });
  return false;
}

/** Ends an attempt is recorded with (each history entry carries the attempt it ended). */
const ATTEMPT_ENDS: ReadonlySet<string> = new Set(['retrying', 'succeeded', 'archived', 'cancelled']);

/**
 * Why a job out of attempts is archived though no attempt of it failed that many times, from its
 * record's history: which of the attempts before `attempt` started and never ended (their worker was
 * lost: a crash, a kill), which ended with a failure and were retried, and when and where the last
 * one started. The history keeps one start per claim; a trimmed history (over `historyLimit`) loses
 * the oldest, so the attempts before the first start it kept are counted apart.
 */
export function workerLostError(
  claimed: Pick<JobRecord, 'history' | 'retryAfters' | 'parks'>,
  attempt: number,
  maxRetries: number,
): { readonly type: 'WorkerLostError'; readonly message: string } {
  const earlier = attempt - 1;
  // The earlier claims that used an attempt: not those that asked to run later, parked at a step or
  // were handed back unstarted (the counters the record keeps, whatever its trimmed history shows).
  const used = earlier - (claimed.retryAfters ?? 0) - (claimed.parks ?? 0);
  const starts = claimed.history.filter((h) => h.what === 'started' || h.what === 'took-over');
  // The last start is this claim's: the k-th of the `starts.length` kept is attempt attempt - starts.length + k.
  const firstKept = Math.max(1, attempt - starts.length + 1);
  const ended = new Set(claimed.history.filter((h) => ATTEMPT_ENDS.has(h.what)).map((h) => h.attempt));
  // A claim handed back before its body started used no attempt: neither lost nor failed.
  const handedBack = new Set(claimed.history.filter((h) => h.what === 'handed-back').map((h) => h.attempt));
  const lost: number[] = [];
  const failed: number[] = [];
  for (let a = firstKept; a < attempt; a++) if (!handedBack.has(a)) (ended.has(a) ? failed : lost).push(a);
  const head = `${used} attempts started (maxRetries ${maxRetries} allows ${maxRetries + 1})`;
  if (lost.length + failed.length === 0)
    return { type: 'WorkerLostError', message: `${head}; the history kept does not show how they ended` };
  const list = (ns: readonly number[]) => (ns.length === 1 ? `attempt ${ns[0]}` : `attempts ${ns.join(', ')}`);
  const parts = [
    ...(lost.length > 0 ? [`${lost.length} never ended, ${lost.length === 1 ? 'its worker' : 'their workers'} lost (${list(lost)})`] : []),
    ...(failed.length > 0 ? [`${failed.length} failed and ${failed.length === 1 ? 'was' : 'were'} retried (${list(failed)})`] : []),
    ...(firstKept > 1 ? [`${firstKept - 1} older than the history kept`] : []),
  ];
  const lastStart = starts[starts.length - 2];
  const last =
    lost.at(-1) === earlier && lastStart
      ? `; the last, attempt ${earlier}, started ${new Date(lastStart.when).toISOString()}${lastStart.worker ? ` on ${lastStart.worker}` : ''}`
      : '';
  return { type: 'WorkerLostError', message: `${head}: ${parts.join('; ')}${last}` };
}

/**
 * A finished job's message came back: the dispatcher that ended it may have been lost before it
 * counted the job into every job waiting for it (its message is deleted only after). Counting is
 * idempotent, so this delivery counts again.
 */
async function propagateAgain(deps: RecordPorts, record: JobRecord): Promise<void> {
  const flows = flowPorts(deps);
  const edges = edgesOf(record);
  if (!flows || (record.state !== 'succeeded' && record.state !== 'archived' && record.state !== 'cancelled')) return;
  if (edges.length > 0) await propagate(flows, record.jobId, record.state !== 'succeeded', edges);
  // Nor may it have moved its ordered key's line.
  await moveAfterEnd({ ...flows, ...(deps.registry ? { registry: deps.registry } : {}) }, record, record.state);
}

/** The heartbeat's lease renewal for a claimed attempt (with the task's latest progress): false once a newer attempt holds the job, or it was cancelled. */
export function leaseRenewal(
  deps: Pick<DispatcherDeps, 'logger'>,
  jobs: ClaimStore,
  jobId: string,
  token: number,
  leaseForMs: number,
): (now: number, progress?: ProgressWrite) => Promise<boolean> {
  return async (now, progress) => {
    try {
      return await jobs.extendLease(jobId, token, now + leaseForMs, now, progress);
    } catch (error) {
      deps.logger.warn('lease extension failed; the lease may still hold', { jobId, error: describe(error) });
      return true;
    }
  };
}
