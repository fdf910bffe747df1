import type * as CloudWatch from '@aws-sdk/client-cloudwatch';
import { type MetricsThroughput, minuteKey, NO_COUNTS } from '../policy/throughput';
import type { OldestAge, RecentInvocations } from '../ports';
import type { MinuteCounts } from '../track/stats-store';
import { JOB_METRICS, METRIC_DIMENSIONS, METRICS_NAMESPACE } from '../wire/metric-names';

/** The CloudWatch SDK (`@aws-sdk/client-cloudwatch`, an optional peer) and a client on it (lib/aws/cloudwatch-clients.ts). */
export interface CloudWatchAccess {
  readonly sdk: typeof CloudWatch;
  readonly client: CloudWatch.CloudWatchClient;
}

/** `status`'s age of the oldest message per queue, from CloudWatch. */
export function oldestAgeOn(cloudwatch: CloudWatchAccess): OldestAge {
  return (names) => oldestAgeFromCloudWatch(cloudwatch.sdk, cloudwatch.client, names);
}

/** The dashboard's "recent invocations" of a deployed version's function, from CloudWatch's Lambda metrics. */
export function recentInvocationsOn(cloudwatch: CloudWatchAccess): RecentInvocations {
  const { sdk, client } = cloudwatch;
  return async (functionName, minutes) => {
    const end = new Date();
    const query = (id: string, metric: string, stat: string) => ({
      Id: id,
      MetricStat: {
        Metric: { Namespace: 'AWS/Lambda', MetricName: metric, Dimensions: [{ Name: 'FunctionName', Value: functionName }] },
        Period: minutes * 60,
        Stat: stat,
      },
    });
    const out = await client.send(
      new sdk.GetMetricDataCommand({
        StartTime: new Date(end.getTime() - minutes * 60_000),
        EndTime: end,
        MetricDataQueries: [
          query('inv', 'Invocations', 'Sum'),
          query('err', 'Errors', 'Sum'),
          query('conc', 'ConcurrentExecutions', 'Maximum'),
        ],
      }),
    );
    return recentInvocationsOf(functionName, minutes, out.MetricDataResults ?? []);
  };
}

/** Reads GetMetricData's answer: a metric with no datapoint in the window counts 0. */
export function recentInvocationsOf(
  functionName: string,
  minutes: number,
  results: ReadonlyArray<{ Id?: string | undefined; Values?: number[] | undefined }>,
): { functionName: string; minutes: number; invocations: number; errors: number; maxConcurrent: number } {
  const total = (id: string) => (results.find((r) => r.Id === id)?.Values ?? []).reduce((n, v) => n + v, 0);
  const max = (id: string) => Math.max(0, ...(results.find((r) => r.Id === id)?.Values ?? []));
  return { functionName, minutes, invocations: total('inv'), errors: total('err'), maxConcurrent: max('conc') };
}

/** ApproximateAgeOfOldestMessage (max over the last 5 minutes) per queue, seconds. */
async function oldestAgeFromCloudWatch(
  sdk: typeof CloudWatch,
  cloudwatch: CloudWatch.CloudWatchClient,
  names: readonly string[],
): Promise<Record<string, number | undefined>> {
  const end = new Date();
  const start = new Date(end.getTime() - 5 * 60_000);
  const out = await cloudwatch.send(
    new sdk.GetMetricDataCommand({
      StartTime: start,
      EndTime: end,
      MetricDataQueries: names.map((name, i) => ({
        Id: `q${i}`,
        MetricStat: {
          Metric: { Namespace: 'AWS/SQS', MetricName: 'ApproximateAgeOfOldestMessage', Dimensions: [{ Name: 'QueueName', Value: name }] },
          Period: 60,
          Stat: 'Maximum',
        },
      })),
    }),
  );
  const ages: Record<string, number | undefined> = {};
  names.forEach((name, i) => {
    const result = out.MetricDataResults?.find((r) => r.Id === `q${i}`);
    ages[name] = result?.Values?.[0];
  });
  return ages;
}

/**
 * The overview's throughput from the dispatcher's own EMF metrics: per queue and minute, the Sum of
 * `JobsSucceeded` and `JobsArchived` and the SampleCount of `RunTime` (one sample per job that ran),
 * dimensions service, version and queue; one GetMetricData for up to 500 queries.
 */
export function throughputOn(cloudwatch: CloudWatchAccess): MetricsThroughput {
  const { sdk, client } = cloudwatch;
  return async ({ service, version, queues, minutes }) => {
    const first = minutes[0];
    const last = minutes.at(-1);
    if (first === undefined || last === undefined) return {};
    const query = (id: string, queue: string, metric: string, stat: string) => ({
      Id: id,
      MetricStat: {
        Metric: {
          Namespace: METRICS_NAMESPACE,
          MetricName: metric,
          Dimensions: [
            { Name: METRIC_DIMENSIONS.service, Value: service },
            { Name: METRIC_DIMENSIONS.version, Value: version },
            { Name: METRIC_DIMENSIONS.queue, Value: queue },
          ],
        },
        Period: 60,
        Stat: stat,
      },
    });
    const results: Array<{ Id?: string | undefined; Timestamps?: Date[] | undefined; Values?: number[] | undefined }> = [];
    let nextToken: string | undefined;
    do {
      const out = await client.send(
        new sdk.GetMetricDataCommand({
          StartTime: new Date(`${first}:00Z`),
          EndTime: new Date(new Date(`${last}:00Z`).getTime() + 60_000),
          MetricDataQueries: queues.flatMap((queue, i) => [
            query(`s${i}`, queue, JOB_METRICS.runTime, 'SampleCount'),
            query(`o${i}`, queue, JOB_METRICS.succeeded, 'Sum'),
            query(`a${i}`, queue, JOB_METRICS.archived, 'Sum'),
          ]),
          ...(nextToken ? { NextToken: nextToken } : {}),
        }),
      );
      results.push(...(out.MetricDataResults ?? []));
      nextToken = out.NextToken;
    } while (nextToken);
    return throughputOf(queues, minutes, results);
  };
}

/** Reads GetMetricData's answer into per-queue minutes; a minute with no datapoint counts 0. */
export function throughputOf(
  queues: readonly string[],
  minutes: readonly string[],
  results: ReadonlyArray<{ Id?: string | undefined; Timestamps?: Date[] | undefined; Values?: number[] | undefined }>,
): Record<string, MinuteCounts[]> {
  const out: Record<string, MinuteCounts[]> = {};
  queues.forEach((queue, i) => {
    const byMinute = new Map<string, MinuteCounts>(minutes.map((m) => [m, NO_COUNTS]));
    const take = (id: string, field: keyof MinuteCounts) => {
      for (const r of results.filter((x) => x.Id === id)) {
        (r.Timestamps ?? []).forEach((t, j) => {
          const minute = minuteKey(t.getTime());
          const held = byMinute.get(minute);
          if (held) byMinute.set(minute, { ...held, [field]: held[field] + (r.Values?.[j] ?? 0) });
        });
      }
    };
    take(`s${i}`, 'started');
    take(`o${i}`, 'succeeded');
    take(`a${i}`, 'archived');
    out[queue] = minutes.map((m) => byMinute.get(m) ?? NO_COUNTS);
  });
  return out;
}
