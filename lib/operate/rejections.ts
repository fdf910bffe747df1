/**
 * Ids a publisher gave, findable when their message never ran as that job: a message archived for
 * its envelope (unknown task, id conflict, malformed with a readable id) keeps its record under its
 * own SQS message id, filed under the id it carried ({@link OperatorStore.rejectionsFor}). `jobs show ID`,
 * and the dashboard's job page, list those records beside (never merged into) the job named ID.
 */
import type { JobRecord } from '../track/job-record';
import type { OperatorStore } from '../track/job-stores';
import type { FiledRejection, JobRelations, JobShowAnswer, ShownJob } from './answers';

export type { FiledRejection, JobShowAnswer, ShownJob } from './answers';

/** What `jobs show ID` finds: the job named ID (if any) and, apart, the messages that carried ID and never ran. */
export interface JobLookup {
  readonly job?: JobRecord;
  readonly filed: readonly FiledRejection[];
}

/** Why a rejected message's record is kept under its own message id rather than the id it carried. */
export function whyFiled(record: JobRecord, carried: string): string {
  switch (record.reason) {
    case 'unknown-task':
      return `task ${JSON.stringify(record.task)} is not registered in version ${record.version}`;
    case 'id-conflict':
      return `id ${carried} belongs to another job (another task or payload): this message was not that job and never touched it`;
    case 'malformed':
      return `malformed: ${record.lastError?.message ?? 'not a valid envelope'}`;
    default:
      return `archived under its message id (${record.reason ?? 'no reason recorded'})`;
  }
}

/** The job named `id` and the rejected messages that carried `id`, read apart (one GetItem each, and one BatchGetItem). */
export async function lookUpJob(jobs: OperatorStore, id: string): Promise<JobLookup> {
  const [job, rejected] = await Promise.all([jobs.get(id), jobs.rejectionsFor(id)]);
  const filed = rejected.map((record) => ({ messageId: record.jobId, reason: record.reason, why: whyFiled(record, id), record }));
  return { ...(job ? { job } : {}), filed };
}

/** A record as `jobs show --json` prints it: its result the value the task returned (the table keeps its JSON text). */
export function shownJob(record: JobRecord): ShownJob {
  const { result, ...rest } = record;
  return result === undefined ? rest : { ...rest, result: JSON.parse(result) as unknown };
}

/** `jobs show ID --json`'s one answer (see {@link JobShowAnswer}) from what the lookup found and the job's relations. */
export function jobShowAnswer(id: string, version: string, lookup: JobLookup, relations?: JobRelations): JobShowAnswer {
  const inFlow = relations?.dependencies !== undefined || relations?.dependents !== undefined;
  return {
    id,
    version,
    job: lookup.job ? shownJob(lookup.job) : null,
    ...(lookup.job && inFlow ? { relations } : {}),
    filedUnderMessageIds: lookup.filed,
  };
}
