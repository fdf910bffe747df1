/**
 * A job's log lines (`taskworker jobs logs ID`, the job page's Logs): what its body wrote with
 * `ctx.log` or `console` and what the dispatcher logged naming it, from the version's
 * {@link JobLogReader} — dev's log file locally, CloudWatch Logs on AWS — over the job's lifetime
 * as its record tells it (a minute either side), or the last day for a job with no record.
 */
import { TaskworkerError } from '../errors';
import { TERMINAL_STATES } from '../policy/job-rules';
import type { JobLogs } from './answers';
import type { OperatorContext } from './operator-context';

export type { JobLogs } from './answers';

/** Read before a job's publish and after its end: the clocks of publisher, dispatcher and log service differ a little. */
const MARGIN_MS = 60_000;
/** The window for a job with no record (unknown, or expired). */
const NO_RECORD_WINDOW_MS = 24 * 3_600_000;

/** Thrown where this version has no place its job logs can be read from. */
export class JobLogsUnavailableError extends TaskworkerError {
  constructor(version: string) {
    super(
      `version ${version}'s job logs cannot be read here: locally they are in a running taskworker dev's log file; on AWS reading them needs the CloudWatch Logs client (npm install @aws-sdk/client-cloudwatch-logs)`,
    );
    this.name = 'JobLogsUnavailableError';
  }
}

export async function jobLogs(ctx: OperatorContext, jobId: string): Promise<JobLogs> {
  if (!ctx.jobLogs) throw new JobLogsUnavailableError(ctx.version);
  const now = ctx.clock.now();
  const record = await ctx.jobs.get(jobId);
  const ended = record !== undefined && TERMINAL_STATES.includes(record.state);
  const from = record ? Math.min(record.publishedAt ?? record.updatedAt, record.updatedAt) - MARGIN_MS : now - NO_RECORD_WINDOW_MS;
  const to = ended && record ? (record.finishedAt ?? record.updatedAt) + MARGIN_MS : now + MARGIN_MS;
  const lines = await ctx.jobLogs.linesOf(jobId, { from, to });
  return { jobId, where: ctx.jobLogs.where, from, to, ended, lines };
}
