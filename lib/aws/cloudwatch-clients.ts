/**
 * CloudWatch for the operator's views, against AWS only (an endpoint override means emulators, which
 * have no CloudWatch) and only where `@aws-sdk/client-cloudwatch` is installed (an optional peer: a
 * publisher does not need it). Each view is undefined otherwise.
 */
import type * as CloudWatch from '@aws-sdk/client-cloudwatch';
import { type CloudWatchAccess, oldestAgeOn, recentInvocationsOn, throughputOn } from '../adapters/cloudwatch';
import type { MetricsThroughput } from '../policy/throughput';
import type { OldestAge, RecentInvocations } from '../ports';

/** `status`'s age of the oldest message per queue, from CloudWatch. */
export function cloudWatchOldestAge(): OldestAge | undefined {
  const cloudwatch = loadCloudWatch();
  if (!cloudwatch) return undefined;
  return oldestAgeOn(cloudwatch);
}

/** The CloudWatch SDK and a client, against AWS only and where the optional peer is installed. */
function loadCloudWatch(): CloudWatchAccess | undefined {
  if (process.env.AWS_ENDPOINT_URL_SQS || process.env.AWS_ENDPOINT_URL) return undefined;
  let sdk: typeof CloudWatch;
  try {
    sdk = require('@aws-sdk/client-cloudwatch') as typeof CloudWatch;
  } catch {
    return undefined;
  }
  return { sdk, client: new sdk.CloudWatchClient({}) };
}

/** The dashboard's "recent invocations" of a deployed version's function, from CloudWatch's Lambda metrics. */
export function cloudWatchRecentInvocations(): RecentInvocations | undefined {
  const cloudwatch = loadCloudWatch();
  if (!cloudwatch) return undefined;
  return recentInvocationsOn(cloudwatch);
}

/** The overview's throughput from the dispatcher's own EMF metrics (see {@link throughputOn}). */
export function cloudWatchThroughput(): MetricsThroughput | undefined {
  const cloudwatch = loadCloudWatch();
  if (!cloudwatch) return undefined;
  return throughputOn(cloudwatch);
}
