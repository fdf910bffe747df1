/** A job's log lines as the operator's views read them (pure types: the dashboard's page imports them). */

/** One log line about a job: a line its body wrote (`ctx.log`, `console`: `source` `task`) or one the dispatcher wrote naming it. */
export interface JobLogEntry {
  /** ISO time the line was written. */
  readonly time: string;
  readonly level: string;
  readonly message: string;
  readonly source: 'task' | 'dispatcher';
  /** The attempt that wrote it (a task's lines carry it). */
  readonly attempt?: number;
  /** The line's other fields (its own, beyond the job's id, attempt, task and queue). */
  readonly fields: Readonly<Record<string, unknown>>;
}

/** Where a version's job log lines are read from: dev's log file locally, CloudWatch Logs on AWS. */
export interface JobLogReader {
  /** Where the lines come from, for a person (`.taskworker/dev.log`, `CloudWatch Logs /aws/lambda/…`). */
  readonly where: string;
  /** The job's lines written between `from` and `to` (epoch ms), oldest first. */
  linesOf(jobId: string, window: { readonly from: number; readonly to: number }): Promise<JobLogEntry[]>;
}
