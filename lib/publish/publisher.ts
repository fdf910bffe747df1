import { randomUUID } from 'node:crypto';
import type { DynamoClientOption, S3ClientOption, SnsClientOption, SqsClientOption } from '../aws/clients';
import { readDevState } from '../aws/dev-file';
import { devClients, lookUpQueueUrls, s3PayloadStore, snsEventBus, sqsQueues, versionJobStore } from '../aws/wiring';
import { claimCheckRef, putClaimCheck } from '../claim-check';
import { type Clock, systemClock } from '../clock';
import { type QueueConfig, resolveConfig, type TaskworkerConfig, type TaskworkerConfigInput, validateVersion } from '../config/app-config';
import { fitsVisibility, taskNeedMs } from '../deadlines';
import {
  DependencyError,
  type FailedPublish,
  InvalidEventPayloadError,
  LocalDevNotFoundError,
  MessageTooLargeError,
  PublishBatchError,
  PublishOptionError,
  ResultUnavailableError,
  TimeLimitExceedsVisibilityError,
  UnknownEventError,
  UnknownQueueError,
  UnknownTaskError,
} from '../errors';
import { eventPayloadKey, payloadBucketNear, payloadExpiryDays, payloadKey } from '../layout/payloads';
import { queueResourceName } from '../layout/queues';
import { bodyBytes, SQS_MESSAGE_LIMIT_BYTES } from '../layout/sqs-limits';
import { topicArnNear } from '../layout/topics';
import { type EventBus, type PayloadStore, type QueueClient, type QueueUrls, type SendEntry, silentLogger } from '../ports';
import { callWithEntryRetries } from '../retry-entries';
import type { TaskDefinition } from '../tasks/task';
import { givenTraceAttributes, type PublishSpan, startPublishSpan, type TraceOptions } from '../trace/producer';
import { publishTiming } from '../track/due';
import { closesCycle, edgesOf, propagate } from '../track/flows';
import type { CancelResult, JobRecord, JobRef, JobStore } from '../track/model';
import { jobPayloadDigest } from '../track/rules';
import {
  type DependencyFailurePolicy,
  dependencyListProblem,
  type EnvelopeV1,
  encodeEnvelope,
  JOB_ID_PATTERN,
  MAX_AWAITS,
  MAX_BODY_BYTES,
  memberId,
  TASK_NAME_PATTERN,
  tagListProblem,
} from '../wire/envelope';
import { type EventEnvelopeV1, encodeEventEnvelope, MAX_EVENT_BYTES } from '../wire/event';
import { MAX_PAYLOAD_REF_BYTES, type PayloadRef } from '../wire/payload-ref';
import { type JobResult, storedResultReader, type WaitOptions, waitForResult } from './results';

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
  readonly jobId: string;
  readonly messageId: string;
  readonly queue: string;
  /** When the job may start, for jobs published to run later (epoch ms). */
  readonly runAt?: number;
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

/** Jobs a publisher remembers having sent, to be named as dependencies before a dispatcher records them. */
const RECENT_JOBS = 10_000;

/** Marks options whose id `chain` or `chord` generated (not one the caller chose). */
const GENERATED_ID = Symbol('generated id');

/** The most SendMessageBatch accepts in one call, in entries and in total bytes. */
const BATCH_ENTRIES = 10;
const BATCH_BYTES = SQS_MESSAGE_LIMIT_BYTES;

/**
 * Publishes tasks to one release version's queues.
 * @example
 * const publisher = new Publisher({ config, version: 'v1' });
 * const { jobId } = await publisher.publish(sendEmail, { to: 'a@example.com' }, { delaySeconds: 30 });
 */
export class Publisher {
  private readonly config: TaskworkerConfig;
  private readonly version: string;
  private readonly tasks: ReadonlyMap<string, TaskDefinition>;
  private readonly clock: Clock;
  private readonly queues: QueueClient;
  private readonly resolveUrls: () => Promise<QueueUrls>;
  private readonly jobs: JobStore | undefined;
  private readonly jobStore: () => JobStore;
  private cancelStore: JobStore | undefined;
  private warnedAboutTracking = false;
  private readonly recent = new Map<string, JobRef>();
  private urls: Promise<QueueUrls> | undefined;
  private readonly eventOptions: PublisherOptions['events'];
  private eventBus: EventBus | undefined;
  private readonly payloadOptions: PublisherOptions['payloads'];
  private payloadStore: PayloadStore | undefined;

