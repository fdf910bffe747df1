/** What a publisher takes and what it answers: its options, a publish's and an emit's, and what they return. */
import type { DynamoClientOption, S3ClientOption, SnsClientOption, SqsClientOption } from '../aws/clients';
import type { Clock } from '../clock';
import type { TaskworkerConfig, TaskworkerConfigInput } from '../config/app-config';
import { DependencyError, PublishOptionError } from '../errors';
import type { EventBus, PayloadStore, QueueClient, QueueUrls } from '../ports';
import type { TaskDefinition } from '../tasks/task';
import type { JobStore } from '../track/job-stores';
import type { DependencyFailurePolicy } from '../wire/envelope';

export interface PublishOptions {
  /** Configured queue to publish to. @defaultValue the task's own queue */
  readonly queue?: string;
  /**
   * Seconds before the job may start, up to a year. Up to 900 it waits in its queue (SQS
   * `DelaySeconds`); beyond, the dispatcher parks it in the jobs table until it is due. Either way,
   * on a queue tracked `full` the publisher records it `scheduled` with its due time as it publishes
   * it (one write; needs `dynamodb:UpdateItem` on the jobs table, `grantPublish(role, { delay: true })`),
   * so it is listed and cancellable with {@link Publisher.cancel} at once. @defaultValue 0
   */
  readonly delaySeconds?: number;
  /** When the job may start, instead of `delaySeconds`: up to a year ahead; a past time runs now. */
  readonly runAt?: Date;
  /**
   * After this the job must not start: an attempt that would start later (the first, a retry, a
   * delayed or waiting job come due) is not run, and the job is archived `expired` (`onArchived`
   * hears of it; `taskworker archive replay` runs it anyway, without its expiry). Must leave time
   * after the job may start. Celery's `expires`. @defaultValue never
   */
  readonly expiresAt?: Date;
  /** Any JSON, handed to the task as `ctx.appData`. */
  readonly appData?: unknown;
  /** Job id (1..128 printable ASCII). @defaultValue a random UUID */
  readonly id?: string;
  /**
   * Jobs (ids, or what `publish` returned; at most 100) this one waits for: it is kept `waiting`
   * and sent to its queue once every one has succeeded (see `onDependencyFailure`). Each must be
   * known (published before, or earlier in the same `publishBatch`) and tracked `full`, as must
   * this job's queue; a dependency that is unknown, the job itself, or closes a cycle is refused
   * with a {@link DependencyError} naming it.
   */
  readonly dependsOn?: ReadonlyArray<string | Pick<Published, 'jobId'>>;
  /** `fail` (default): a dependency that does not succeed archives this job (`dependency-failed`), and its dependents in turn. `ignore`: it runs once all have ended, their outcomes in `ctx.dependencies`. */
  readonly onDependencyFailure?: DependencyFailurePolicy;
  /** Labels to find the job by (`taskworker jobs list --tag T`): at most 10, each 1..64 printable ASCII characters. */
  readonly tags?: readonly string[];
  /**
   * What the job is about, in the app's words (`user-42`, `doc:7`): 1..128 printable characters,
   * kept on its record and in its envelope. On a task with a `unique` rule, a job of the same key
   * published inside the window while the first is live is not sent: the publish answers with the
   * first job's id and `deduplicated: true`. On a task with a `debounce` rule, the key's pending job
   * runs once with the last payload: a publish while one is pending answers with its id and
   * `debounced: true`. See docs/keys.md.
   */
  readonly key?: string;
  /**
   * The W3C trace context the job carries (its `traceparent` message attribute), instead of the
   * active OpenTelemetry context's: `00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>`; anything
   * else is a {@link PublishOptionError} naming it. Without it the publish span's context is sent
   * (where `@opentelemetry/api` is installed and a span is active or a provider registered).
   */
  readonly traceparent?: string;
  /** Vendor trace state sent beside `traceparent` (its `tracestate` attribute; at most 512 characters). */
  readonly tracestate?: string;
  /** @internal A fan-in's callback (see {@link Publisher.chord}): the members it awaits. */
  readonly awaits?: number;
  /** @internal A fan-in's member (see {@link Publisher.chord}). */
  readonly memberOf?: { readonly id: string; readonly size: number };
}

export interface EmitOptions {
  /**
   * The event's id (1..128 printable ASCII): each subscriber's job is `<id>/<task>`, so emitting
   * the same id again runs no subscriber twice (on queues tracked `full`). @defaultValue a random UUID
   */
  readonly id?: string;
  /** Any JSON, handed to every subscriber as `ctx.appData`. */
  readonly appData?: unknown;
  /** The W3C trace context the event carries to every subscriber, instead of the active context's (see {@link PublishOptions.traceparent}). */
  readonly traceparent?: string;
  readonly tracestate?: string;
}

