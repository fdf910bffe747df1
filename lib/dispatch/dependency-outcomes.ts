/**
 * What a dispatcher hands a task about its dependencies: their outcomes, read from the jobs table.
 */
import type { DependencyOutcome } from '../tasks/task';
import type { JobReader } from '../track/job-stores';
import type { PayloadRef } from '../wire/payload-ref';

/** A dependency's outcome as its record has it: a result kept in S3 is still its reference (the dispatcher reads it). */
export type StoredDependencyOutcome = DependencyOutcome & { readonly resultRef?: PayloadRef };

/** The outcomes of a job's dependencies, read from the jobs table, in the order they were named. */
export async function dependencyOutcomes(jobs: JobReader, ids: readonly string[]): Promise<StoredDependencyOutcome[]> {
  const records = new Map((await jobs.getMany(ids)).map((r) => [r.jobId, r]));
  return ids.map((jobId) => {
    const r = records.get(jobId);
    if (!r) return { jobId, state: 'unknown' };
    return {
      jobId,
      state: r.state,
      ...(r.result !== undefined ? { result: parseResult(r.result) } : {}),
      ...(r.reason !== undefined ? { reason: r.reason } : {}),
      ...(r.resultBytes !== undefined ? { resultBytes: r.resultBytes } : {}),
      ...(r.resultRef !== undefined ? { resultRef: r.resultRef } : {}),
    };
  });
}

function parseResult(json: string): unknown {
  try {
    return JSON.parse(json) as unknown;
  } catch {
    return json;
  }
}
