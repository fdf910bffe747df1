/**
 * Messages of jobs that wait for others (`dependsOn`, or a fan-in's `awaits`) do not run when they
 * arrive: the job is recorded `waiting` with its body, each dependency learns it is waited for (one
 * that has ended already is counted at once), and the message is deleted. The job is sent back to
 * its queue when its last dependency ends (lib/settle/dependents.ts); that copy arrives finding its record
 * released, and runs.
 *
 * Registration is idempotent and re-run by every copy of the message that finds the job still
 * waiting, so a dispatcher lost half-way through it loses nothing: the message comes back.
 */
import type { QueueConfig } from '../config/app-config';
import { describe } from '../errors';
import { UNKNOWN_DEPENDENCY_GRACE_MS } from '../policy/dependency-rules';
import { decideArchive, decideHandBack } from '../settle/decisions';
import { closesCycle, type FlowDeps, failDependent, settleDependent } from '../settle/dependents';
import { flowPorts, ref } from '../settle/records';
import type { JobReport } from '../settle/report';
import type { BatchState } from '../settle/settle';
import { hasDependencies, pinEnvelope } from '../wire/envelope';
import { CLAIM_RETRY_SECONDS } from './claim';
import type { DispatcherDeps, Planned } from './dispatcher-deps';

/** How long a message waits before it looks again for a dependency that has no record yet: 2 s, doubling to a minute. */
const unknownDependencyRetrySeconds = (receiveCount: number) => Math.min(60, 2 ** Math.max(1, Math.min(6, receiveCount)));

/** Keeps the batch's jobs that wait for others; returns the ones that may go on (in message order). */
export async function holdForDependencies(
  deps: DispatcherDeps,
  queue: QueueConfig,
  planned: readonly Planned[],
  state: BatchState,
): Promise<Planned[]> {
  const going = new Set<Planned>();
  await Promise.all(
    planned.map(async (p) => {
      if (!hasDependencies(p.job)) {
        going.add(p);
        return;
      }
      if ((await holdOne(deps, queue, p, state)) === 'run') going.add(p);
    }),
  );
  return planned.filter((p) => going.has(p));
}

async function holdOne(deps: DispatcherDeps, queue: QueueConfig, p: Planned, state: BatchState): Promise<'run' | 'held'> {
  const { message, job, def } = p;
  const flows = flowPorts(deps);
  const report: JobReport = { messageId: message.messageId, jobId: job.id, task: def.name, outcome: 'scheduled', attempt: 0 };
  if (!flows || queue.tracking !== 'full') {
    decideArchive(deps, queue, state, message, job, 'bad-dependency', {
      type: 'DependencyError',
      message: `job ${JSON.stringify(job.id)} has dependencies, which need tracking 'full'; queue ${JSON.stringify(queue.name)} is tracked '${flows ? queue.tracking : 'off'}'`,
    });
    return 'held';
  }
  const now = deps.clock.now();
  try {
    const waited = await flows.jobs.wait({
      ...ref(deps, queue, job),
      body: pinEnvelope(message.body, job),
      ...(Object.keys(message.attributes).length > 0 ? { attributes: message.attributes } : {}),
      ...(job.dependsOn ? { dependsOn: job.dependsOn } : {}),
      ...(job.awaits !== undefined ? { awaits: job.awaits } : {}),
      onDependencyFailure: job.onDependencyFailure ?? 'fail',
      ...(job.tags ? { tags: job.tags } : {}),
      workerId: deps.workerId,
      now,
    });
    if (waited.outcome === 'conflict') {
      decideArchive(deps, queue, state, message, job, 'id-conflict', {
        type: 'JobIdConflictError',
        message: `job id ${JSON.stringify(job.id)} belongs to a job of task ${JSON.stringify(waited.record.task)}; this message names task ${JSON.stringify(job.task)}`,
      });
      return 'held';
    }
    if (job.tags) await flows.jobs.tagJob(job.id, job.tags, job.publishedAt);
    // Released already (this is the copy sent when its dependencies ended), or further along: the claim decides.
    if (waited.outcome === 'exists' && waited.record.state !== 'waiting') return 'run';
    // A cycle closes only when a job that named an unknown dependency comes back (a first delivery
    // finds every job it names existing already, none of them able to wait for it yet): only a
    // redelivery walks the waiting jobs.
    const problem = await register(flows, job.id, job.dependsOn ?? [], message.receiveCount > 1);
    if (problem?.kind === 'unknown' && now - job.publishedAt < UNKNOWN_DEPENDENCY_GRACE_MS) {
      // Published together from another SDK, its dependency may not have reached a dispatcher yet.
      decideHandBack(
        deps,
        { queue, mode: 'full', state, message, job },
        { kind: 'visibility', seconds: unknownDependencyRetrySeconds(message.receiveCount) },
        {
          ...report,
          outcome: 'deferred',
        },
      );
      return 'held';
    }
    if (problem) {
      const detail =
        problem.kind === 'unknown'
          ? `dependency ${JSON.stringify(problem.dependency)} has no record ${UNKNOWN_DEPENDENCY_GRACE_MS / 60_000} minutes after this job was published`
          : `dependency ${JSON.stringify(problem.dependency)} waits, through its own dependencies, for this job (a cycle)`;
      decideArchive(
        deps,
        queue,
        state,
        message,
        job,
        'bad-dependency',
        { type: 'DependencyError', message: detail },
        undefined,
        async () => {
          await failDependent(flows, job.id, 'bad-dependency', detail);
          return true;
        },
      );
      return 'held';
    }
    await settleDependent(flows, job.id, await flows.jobs.dependencyCount(job.id));
    // Held, whether this copy recorded it or found it recorded (by its publisher, or by an earlier copy).
    state.decide({ kind: 'delete', message }, report);
  } catch (error) {
    deps.logger.error('recording a waiting job failed; the message will come back', { jobId: job.id, error: describe(error) });
    decideHandBack(
      deps,
      { queue, mode: 'full', state, message, job },
      { kind: 'visibility', seconds: CLAIM_RETRY_SECONDS },
      {
        ...report,
        outcome: 'deferred',
      },
    );
  }
  return 'held';
}

type Problem = { readonly kind: 'unknown' | 'cycle'; readonly dependency: string };

/**
 * Tells each dependency it is waited for (counting those that ended already) and checks that none
 * waits, in turn, for this job. A fan-in's members name it themselves: nothing to add.
 */
async function register(flows: FlowDeps, jobId: string, dependsOn: readonly string[], checkCycles: boolean): Promise<Problem | undefined> {
  const { jobs, clock } = flows;
  const size = dependsOn.length;
  const unknown: string[] = [];
  await Promise.all(
    dependsOn.map(async (dependency, index) => {
      const edge = { id: jobId, index, size };
      const added = await jobs.addDependent(dependency, edge, clock.now());
      if (added.outcome === 'unknown') unknown.push(dependency);
      else if (added.outcome === 'ended') await jobs.countDependency(edge, dependency, added.record.state !== 'succeeded', clock.now());
    }),
  );
  const first = dependsOn.find((d) => unknown.includes(d));
  if (first !== undefined) return { kind: 'unknown', dependency: first };
  const cycle = checkCycles && size > 0 ? await closesCycle(jobs, jobId, dependsOn) : undefined;
  return cycle !== undefined ? { kind: 'cycle', dependency: cycle } : undefined;
}