  /**
   * A publisher for the `taskworker dev` running in the working directory (or `from`) or a directory
   * above it, found as the CLI finds it (the `.taskworker/dev.json` it keeps while it runs): its
   * emulators' endpoints and region, the local credentials, and its version. Throws
   * {@link LocalDevNotFoundError} when no dev runs there. Asked for by name only: `new Publisher()`
   * never looks for a dev, so a service that publishes to AWS cannot be turned to a laptop's
   * emulators by a file in its working directory.
   * @example
   * const publisher = Publisher.forLocalDev({ config });
   * await publisher.publish('send-email', { to: 'a@example.com' }, { queue: 'default' });
   */
  static forLocalDev(options: LocalDevPublisherOptions): Publisher {
    const dev = readDevState(options.from);
    if (!dev) throw new LocalDevNotFoundError(options.from ?? process.cwd());
    const clients = devClients(dev);
    return new Publisher({
      config: options.config,
      version: options.version ?? dev.version,
      ...(options.tasks ? { tasks: options.tasks } : {}),
      ...(options.clock ? { clock: options.clock } : {}),
      recordQueued: options.recordQueued ?? true,
      sqs: clients.sqs,
      dynamo: clients.dynamo,
      events: { sns: clients.sns },
      payloads: { s3: clients.s3 },
    });
  }

  constructor(options: PublisherOptions) {
    // A resolved config is a valid input too, so this accepts either.
    this.config = resolveConfig(options.config);
    this.version = validateVersion(options.version);
    this.tasks = new Map((options.tasks ?? []).map((t) => [t.name, t]));
    this.clock = options.clock ?? systemClock;
    this.eventOptions = options.events;
    this.payloadOptions = options.payloads;
    const store = () => versionJobStore(this.config, this.version, options.dynamo);
    this.jobs = options.recordQueued === false ? undefined : (options.jobs ?? (options.recordQueued ? store() : undefined));
    this.jobStore = () => {
      this.cancelStore ??= options.jobs ?? this.jobs ?? store();
      return this.cancelStore;
    };
    if (options.queues) {
      const urls = options.urls;
      this.queues = options.queues;
      this.resolveUrls = async () => urls;
    } else {
      const sqs = sqsQueues(options.sqs);
      this.queues = sqs;
      this.resolveUrls = () => lookUpQueueUrls(sqs, this.config, this.version);
    }
  }

  /**
   * Cancels a job published to run later, until it starts (`scheduled`: its message, when it
   * arrives, is deleted unrun), or one waiting for its dependencies (`waiting`; the jobs waiting for
   * it in turn count it as failed: `fail` ones are archived, `ignore` ones run). A job a sweep has
   * handed to its queue (`queued`) is not cancelled: the result says what state it is in. A running job is asked to stop (`requested`): its
   * AbortSignal fires within a second or two, and it ends `cancelled` (its dependents count it as
   * failed). Needs `dynamodb:GetItem` and `dynamodb:UpdateItem` on the
   * version's jobs table (`TaskworkerVersion.grantPublish(role, { cancel: true })`).
   */
  async cancel(jobId: string): Promise<CancelResult> {
    if (typeof jobId !== 'string' || !JOB_ID_PATTERN.test(jobId))
      throw new PublishOptionError('jobId', jobId, '1..128 printable ASCII characters');
    const jobs = this.jobStore();
    const result = await jobs.cancel(jobId, this.clock.now());
    // The jobs waiting for it learn it will not succeed: `fail` ones are archived, `ignore` ones run.
    if (result.outcome === 'cancelled') {
      const flows = { jobs, queues: this.queues, urls: await this.queueUrls(), clock: this.clock, logger: silentLogger };
      await propagate(flows, jobId, true, edgesOf(result.record));
    }
    return result;
  }

  /**
   * Waits for a job to end: resolves with its terminal state and its result (succeeded), its reason
   * and error (archived), or `cancelled`; throws `ResultTimeoutError` with the state last seen when
   * `timeoutMs` (30 s) passes first. Polls the job's one record with backoff (100 ms doubling to
   * 2 s). Only queues tracked `full` record outcomes: for another queue it throws
   * `ResultUnavailableError` (at once when given what `publish` returned, which names the queue).
   * Needs `dynamodb:GetItem` on the jobs table (`grantPublish(role, { results: true })`); a result
   * over 1 KB, which the dispatcher kept in the version's bucket, is read from there (`s3:GetObject`
   * on its `results/`, granted with it; `@aws-sdk/client-s3` installed).
   */
  async result(job: string | Pick<Published, 'jobId' | 'queue'>, options: WaitOptions = {}): Promise<JobResult> {
    const jobId = typeof job === 'string' ? job : job.jobId;
    if (typeof jobId !== 'string' || !JOB_ID_PATTERN.test(jobId))
      throw new PublishOptionError('jobId', jobId, '1..128 printable ASCII characters');
    const untracked = (queueName: string) => {
      const queue = this.config.queues.find((q) => q.name === queueName);
      if (queue && queue.tracking !== 'full') throw new ResultUnavailableError(queue.name, queue.tracking);
    };
    if (typeof job !== 'string') untracked(job.queue);
    return waitForResult(
      this.jobStore(),
      jobId,
      this.clock,
      { ...options, check: (record) => untracked(record.queue) },
      storedResultReader(() => this.store()),
    );
  }

