/**
 * taskworker: a task queue on AWS Lambda, SQS and DynamoDB.
 * Task modules import `defineTask`; publishers use `Publisher`; config files use `defineConfig`.
 */

export { trackingFor } from './aws/wiring';
export {
  type DispatcherConfigInput,
  defineConfig,
  type IsolationMode,
  type QueueConfig,
  type QueueConfigInput,
  resolveConfig,
  type SelectorName,
  type TaskworkerConfig,
  type TaskworkerConfigInput,
  type TrackingMode,
  validateVersion,
} from './config/app-config';
export * from './errors';
export { tableNames } from './layout/tables';
export type { PayloadStore } from './ports';
export type { LocalDevPublisherOptions, Published, PublisherOptions, PublishItem, PublishOptions } from './publish/publish-options';
export { Publisher } from './publish/publisher';
export { type JobResult, resultOf, type WaitOptions } from './publish/results';
export { seededRandom } from './random';
export type { TokenResult } from './settle/step-tokens';
export { type BackoffPolicy, DEFAULT_BACKOFF, retryDelaySeconds } from './tasks/backoff';
export {
  type DebounceRule,
  type DebounceWindow,
  type DependencyOutcome,
  type Duration,
  defineTask,
  type TaskContext,
  type TaskDefinition,
  type TaskLog,
  type TaskOptions,
  type UniqueRule,
  type UniqueWindow,
} from './tasks/task';
export type { CancelResult, JobRecord, JobState } from './track/job-record';
export type { JobStore } from './track/job-stores';
export type { StatsStore } from './track/stats-store';
export { ARCHIVE_REASONS, type ArchiveReason } from './wire/archive-reasons';
export { type ArchiveRecord, readArchiveRecord } from './wire/archive-record';
export { type DecodedJob, decodeEnvelope, type EnvelopeV1, encodeEnvelope, MAX_BODY_BYTES, type PayloadRef } from './wire/envelope';
export { MAX_PAYLOAD_REF_BYTES } from './wire/payload-ref';
