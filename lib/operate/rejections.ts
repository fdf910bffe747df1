/**
 * Ids a publisher gave, findable when their message never ran as that job: a message archived for
 * its envelope (unknown task, id conflict, malformed with a readable id) keeps its record under its
 * own SQS message id, filed under the id it carried ({@link JobStore.rejectionsFor}). `jobs show ID`,
 * and the dashboard's job page, list those records beside (never merged into) the job named ID.
 */
import type { JobRecord, JobStore } from '../track/model';

/** A record filed under a message id because of its envelope, and why it is filed there. */
export interface FiledRejection {
  /** The SQS message id the record is kept under (`jobs show` it for its full record). */
  readonly messageId: string;
  readonly reason: JobRecord['reason'];
  /** Why the message never ran as the job it named, in words. */
  readonly why: string;
  readonly record: JobRecord;
}

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
export async function lookUpJob(jobs: JobStore, id: string): Promise<JobLookup> {
  const [job, rejected] = await Promise.all([jobs.get(id), jobs.rejectionsFor(id)]);
  const filed = rejected.map((record) => ({ messageId: record.jobId, reason: record.reason, why: whyFiled(record, id), record }));
  return { ...(job ? { job } : {}), filed };
}
