/**
 * The rules of jobs that wait for other jobs, with no I/O: how counts are sharded, how long an
 * unknown dependency is waited for, which reasons count as a dependency's failure, and which
 * edges and ids a record names. The writes that follow them are in lib/settle/dependents.ts.
 */
import type { DependentEdge, JobRecord } from '../track/job-record';

/** Dependencies counted per shard item: a shard of 50 member indices stays under 1 KB (one write unit). */
export const COUNT_SHARD_SIZE = 50;
/** Shards a count of `size` dependencies spreads over. */
export function shardCount(size: number): number {
  return Math.ceil(size / COUNT_SHARD_SIZE);
}
/** Dependencies in shard `shard` of a count of `size`. */
export function shardSize(size: number, shard: number): number {
  return Math.min(COUNT_SHARD_SIZE, size - shard * COUNT_SHARD_SIZE);
}

/**
 * How long a dependent waits for a dependency that has no record yet: a publisher may send both at
 * once from any SDK, and the dependency's record appears only when a dispatcher takes its message.
 */
export const UNKNOWN_DEPENDENCY_GRACE_MS = 15 * 60_000;

/** Reasons a dependent is archived for its dependencies, and counts as failed for its own dependents. */
export const DEPENDENCY_REASONS: ReadonlySet<string> = new Set(['dependency-failed', 'bad-dependency']);

/** The jobs waiting for `record`: those recorded on it, and the fan-in it is a member of. */
export function edgesOf(record: Pick<JobRecord, 'dependents' | 'memberOf'>): DependentEdge[] {
  const edges = [...(record.dependents ?? [])];
  const m = record.memberOf;
  if (m && !edges.some((e) => e.id === m.id && e.index === m.index)) edges.push({ id: m.id, index: m.index, size: m.size });
  return edges;
}

/** The ids a job waits for: its `dependsOn`, or its fan-in's members. */
export function dependencyIds(job: {
  readonly jobId?: string;
  readonly id?: string;
  readonly dependsOn?: readonly string[];
  readonly awaits?: number;
}): string[] {
  if (job.dependsOn && job.dependsOn.length > 0) return [...job.dependsOn];
  const id = job.jobId ?? job.id ?? '';
  return Array.from({ length: job.awaits ?? 0 }, (_, i) => `${id}.${i}`);
}
