import type * as CloudWatch from '@aws-sdk/client-cloudwatch';
import type { OldestAge } from '../ports';

/**
 * `status`'s age of the oldest message per queue, from CloudWatch: only against AWS (an endpoint
 * override means emulators, which have no CloudWatch), and only where `@aws-sdk/client-cloudwatch`
 * is installed (an optional peer: a publisher does not need it). Undefined otherwise.
 */
export function cloudWatchOldestAge(): OldestAge | undefined {
  if (process.env.AWS_ENDPOINT_URL_SQS || process.env.AWS_ENDPOINT_URL) return undefined;
  let sdk: typeof CloudWatch;
  try {
    sdk = require('@aws-sdk/client-cloudwatch') as typeof CloudWatch;
  } catch {
    return undefined;
  }
  const client = new sdk.CloudWatchClient({});
  return (names) => oldestAgeFromCloudWatch(sdk, client, names);
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
