/**
 * taskworker: a task queue on AWS Lambda, SQS and DynamoDB.
 * Task modules import `defineTask`; publishers use `Publisher`; config files use `defineConfig`.
 */
export { ARCHIVE_REASONS, type ArchiveReason, type ArchiveRecord, readArchiveRecord } from './archive';
export { type BackoffPolicy, DEFAULT_BACKOFF, retryDelaySeconds } from './backoff';
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
  tableNames,
} from './config';
export { type DecodedJob, decodeEnvelope, type EnvelopeV1, encodeEnvelope, MAX_BODY_BYTES } from './envelope';
export * from './errors';
export { type Published, Publisher, type PublisherOptions, type PublishItem, type PublishOptions } from './publisher';
export { seededRandom } from './random';
export { trackingFor } from './runtime';
export { defineTask, type TaskContext, type TaskDefinition, type TaskOptions } from './task';
export type { JobRecord, JobState, JobStore, StatsStore } from './tracking/model';
