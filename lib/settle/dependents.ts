/**
 * Jobs that wait for other jobs. A dependency is data in the jobs table, not a message: the
 * dependent waits as a record (`waiting`, its message body kept), each dependency lists it among its
 * `dependents` (or, for a fan-in member, names it in `memberOf`), and whoever ends a dependency
 * counts it into each dependent — one conditional write per edge that cannot count twice. Whoever
 * completes the count releases the dependent: waiting → a parked job due now, sent at once by the
 * sweep's own path (and by the next sweep, should that send be lost).
 *
 * Every step is idempotent, and none deletes the message that caused it until it is done: a
 * dispatcher lost half-way leaves that message to come back, and its next delivery runs the same
 * steps again (a finished job's duplicate re-counts; a waiting job's copy re-registers).
 */
import type { Clock } from '../clock';
import { DEPENDENCY_REASONS, edgesOf } from '../policy/dependency-rules';
import type { Logger, QueueClient, QueueUrls } from '../ports';
import type { DependencyCount, DependentEdge, JobRecord } from '../track/job-record';
import type { JobReader, JobStore } from '../track/job-stores';
import { sendParked } from './parked-sends';

export interface FlowDeps {
  readonly jobs: JobStore;
  readonly queues: QueueClient;
  readonly urls: QueueUrls;
  readonly clock: Clock;
  readonly logger: Logger;
}

/**
 * Counts the ended job `jobId` into each of its dependents and releases (or fails) those it
 * completes. Idempotent. Throws when the jobs table does not answer: the caller keeps its message,
 * and the next delivery propagates again.
 */
export async function propagate(
  deps: FlowDeps,
  jobId: string,
  failed: boolean,
  edges: readonly DependentEdge[],
  /** Jobs this pass has propagated from already: a failure going round a cycle stops where it began. */
  visited: Set<string> = new Set(),
): Promise<void> {
  if (visited.has(jobId)) return;
  visited.add(jobId);
  await Promise.all(
    edges.map(async (edge) => {
      const count = await deps.jobs.countDependency(edge, jobId, failed, deps.clock.now());
      await settleDependent(deps, edge.id, count, visited);
    }),
  );
}

/**
 * What a dependent's count calls for: archived when a dependency failed and its policy is `fail`
 * (and, in turn, counted as failed into its own dependents), sent to its queue when every
 * dependency has ended. A dependent not yet recorded is left to its own registration, which reads
 * the count after it records itself.
 */
export async function settleDependent(
  deps: FlowDeps,
  dependentId: string,
  count: DependencyCount,
  visited: Set<string> = new Set(),
): Promise<void> {
  const { jobs, clock } = deps;
  if (count.firstFailure !== undefined) {
    const record = await jobs.get(dependentId);
    if (!record) return;
    if (record.state === 'waiting' && (record.onDependencyFailure ?? 'fail') === 'fail') {
      await failDependent(
        deps,
        dependentId,
        'dependency-failed',
        `dependency ${JSON.stringify(count.firstFailure)} did not succeed`,
        visited,
      );
      return;
    }
    if (record.state === 'archived' && DEPENDENCY_REASONS.has(record.reason ?? '')) {
      // Archived by an earlier pass that may have been lost before it counted the job onwards.
      await propagate(deps, dependentId, true, edgesOf(record), visited);
      return;
    }
    if (record.state !== 'waiting') return;
  }
  if (!count.complete) return;
  const parked = await jobs.release(dependentId, clock.now());
  if (!parked) return;
  deps.logger.info('dependencies ended: job released to its queue', { jobId: dependentId, queue: parked.queue });
  await sendParked(deps, [parked], clock.now());
}

/** Archives a waiting job for its dependencies and counts it, failed, into its own dependents. */
export async function failDependent(
  deps: FlowDeps,
  dependentId: string,
  reason: 'dependency-failed' | 'bad-dependency',
  detail: string,
  visited: Set<string> = new Set(),
): Promise<JobRecord | undefined> {
  const failed = await deps.jobs.failWaiting(dependentId, reason, detail, deps.clock.now());
  const record = failed ?? (await deps.jobs.get(dependentId));
  if (record?.state === 'archived' && DEPENDENCY_REASONS.has(record.reason ?? '')) {
    deps.logger.warn('waiting job archived for its dependencies', { jobId: dependentId, reason, detail });
    await propagate(deps, dependentId, true, edgesOf(record), visited);
  }
  return failed;
}

/**
 * A dependency archived and then replayed from the archive: each dependent it failed
 * (`dependency-failed`) has that failure taken back and, when no other dependency of it failed,
 * waits again (its body was kept), and so on down to the dependents they failed in turn. When the
 * replayed job succeeds, it counts into them as any dependency does. Returns the jobs that wait again.
 */
export async function reopenDependents(
  deps: Pick<FlowDeps, 'jobs' | 'clock'>,
  jobId: string,
  edges: readonly DependentEdge[],
  visited: Set<string> = new Set(),
): Promise<string[]> {
  if (visited.has(jobId)) return [];
  visited.add(jobId);
  const reopened: string[] = [];
  for (const edge of edges) {
    const dependent = await deps.jobs.get(edge.id);
    if (dependent?.state !== 'archived' || dependent.reason !== 'dependency-failed') continue;
    const { stillFailed } = await deps.jobs.uncountFailure(edge, jobId);
    if (stillFailed) continue;
    const waiting = await deps.jobs.reopen(edge.id, deps.clock.now());
    if (!waiting) continue;
    reopened.push(edge.id, ...(await reopenDependents(deps, edge.id, edgesOf(waiting), visited)));
  }
  return reopened;
}

/** The most records a cycle check reads before it gives up looking (and lets the job wait). */
const CYCLE_CHECK_LIMIT = 1_000;

/**
 * Whether waiting on `dependsOn` would close a cycle through `jobId`: a dependency that itself
 * waits, transitively, for `jobId`. Reads only waiting records' own lists, breadth first.
 */
export async function closesCycle(jobs: JobReader, jobId: string, dependsOn: readonly string[]): Promise<string | undefined> {
  const seen = new Set<string>();
  let frontier = [...dependsOn];
  const via = new Map<string, string>(dependsOn.map((d) => [d, d]));
  while (frontier.length > 0 && seen.size < CYCLE_CHECK_LIMIT) {
    const records = await jobs.getMany(frontier.filter((id) => !seen.has(id)));
    for (const id of frontier) seen.add(id);
    const next: string[] = [];
    for (const record of records) {
      if (record.state !== 'waiting') continue;
      for (const dep of record.dependsOn ?? []) {
        if (dep === jobId) return via.get(record.jobId);
        if (!seen.has(dep) && !via.has(dep)) {
          via.set(dep, via.get(record.jobId) as string);
          next.push(dep);
        }
      }
    }
    frontier = next;
  }
  return undefined;
}
