import { createHash } from 'node:crypto';
import { ConfigError } from '../errors';
import { accountAndRegionOf } from './queue-url';
import { BUCKET_NAME_PATTERN } from './s3-limits';

/** Every claim-checked payload's key starts here, in the version's bucket: the dispatcher reads nothing else. */
export const PAYLOAD_PREFIX = 'payloads/';
/** Payloads whose encoded envelope is larger go to the version's bucket (config `payloads.offloadAboveBytes`). */
export const DEFAULT_OFFLOAD_ABOVE_BYTES = 200_000;

/** The longest `<app>-<version>` kept whole in a bucket name; longer ones are shortened with a hash. */
const STEM_LIMIT = 31;

/**
 * The version's payload bucket: `<app>-<version>-<account>-<region>`. Bucket names are global, so
 * the account and region are in it (the same version deployed in two regions or accounts gets two
 * buckets); an `<app>-<version>` longer than 31 characters is cut to 24 and given 6 hex digits of
 * its SHA-256, so every name fits S3's 63. Account and region may be CDK tokens (the stack joins
 * them at deploy); app and version are always known, which keeps the hash computable at synth.
 */
export function payloadBucketName(app: string, version: string, account: string, region: string): string {
  const whole = `${app}-${version}`;
  const stem =
    whole.length <= STEM_LIMIT
      ? whole
      : `${whole.slice(0, 24).replace(/-+$/, '')}-${createHash('sha256').update(whole).digest('hex').slice(0, 6)}`;
  return `${stem}-${account}-${region}`;
}

/**
 * The version's payload bucket in the account and region of one of its queue URLs
 * (`https://sqs.<region>.amazonaws.com/<account>/<name>`), as a publisher finds it without a lookup.
 * Throws {@link ConfigError} naming `payloads.bucket` for a URL that names neither (an emulator's).
 */
export function payloadBucketNear(queueUrl: string, app: string, version: string): string {
  const at = accountAndRegionOf(queueUrl);
  if (!at) throw new ConfigError('payloads.bucket', queueUrl, 'a queue URL naming a region and account, or an explicit payloads.bucket');
  const name = payloadBucketName(app, version, at.account, at.region);
  if (!BUCKET_NAME_PATTERN.test(name)) throw new ConfigError('payloads.bucket', name, 'a valid S3 bucket name');
  return name;
}

/**
 * A payload's object key: `payloads/<job id, URI-encoded>/<sha256>.json`. Derived from the job and
 * the content, so publishing the same job again writes the same object (a retried publish leaves no
 * orphan) and the key says whose payload it is.
 */
export function payloadKey(jobId: string, sha256: string): string {
  return `${PAYLOAD_PREFIX}${encodeURIComponent(jobId)}/${sha256}.json`;
}

/**
 * Whether `key` is `jobId`'s own payload object, the one key the publisher derives for it: the
 * only object a job's end deletes. A pointer to another job's object, or to an event's (which
 * every subscriber's job reads), is read but never deleted by this job.
 */
export function isOwnPayloadKey(jobId: string, key: string): boolean {
  const own = `${PAYLOAD_PREFIX}${encodeURIComponent(jobId)}/`;
  return key.startsWith(own) && /^[0-9a-f]{64}\.json$/.test(key.slice(own.length));
}

/**
 * An event's payload key: `payloads/events/<event id, URI-encoded>/<sha256>.json`. One object for
 * every subscriber's job (an encoded job id has no `/`, so no job's own key is under `events/`);
 * the bucket's lifecycle expires it.
 */
export function eventPayloadKey(eventId: string, sha256: string): string {
  return `${EVENT_PAYLOAD_PREFIX}${encodeURIComponent(eventId)}/${sha256}.json`;
}

/** Where events' payloads are kept, under the payloads: the only keys a subscriber of another app reads in that app's bucket. */
export const EVENT_PAYLOAD_PREFIX = `${PAYLOAD_PREFIX}events/`;

/**
 * The buckets of the apps whose events this one subscribes to (config `subscriptions`): an event's
 * claim check points into its emitter's bucket. Each is in the account and region of the
 * subscription's `topicArn`, or else of this version's own queues (`queueUrl`); none for a
 * subscription whose account cannot be named (an emulator's URL without one).
 */
export function subscribedEventBuckets(
  subscriptions: ReadonlyArray<{ readonly app: string; readonly version: string; readonly topicArn?: string }>,
  queueUrl: string,
): string[] {
  const own = accountAndRegionOf(queueUrl);
  return subscriptions.flatMap((sub) => {
    const arn = sub.topicArn?.split(':');
    const at = arn ? { region: arn[3] as string, account: arn[4] as string } : own;
    return at ? [payloadBucketName(sub.app, sub.version, at.account, at.region)] : [];
  });
}

/** Results too large for a job record are kept under this prefix of the version's bucket. */
export const RESULT_PREFIX = 'results/';

/** A result's key: `results/<job id, URI-encoded>/<sha256>.json` (an attempt that returns the same value writes the same object). */
export function resultKey(jobId: string, sha256: string): string {
  return `${RESULT_PREFIX}${encodeURIComponent(jobId)}/${sha256}.json`;
}

/**
 * Days an object stays in the payload bucket before its lifecycle expires it: the job retention,
 * but never less than the archive's 14 days (a job archived on its last day can still be replayed
 * with its payload) nor than the longest a message waits in its queue. An object whose job
 * succeeded or was cancelled is deleted at once; this is for the rest.
 */
export function payloadExpiryDays(config: {
  // Structural (the config module imports this one's default threshold, so no import back).
  readonly tracking: { readonly jobRetentionDays: number };
  readonly queues: ReadonlyArray<{ readonly retentionSeconds: number }>;
}): number {
  const longestQueueDays = Math.max(...config.queues.map((q) => Math.ceil(q.retentionSeconds / 86_400)));
  return Math.max(config.tracking.jobRetentionDays, ARCHIVE_RETENTION_DAYS, longestQueueDays + 1);
}

/** The archive queue keeps a message this long (SQS's longest retention). */
const ARCHIVE_RETENTION_DAYS = 14;