export interface Emitted {
  readonly eventId: string;
  /** The SNS message id of the one publish. */
  readonly messageId: string;
  readonly topicArn: string;
}

export interface PublishItem<P = unknown> {
  readonly task: TaskDefinition<P> | string;
  readonly payload: P;
  readonly options?: PublishOptions;
}

export interface Published {
  /** The job's id; when `deduplicated`, the id of the job it joined. */
  readonly jobId: string;
  /**
   * The SQS message id; empty when nothing was sent: `deduplicated`, `debounced`, or a job of an
   * `ordered` task published after its key's turn, parked in the key's line until its turn comes.
   */
  readonly messageId: string;
  readonly queue: string;
  /** When the job may start, for jobs published to run later (epoch ms). */
  readonly runAt?: number;
  /** True when a live job of the same task and key (a `unique` task) was found: nothing was sent, `jobId` names that job. */
  readonly deduplicated?: true;
  /**
   * True when the publish joined its key's pending job (a `debounce` task): nothing was sent, `jobId`
   * names that job, which now runs with this publish's payload unless a later one joins, and `runAt`
   * is when it is due as this publish left it. A publish that opens a cycle has no flag: its own job
   * is sent, due `period` later.
   */
  readonly debounced?: true;
  /**
   * True when the job (an `ordered` task's, published behind its key's turn) was parked in its key's
   * line rather than sent: it is sent when the job before it ends. `messageId` is then empty.
   */
  readonly inLine?: true;
}

export type PublisherOptions = {
  /** The app config (the same module the stack and dispatcher use). */
  readonly config: TaskworkerConfigInput | TaskworkerConfig;
  /** Release version this publisher is pinned to, e.g. `v42`. */
  readonly version: string;
  /** Task definitions this publisher knows: their queues and time limits are checked at publish. */
  readonly tasks?: readonly TaskDefinition[];
  /**
   * Give jobs sent to queues tracked `full` a `queued` record in the version's jobs table
   * (`<app>-<version>-jobs`), so `taskworker jobs show` covers them from the moment they are
   * published. Costs one write per job and needs `dynamodb:UpdateItem` on that table
   * (`TaskworkerVersion.grantPublish(role, { recordQueued: true })`). `dynamo` configures its client.
   * @defaultValue false
   */
  readonly recordQueued?: boolean;
  readonly dynamo?: DynamoClientOption;
  /**
   * The job store to use instead of the version's table (tests, fakes): it records `queued` jobs
   * unless `recordQueued` is `false`, and serves cancel, results, dependencies and tags.
   */
  readonly jobs?: JobStore;
  readonly clock?: Clock;
  /**
   * Where {@link Publisher.emit} publishes: the version's topic (`<app>-<version>-events`, found in
   * the account and region of the version's queues unless `topicArn` is given), through SNS (`sns`
   * configures its client) or another {@link EventBus}. Needs `sns:Publish` on the topic
   * (`grantPublish(role, { events: true })`).
   */
  readonly events?: { readonly topicArn?: string; readonly sns?: SnsClientOption; readonly bus?: EventBus };
  /**
   * Where payloads over the config's `payloads.offloadAboveBytes` (200 KB) go: one PutObject each to
   * the version's bucket (`<app>-<version>-<account>-<region>`, found in the account and region of
   * the version's queues unless `bucket` is given), under `payloads/`, through S3 (`s3` configures its
   * client; needs the optional peer `@aws-sdk/client-s3`) or another {@link PayloadStore}. Needs
   * `s3:PutObject` on that prefix (`grantPublish(role, { largePayloads: true })`).
   */
  readonly payloads?: { readonly bucket?: string; readonly s3?: S3ClientOption; readonly store?: PayloadStore };
} & (
  | { readonly queues: QueueClient; readonly urls: QueueUrls; readonly sqs?: never }
  | { readonly sqs?: SqsClientOption; readonly queues?: never; readonly urls?: never }
);

/** What {@link Publisher.forLocalDev} takes: the rest comes from the running `taskworker dev`. */
export interface LocalDevPublisherOptions {
  /** The app config (the one the dev runs). */
  readonly config: TaskworkerConfigInput | TaskworkerConfig;
  /** @defaultValue the version the dev runs (`dev` unless it was started with `--version`) */
  readonly version?: string;
  readonly tasks?: readonly TaskDefinition[];
  /** Where to look for the dev: this directory and those above it. @defaultValue the working directory */
  readonly from?: string;
  /** Give jobs `queued` records, as the dev's own publisher does. @defaultValue true */
  readonly recordQueued?: boolean;
  readonly clock?: Clock;
}
