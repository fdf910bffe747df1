/**
 * A job's log lines on AWS: a CloudWatch Logs Insights query by job id over the dispatcher
 * function's log group (the doorbells write to the same group), for the job's lifetime. Logs
 * Insights bills the bytes the query scans ($0.005 per GB in us-east-1): every line the version
 * wrote in that window, so a job that ran for a minute in a busy version costs what that minute's
 * logs weigh. Each line is a JSON log event (lib/run/job-log.ts), so `jobId` is a field Logs
 * Insights discovers by itself.
 */
import type * as CloudWatchLogs from '@aws-sdk/client-cloudwatch-logs';
import type { JobLogEntry, JobLogReader } from '../track/job-logs';
import { jobLogEntryOf } from './file-job-logs';

export interface CloudWatchLogsAccess {
  readonly sdk: typeof CloudWatchLogs;
  readonly client: CloudWatchLogs.CloudWatchLogsClient;
}

/** Lines a query returns at most (Logs Insights' own cap is 10,000). */
export const MAX_JOB_LOG_LINES = 1_000;
/** How long a query is waited for before it is given up (and stopped). */
const QUERY_TIMEOUT_MS = 30_000;
const POLL_MS = 500;

/** The Logs Insights query for one job's lines, oldest first. */
export function jobLogQuery(jobId: string): string {
  // Job ids are printable and have no spaces; JSON's quoting is a valid Insights string literal. A
  // batch call's lines name their jobs in an array (`jobIds`), found as the quoted id in the message
  // (a regex, its special characters escaped); the reader checks each line's fields again.
  const quoted = JSON.stringify(jobId).replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  return `fields @timestamp, @message | filter jobId = ${JSON.stringify(jobId)} or @message like /${quoted}/ | sort @timestamp asc | limit ${MAX_JOB_LOG_LINES}`;
}

/** Thrown when a query ends other than complete (failed, cancelled, timed out) or is not done in time. */
export class JobLogQueryError extends Error {
  constructor(logGroup: string, status: string) {
    super(`the Logs Insights query over ${logGroup} ended ${status}`);
    this.name = 'JobLogQueryError';
  }
}

export function insightsJobLogs(access: CloudWatchLogsAccess, logGroup: () => Promise<string>, sleep = defaultSleep): JobLogReader {
  const { sdk, client } = access;
  return {
    where: 'CloudWatch Logs (the dispatcher function’s log group)',
    async linesOf(jobId, window) {
      const group = await logGroup();
      const started = await client.send(
        new sdk.StartQueryCommand({
          logGroupName: group,
          startTime: Math.floor(window.from / 1000),
          endTime: Math.ceil(window.to / 1000),
          queryString: jobLogQuery(jobId),
          limit: MAX_JOB_LOG_LINES,
        }),
      );
      const queryId = started.queryId as string;
      const giveUpAt = Date.now() + QUERY_TIMEOUT_MS;
      for (;;) {
        const answer = await client.send(new sdk.GetQueryResultsCommand({ queryId }));
        const status = answer.status ?? 'Unknown';
        if (status === 'Complete') return entriesOf(answer.results ?? [], jobId);
        if (status !== 'Running' && status !== 'Scheduled') throw new JobLogQueryError(group, status);
        if (Date.now() > giveUpAt) {
          await client.send(new sdk.StopQueryCommand({ queryId })).catch(() => undefined);
          throw new JobLogQueryError(group, `unfinished after ${QUERY_TIMEOUT_MS / 1000} s`);
        }
        await sleep(POLL_MS);
      }
    },
  };
}

function entriesOf(rows: readonly (readonly CloudWatchLogs.ResultField[])[], jobId: string): JobLogEntry[] {
  const entries: JobLogEntry[] = [];
  for (const row of rows) {
    const message = row.find((f) => f.field === '@message')?.value;
    const entry = message === undefined ? undefined : jobLogEntryOf(message.trim(), jobId);
    if (entry) entries.push(entry);
  }
  return entries;
}

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