  /**
   * Publishes steps that run one after another: each waits for the one before (and finds its
   * result in `ctx.dependencies[0].result`). With the default `onDependencyFailure: 'fail'`, a step
   * that does not succeed archives the rest (`dependency-failed`). All on queues tracked `full`.
   */
  async chain(steps: readonly PublishItem[]): Promise<Published[]> {
    let previous: string | undefined;
    const items = steps.map((step) => {
      const id = step.options?.id ?? randomUUID();
      const generated = step.options?.id === undefined ? { [GENERATED_ID]: true } : {};
      const dependsOn = [...(step.options?.dependsOn ?? []), ...(previous !== undefined ? [previous] : [])];
      previous = id;
      return { ...step, options: { ...step.options, id, ...generated, ...(dependsOn.length > 0 ? { dependsOn } : {}) } };
    });
    return this.publishBatch(items);
  }

  /**
   * A group and its callback (Celery's chord): the members run independently; the callback runs
   * once, after the last of them has ended, with every member's outcome and result in
   * `ctx.dependencies` (member order). Members are named `<callback id>.<i>`; any number up to
   * 100,000 (each counts itself into one small shard item, never one list of all). An empty group
   * runs the callback at once. A member that does not succeed archives the callback unless its
   * `onDependencyFailure` is `ignore`.
   */
  async chord(members: readonly PublishItem[], callback: PublishItem): Promise<{ callback: Published; members: Published[] }> {
    const id = callback.options?.id ?? randomUUID();
    if (typeof id !== 'string' || !JOB_ID_PATTERN.test(id) || id.length + 1 + String(Math.max(0, members.length - 1)).length > 128) {
      throw new PublishOptionError('id', id, `a job id short enough for its members' ids (${id}.<i>, at most 128 characters)`);
    }
    if (members.length > MAX_AWAITS) throw new PublishOptionError('members', members.length, `at most ${MAX_AWAITS} members`);
    const size = members.length;
    const head: PublishItem = { ...callback, options: { ...callback.options, id, ...(size > 0 ? { awaits: size } : {}) } };
    const items: PublishItem[] = members.map((m, index) => ({
      ...m,
      options: { ...m.options, id: memberId(id, index), memberOf: { id, size } },
    }));
    const [published, ...rest] = await this.publishBatch([head, ...items]);
    return { callback: published as Published, members: rest };
  }

  /**
   * Jobs published with `tag`, newest first, in every state (queued, waiting, running, ended), from
   * the jobs table's tag index. `before` (a job's `publishedAt`) pages on. Needs
   * `dynamodb:Query` on the table's `byTag` index and `dynamodb:BatchGetItem` on the table.
   */
  async jobsByTag(tag: string, options: { limit?: number; before?: number } = {}): Promise<JobRecord[]> {
    const problem = tagListProblem([tag]);
    if (problem) throw new PublishOptionError('tag', tag, `a tag: it ${problem}`);
    return this.jobStore().jobsByTag(tag, options.limit ?? 50, options.before);
  }

