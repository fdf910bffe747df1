import type * as CloudWatch from '@aws-sdk/client-cloudwatch';
import type { OldestAge, RecentInvocations } from '../ports';

/**
 * `status`'s age of the oldest message per queue, from CloudWatch: only against AWS (an endpoint
 * override means emulators, which have no CloudWatch), and only where `@aws-sdk/client-cloudwatch`
 * is installed (an optional peer: a publisher does not need it). Undefined otherwise.
 */
export function cloudWatchOldestAge(): OldestAge | undefined {
  const cloudwatch = loadCloudWatch();
  if (!cloudwatch) return undefined;
  return (names) => oldestAgeFromCloudWatch(cloudwatch.sdk, cloudwatch.client, names);
}

/** The CloudWatch SDK and a client, against AWS only and where the optional peer is installed. */
function loadCloudWatch(): { sdk: typeof CloudWatch; client: CloudWatch.CloudWatchClient } | undefined {
  if (process.env.AWS_ENDPOINT_URL_SQS || process.env.AWS_ENDPOINT_URL) return undefined;
  let sdk: typeof CloudWatch;
  try {
    sdk = require('@aws-sdk/client-cloudwatch') as typeof CloudWatch;
  } catch {
    return undefined;
  }
  return { sdk, client: new sdk.CloudWatchClient({}) };
}

/**
 * The dashboard's "recent invocations" of a deployed version's function, from CloudWatch's Lambda
 * metrics; undefined where `status` has no CloudWatch either.
 */
export function cloudWatchRecentInvocations(): RecentInvocations | undefined {
  const cloudwatch = loadCloudWatch();
  if (!cloudwatch) return undefined;
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