  /**
   * Emits one of the app's declared events: checked by its `validate`, then published once to the
   * version's SNS topic, which delivers it to every queue subscribed to it (this app's and other
   * apps'); there each subscribed task runs once as job `<event id>/<task>`, with the payload and
   * `ctx.event`. An undeclared name ({@link UnknownEventError}), a payload `validate` refuses or
   * that is not JSON ({@link InvalidEventPayloadError}), a bad id, or a payload over 10 MiB
   * ({@link MessageTooLargeError}) is refused before anything is sent. A payload over SNS's 256 KiB
   * (or `payloads.offloadAboveBytes`) goes through the version's bucket, the event carrying a pointer.
   * @example
   * await publisher.emit('orders.created', { orderId: 'o-1', total: 42 }, { id: 'order-o-1-created' });
   */
  async emit(name: string, payload: unknown, options: EmitOptions = {}): Promise<Emitted> {
    const declared = this.config.events.find((e) => e.name === name);
    if (!declared)
      throw new UnknownEventError(
        String(name),
        this.config.events.map((e) => e.name),
      );
    const eventId = options.id ?? randomUUID();
    if (typeof eventId !== 'string' || !JOB_ID_PATTERN.test(eventId))
      throw new PublishOptionError('id', eventId, '1..128 printable ASCII characters');
    if (declared.validate) {
      try {
        declared.validate(payload);
      } catch (error) {
        throw new InvalidEventPayloadError(name, error instanceof Error ? error.message : String(error), { cause: error });
      }
    }
    const envelope: EventEnvelopeV1 & { id: string } = {
      event: name,
      id: eventId,
      source: this.config.app,
      emittedAt: this.clock.now(),
      payload,
      ...(options.appData !== undefined ? { appData: options.appData } : {}),
    };
    let body: string;
    try {
      body = encodeEventEnvelope(envelope);
    } catch (error) {
      throw new InvalidEventPayloadError(name, `not JSON: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    }
    givenTraceAttributes(options);
    if (bodyBytes(body) > Math.min(this.config.payloads.offloadAboveBytes, MAX_EVENT_BYTES)) body = await this.offloadEvent(envelope);
    const topicArn = await this.topicArn();
    this.eventBus ??= this.eventOptions?.bus ?? snsEventBus(this.eventOptions?.sns);
    // Its trace context rides as an SNS message attribute, which raw delivery passes on to each queue.
    const span = startPublishSpan('aws_sns');
    try {
      const { messageId } = await this.eventBus.publish(topicArn, body, span.attributesFor(name, options));
      span.end({ destination: topicArn.slice(topicArn.lastIndexOf(':') + 1), count: 1 });
      return { eventId, messageId, topicArn };
    } catch (error) {
      span.end({ error });
      throw error;
    }
  }

  /**
   * An event too large for SNS (or over `payloads.offloadAboveBytes`): its payload is put in the
   * version's bucket under `payloads/events/` (one object every subscriber's job reads; the lifecycle
   * expires it) and the event carries the pointer. Up to 10 MiB; larger is refused, nothing sent.
   */
  private async offloadEvent(envelope: EventEnvelopeV1 & { id: string }): Promise<string> {
    const { payload, ...rest } = envelope;
    const text = JSON.stringify(payload ?? null);
    const bytes = bodyBytes(text);
    if (bytes > MAX_PAYLOAD_REF_BYTES) throw new MessageTooLargeError(envelope.event, bytes, MAX_PAYLOAD_REF_BYTES, 'event');
    const payloadRef = claimCheckRef(this.bucketNear(await this.queueUrls()), (sha256) => eventPayloadKey(envelope.id, sha256), text);
    const pointed = encodeEventEnvelope({ ...rest, payloadRef });
    // What stays in the event (appData, ...) must fit SNS too: checked before the put, so a refused event leaves no object.
    if (bodyBytes(pointed) > MAX_EVENT_BYTES) throw new MessageTooLargeError(envelope.event, bodyBytes(pointed), MAX_EVENT_BYTES, 'event');
    await putClaimCheck(this.store(), payloadRef, text);
    return pointed;
  }

  /** The version's event topic: given, or beside the version's queues (their URL names the account and region). */
  private async topicArn(): Promise<string> {
    if (this.eventOptions?.topicArn) return this.eventOptions.topicArn;
    const urls = await this.queueUrls();
    const url = Object.values(urls.queues)[0] ?? urls.archive;
    return topicArnNear(url, this.config.app, this.version);
  }

  /** Resolved once and cached; a failed lookup is retried on the next publish. */
  private queueUrls(): Promise<QueueUrls> {
    if (!this.urls) {
      this.urls = this.resolveUrls();
      this.urls.catch(() => {
        this.urls = undefined;
      });
    }
    return this.urls;
  }

  /** Publishes one task. Throws a typed error for bad input; {@link PublishBatchError} if SQS refused it. */
  async publish<P>(task: TaskDefinition<P> | string, payload: P, options: PublishOptions = {}): Promise<Published> {
    const [published] = await this.publishBatch([{ task: task as TaskDefinition | string, payload, options }]);
    return published as Published;
  }

  /**
   * Publishes many tasks with SendMessageBatch (≤ 10 entries and ≤ 1 MiB a call). Every item is
   * validated before anything is sent. Entries SQS fails are retried; any still failing are
   * reported in a {@link PublishBatchError} with the ones that were sent — never dropped silently.
   */
  async publishBatch(items: readonly PublishItem[]): Promise<Published[]> {
    // One PRODUCER span per call; each message carries its context (lib/trace/producer.ts).
    const span = startPublishSpan('aws_sqs');
    try {
      const published = await this.sendItems(items, span);
      const queues = new Set(published.map((p) => p.queue));
      const [only] = queues;
      const destination = queues.size === 1 ? queueResourceName(this.config.app, this.version, only as string) : undefined;
      span.end({ count: published.length, ...(destination ? { destination } : {}) });
      return published;
    } catch (error) {
      span.end({ error });
      throw error;
    }
  }

  private async sendItems(items: readonly PublishItem[], span: PublishSpan): Promise<Published[]> {
    const now = this.clock.now();
    const checked = items.map((item, index) => this.prepare(item, index, now, span));
    await this.checkDependencies(checked);
    const urls = await this.queueUrls();
    const prepared = await this.offload(checked, urls);
    await this.recordAhead(prepared, now);
    const sent: Array<Published & { index: number }> = [];
    const failed: FailedPublish[] = [];
    for (const group of groupByQueue(prepared)) {
      for (const batch of chunkBySize(group)) {
        const url = urls.queues[batch[0]?.queue.name as string] as string;
        const result = await callWithEntryRetries(
          batch.map((p) => p.entry),
          (entries) => this.queues.sendBatch(url, entries),
          this.clock,
        );
        const failedIds = new Map(result.failed.map((f) => [f.id, f]));
        const messageIds = Object.assign({}, ...result.results.map((r) => r.messageIds)) as Record<string, string>;
        for (const p of batch) {
          const failure = failedIds.get(p.entry.id);
          if (failure) failed.push({ index: p.index, task: p.task, code: failure.code, message: failure.message });
          else
            sent.push({
              index: p.index,
              jobId: p.jobId,
              messageId: messageIds[p.entry.id] ?? '',
              queue: p.queue.name,
              ...(p.runAt !== undefined ? { runAt: p.runAt } : {}),
            });
        }
      }
    }
    sent.sort((a, b) => a.index - b.index);
    this.remember(prepared, sent, now);
    await this.recordSent(prepared, sent, now);
    if (failed.length > 0) throw new PublishBatchError(failed, sent);
    return sent.map(({ index: _index, ...published }) => published);
  }

  /**
   * Claim checks: each payload marked in {@link prepare} is put in the version's bucket (all at once,
   * one PutObject each, keyed by job id and content so a publish retried writes the same object),
   * and its message carries the pointer instead. After validation, before any record or send: a
   * failed put sends nothing of its job.
   */
  private async offload(prepared: readonly Prepared[], urls: QueueUrls): Promise<Prepared[]> {
    if (!prepared.some((p) => p.offload)) return [...prepared];
    const bucket = this.bucketNear(urls);
    const store = this.store();
    return Promise.all(
      prepared.map(async (p) => {
        if (!p.offload) return p;
        const { text, envelope } = p.offload;
        const payloadRef = claimCheckRef(bucket, (sha256) => payloadKey(p.jobId, sha256), text);
        const body = encodeEnvelope({ ...envelope, payloadRef });
        const bytes = bodyBytes(body);
        // What stays in the message (appData, tags, ...) must fit it too.
        if (bytes > MAX_BODY_BYTES) throw new MessageTooLargeError(p.task, bytes, MAX_BODY_BYTES);
        await putClaimCheck(store, payloadRef, text);
        const { offload: _offload, ...rest } = p;
        return { ...rest, entry: { ...p.entry, body }, bytes };
      }),
    );
  }

  /** The version's bucket: given, or named from its queue URLs (which name the account and region). */
  private bucketNear(urls: QueueUrls): string {
    return this.payloadOptions?.bucket ?? payloadBucketNear(Object.values(urls.queues)[0] ?? urls.archive, this.config.app, this.version);
  }

  /** The version's bucket's client (payloads put, results read), made on first use. */
  private store(): PayloadStore {
    this.payloadStore ??= this.payloadOptions?.store ?? s3PayloadStore(this.payloadOptions?.s3);
    return this.payloadStore;
  }

  /**
   * Written after the send: a dispatcher that claims first makes the conditional put a no-op, and
   * a failed send leaves no orphan record. A failed write costs the record, never the job.
   *
   * A job published to run later (any delay, to a queue tracked `full`) always gets its `scheduled`
   * record here, `announced` with its due time: one write per delayed publish, so `jobs show`,
   * `jobs list --state scheduled` and `jobs cancel` see it before its message is delivered. An
   * immediate one gets its `queued` record only with `recordQueued`. Jobs that wait were recorded
   * before the send ({@link recordAhead}).
   */
  private async recordSent(prepared: readonly Prepared[], sent: readonly { index: number }[], now: number): Promise<void> {
    const byIndex = new Map(prepared.map((p) => [p.index, p]));
    const tracked = sent
      .map((s) => byIndex.get(s.index))
      .filter((p): p is Prepared => p !== undefined && p.queue.tracking === 'full' && p.dependsOn.length === 0 && !p.awaits);
    const delayed = tracked.filter((p) => p.delayed);
    const immediate = this.jobs ? tracked.filter((p) => !p.delayed) : [];
    if (delayed.length === 0 && immediate.length === 0) return;
    const jobs = delayed.length > 0 ? this.jobStore() : (this.jobs as JobStore);
    const results = await Promise.allSettled(
      [...delayed, ...immediate].map(async (p) => {
        if (p.delayed) await jobs.recordScheduled({ ...this.refOf(p, now), runAt: p.runAt as number }, now);
        else await jobs.recordQueued(this.refOf(p, now), now);
        if (p.tags.length > 0) await jobs.tagJob(p.jobId, p.tags, now);
      }),
    );
    const failure = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failure && !this.warnedAboutTracking) {
      this.warnedAboutTracking = true;
      process.emitWarning(
        `taskworker: could not record published jobs (${String(failure.reason)}); the jobs were published`,
        'TaskworkerTrackingWarning',
      );
    }
  }

  /**
   * The jobs this publisher sent lately (a bounded window), so one published a moment ago can be named
   * as a dependency before any dispatcher has recorded it.
   */
  private remember(prepared: readonly Prepared[], sent: readonly { index: number }[], now: number): void {
    const byIndex = new Map(prepared.map((p) => [p.index, p]));
    for (const { index } of sent) {
      const p = byIndex.get(index);
      if (p?.queue.tracking !== 'full') continue;
      this.recent.delete(p.jobId);
      this.recent.set(p.jobId, this.refOf(p, now));
      if (this.recent.size > RECENT_JOBS) this.recent.delete(this.recent.keys().next().value as string);
    }
  }

  /**
   * Before anything is sent: a job that waits gets its `waiting` record, and a dependency published
   * in this batch its `queued` one, so a dependent published now or later finds it known at once,
   * whichever message a dispatcher takes first (the dispatcher completes the registration when the
   * message arrives). Unlike `recordQueued`, a failed write fails the publish.
   */
  private async recordAhead(prepared: readonly Prepared[], now: number): Promise<void> {
    const needed = prepared.filter((p) => p.dependsOn.length > 0 || p.awaits || prepared.some((q) => q.dependsOn.includes(p.jobId)));
    if (needed.length === 0) return;
    const jobs = this.jobStore();
    await Promise.all(
      needed.map(async (p) => {
        const job = this.refOf(p, now);
        if (p.tags.length > 0) await jobs.tagJob(p.jobId, p.tags, now);
        if (p.dependsOn.length === 0 && !p.awaits) {
          if (p.delayed) await jobs.recordScheduled({ ...job, runAt: p.runAt as number }, now);
          else await jobs.recordQueued(job, now);
          return;
        }
        const envelope = JSON.parse(p.entry.body) as { onDependencyFailure?: 'fail' | 'ignore'; tags?: string[] };
        await jobs.wait({
          ...job,
          body: p.entry.body,
          ...(p.entry.attributes ? { attributes: p.entry.attributes } : {}),
          dependsOn: p.dependsOn,
          ...(p.awaits ? { awaits: p.awaits } : {}),
          onDependencyFailure: envelope.onDependencyFailure ?? 'fail',
          ...(envelope.tags ? { tags: envelope.tags } : {}),
          workerId: 'publisher',
          now,
        });
      }),
    );
  }

  private refOf(p: Prepared, now: number): JobRef {
    return {
      jobId: p.jobId,
      task: p.task,
      // As the dispatcher will see it: decoded from the body, after JSON's own conversions.
      payloadDigest: jobPayloadDigest(JSON.parse(p.entry.body) as { payload?: unknown; payloadRef?: PayloadRef }),
      queue: p.queue.name,
      version: this.version,
      publishedAt: now,
      ...(p.tags.length > 0 ? { tags: p.tags } : {}),
      ...(p.expiresAt !== undefined ? { startBy: p.expiresAt } : {}),
    };
  }

  /**
   * Every dependency must be a job this version knows: published earlier (it has a record) or
   * earlier in this batch; and no job of the batch may wait, through others, for itself.
   */
  private async checkDependencies(prepared: readonly Prepared[]): Promise<void> {
    const inBatch = new Map(prepared.map((p) => [p.jobId, p]));
    for (const p of prepared) {
      for (const dep of p.dependsOn) {
        const other = inBatch.get(dep);
        if (other && other.index > p.index)
          throw new DependencyError(dep, `it is published after ${JSON.stringify(p.jobId)} in this batch; publish dependencies first`);
      }
    }
    const outside = [...new Set(prepared.flatMap((p) => p.dependsOn).filter((d) => !inBatch.has(d)))];
    if (outside.length === 0) return;
    const jobs = this.jobStore();
    const records = new Map((await jobs.getMany(outside)).map((r) => [r.jobId, r]));
    for (const dep of outside) {
      const published = this.recent.get(dep);
      if (!records.has(dep) && published) {
        // Published by this publisher, not yet taken by a dispatcher: its `queued` record now makes it known.
        await jobs.recordQueued(published, published.publishedAt);
      }
      const queueName = records.get(dep)?.queue ?? published?.queue;
      if (queueName === undefined)
        throw new DependencyError(dep, 'no such job in this version (publish it first, to a queue tracked full)');
      const queue = this.config.queues.find((q) => q.name === queueName);
      if (queue && queue.tracking !== 'full')
        throw new DependencyError(dep, `its queue ${JSON.stringify(queue.name)} is tracked '${queue.tracking}', not 'full'`);
    }
    // Only a job whose id another could have named before it existed can close a cycle: one
    // published with an id its caller chose (a generated one is new to every record).
    for (const p of prepared.filter((x) => x.explicitId)) {
      const cycle = await closesCycle(
        this.jobStore(),
        p.jobId,
        p.dependsOn.filter((d) => !inBatch.has(d)),
      );
      if (cycle !== undefined)
        throw new DependencyError(cycle, `it waits, through its own dependencies, for ${JSON.stringify(p.jobId)} (a cycle)`);
    }
  }

  private prepare(item: PublishItem, index: number, now: number, span: PublishSpan): Prepared {
    const options = item.options ?? {};
    const name = typeof item.task === 'string' ? item.task : item.task.name;
    if (!TASK_NAME_PATTERN.test(name)) throw new UnknownTaskError(name, `task names match ${TASK_NAME_PATTERN}`);
    const def = typeof item.task === 'string' ? this.tasks.get(name) : item.task;
    const queueName = options.queue ?? def?.queue;
    if (queueName === undefined) {
      throw new UnknownTaskError(name, 'this publisher does not know the task; pass its definition, list it in `tasks`, or give `queue`');
    }
    const queue = this.config.queues.find((q) => q.name === queueName);
    if (!queue)
      throw new UnknownQueueError(
        queueName,
        this.config.queues.map((q) => q.name),
      );
    if (def && !fitsVisibility(taskNeedMs(def.timeLimitSeconds, this.config.dispatcher.killGraceMs), queue.visibilityTimeoutSeconds)) {
      throw new TimeLimitExceedsVisibilityError(name, def.timeLimitSeconds, queue.name, queue.visibilityTimeoutSeconds);
    }
    const timing = publishTiming(now, options);
    const jobId = options.id ?? randomUUID();
    if (typeof jobId !== 'string' || !JOB_ID_PATTERN.test(jobId))
      throw new PublishOptionError('id', jobId, '1..128 printable ASCII characters');
    const dependsOn = (options.dependsOn ?? []).map((d) => (typeof d === 'string' ? d : d?.jobId));
    const problem = dependencyListProblem(dependsOn, jobId);
    if (problem) throw new PublishOptionError('dependsOn', options.dependsOn, `a list of other jobs' ids: it ${problem}`);
    if ((dependsOn.length > 0 || options.awaits !== undefined || options.memberOf !== undefined) && queue.tracking !== 'full') {
      throw new DependencyError(
        dependsOn[0] ?? jobId,
        `dependencies need tracking 'full'; queue ${JSON.stringify(queue.name)} is tracked '${queue.tracking}'`,
      );
    }
    if (options.onDependencyFailure !== undefined && options.onDependencyFailure !== 'fail' && options.onDependencyFailure !== 'ignore') {
      throw new PublishOptionError('onDependencyFailure', options.onDependencyFailure, '"fail" or "ignore"');
    }
    if (options.tags !== undefined) {
      const tagProblem = tagListProblem(options.tags);
      if (tagProblem) throw new PublishOptionError('tags', options.tags, `a list of tags: it ${tagProblem}`);
    }
    const envelope: EnvelopeV1 = {
      task: name,
      payload: item.payload,
      id: jobId,
      appData: options.appData,
      publishedAt: now,
      ...(timing.runAt !== undefined ? { runAt: timing.runAt } : {}),
      ...(timing.expiresAt !== undefined ? { expiresAt: timing.expiresAt } : {}),
      ...(dependsOn.length > 0 ? { dependsOn } : {}),
      ...(options.awaits !== undefined ? { awaits: options.awaits } : {}),
      ...(options.memberOf !== undefined ? { memberOf: options.memberOf } : {}),
      ...(options.onDependencyFailure !== undefined ? { onDependencyFailure: options.onDependencyFailure } : {}),
      ...(options.tags !== undefined && options.tags.length > 0 ? { tags: options.tags } : {}),
    };
    const body = encodeEnvelope(envelope);
    const bytes = bodyBytes(body);
    // Above the threshold the payload goes to S3 (offload) and the message carries a pointer.
    let offload: Prepared['offload'];
    if (bytes > this.config.payloads.offloadAboveBytes) {
      const text = JSON.stringify(item.payload ?? null);
      const textBytes = bodyBytes(text);
      if (textBytes > MAX_PAYLOAD_REF_BYTES) throw new MessageTooLargeError(name, textBytes, MAX_PAYLOAD_REF_BYTES);
      // Its object must outlive the wait: the lifecycle expires it, and the message may wait in its queue as long as it retains it.
      const aheadDays = payloadExpiryDays(this.config) - Math.ceil(queue.retentionSeconds / 86_400);
      if (timing.runAt !== undefined && timing.runAt > now + aheadDays * 86_400_000) {
        throw new PublishOptionError(
          'runAt',
          new Date(timing.runAt).toISOString(),
          `within ${aheadDays} days for a payload over payloads.offloadAboveBytes (its S3 object expires after ${payloadExpiryDays(this.config)} days)`,
        );
      }
      const { payload: _payload, ...rest } = envelope;
      offload = { text, envelope: rest };
    } else if (bytes > MAX_BODY_BYTES) throw new MessageTooLargeError(name, bytes, MAX_BODY_BYTES);
    const attributes = span.attributesFor(name, options satisfies TraceOptions);
    const entry: SendEntry = {
      id: String(index),
      body,
      ...(timing.delaySeconds ? { delaySeconds: timing.delaySeconds } : {}),
      ...(attributes ? { attributes } : {}),
    };
    return {
      index,
      task: name,
      jobId,
      queue,
      entry,
      bytes,
      dependsOn,
      explicitId: options.id !== undefined && !(GENERATED_ID in options),
      tags: options.tags ?? [],
      ...(options.awaits !== undefined ? { awaits: options.awaits } : {}),
      ...(offload ? { offload } : {}),
      ...(timing.expiresAt !== undefined ? { expiresAt: timing.expiresAt } : {}),
      delayed: (timing.runAt ?? now) > now || timing.delaySeconds !== undefined,
      ...(timing.runAt !== undefined ? { runAt: timing.runAt } : timing.delaySeconds ? { runAt: now + timing.delaySeconds * 1000 } : {}),
    };
  }
}

interface Prepared {
  readonly index: number;
  readonly task: string;
  readonly jobId: string;
  readonly queue: QueueConfig;
  readonly entry: SendEntry;
  readonly bytes: number;
  readonly dependsOn: readonly string[];
  /** The caller chose the id (a raw message may have named it as a dependency before it existed). */
  readonly explicitId: boolean;
  readonly tags: readonly string[];
  readonly awaits?: number;
  readonly runAt?: number;
  /** The envelope's `expiresAt`, for its record's `startBy`. */
  readonly expiresAt?: number;
  /** Published to run later (SQS's delay, or parked by the dispatcher): recorded `scheduled`, not `queued`. */
  readonly delayed: boolean;
  /** Over the threshold: the payload's JSON to put in S3, and the envelope to send with its pointer. */
  readonly offload?: { readonly text: string; readonly envelope: Omit<EnvelopeV1, 'payload'> };
}

function groupByQueue(items: readonly Prepared[]): Prepared[][] {
  const groups = new Map<string, Prepared[]>();
  for (const item of items) {
    const group = groups.get(item.queue.name) ?? [];
    group.push(item);
    groups.set(item.queue.name, group);
  }
  return [...groups.values()];
}

/** Greedy chunks of at most 10 entries and 1 MiB in total. */
function chunkBySize(items: readonly Prepared[]): Prepared[][] {
  const chunks: Prepared[][] = [];
  let current: Prepared[] = [];
  let bytes = 0;
  for (const item of items) {
    if (current.length === BATCH_ENTRIES || (current.length > 0 && bytes + item.bytes > BATCH_BYTES)) {
      chunks.push(current);
      current = [];
      bytes = 0;
    }
    current.push(item);
    bytes += item.bytes;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}
