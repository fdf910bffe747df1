import { readDevState } from '../aws/dev-file';
import { devClients, lookUpQueueUrls, s3PayloadStore, snsEventBus, sqsQueues, versionJobStore } from '../aws/wiring';
import { systemClock } from '../clock';
import { resolveConfig, type TaskworkerConfig, validateVersion } from '../config/app-config';
import { LocalDevNotFoundError } from '../errors';
import { payloadBucketNear } from '../layout/payloads';
import { queueResourceName } from '../layout/queues';
import type { EventBus, PayloadStore, QueueClient, QueueUrls } from '../ports';
import type { TokenResult } from '../settle/step-tokens';
import type { TaskDefinition } from '../tasks/task';
import { startPublishSpan } from '../trace/producer';
import type { CancelResult, JobRecord, JobRef } from '../track/job-record';
import type { JobStore } from '../track/job-stores';
import { emitEvent } from './emit';
import { cancelJob, completeToken, jobResult, taggedJobs } from './job-queries';
import type { PublishContext } from './publish-context';
import { chainItems, chordItems } from './publish-flows';
import type {
  EmitOptions,
  Emitted,
  LocalDevPublisherOptions,
  Published,
  PublisherOptions,
  PublishItem,
  PublishOptions,
} from './publish-options';
import type { JobResult, WaitOptions } from './results';
import { sendItems } from './send';

/**
 * Publishes tasks to one release version's queues.
 * @example
 * const publisher = new Publisher({ config, version: 'v1' });
 * const { jobId } = await publisher.publish(sendEmail, { to: 'a@example.com' }, { delaySeconds: 30 });
 */
export class Publisher {
  private readonly config: TaskworkerConfig;
  private readonly version: string;
  private readonly jobs: JobStore | undefined;
  private cancelStore: JobStore | undefined;
  private urls: Promise<QueueUrls> | undefined;
  private eventBus: EventBus | undefined;
  private payloadStore: PayloadStore | undefined;
  /** What the publisher's parts share (lib/publish/publish-context.ts). */
  private readonly context: PublishContext;

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
    const tasks = new Map((options.tasks ?? []).map((t) => [t.name, t]));
    const clock = options.clock ?? systemClock;
    const eventOptions = options.events;
    const payloadOptions = options.payloads;
    const store = () => versionJobStore(this.config, this.version, options.dynamo);
    this.jobs = options.recordQueued === false ? undefined : (options.jobs ?? (options.recordQueued ? store() : undefined));
    const jobStore = () => {
      this.cancelStore ??= options.jobs ?? this.jobs ?? store();
      return this.cancelStore;
    };
    let queues: QueueClient;
    let resolveUrls: () => Promise<QueueUrls>;
    if (options.queues) {
      const urls = options.urls;
      queues = options.queues;
      resolveUrls = async () => urls;
    } else {
      const sqs = sqsQueues(options.sqs);
      queues = sqs;
      resolveUrls = () => lookUpQueueUrls(sqs, this.config, this.version);
    }
    this.context = {
      config: this.config,
      version: this.version,
      tasks,
      clock,
      queues,
      queueUrls: () => {
        if (!this.urls) {
          this.urls = resolveUrls();
          this.urls.catch(() => {
            this.urls = undefined;
          });
        }
        return this.urls;
      },
      jobs: this.jobs,
      jobStore,
      payloadStore: () => {
        this.payloadStore ??= payloadOptions?.store ?? s3PayloadStore(payloadOptions?.s3);
        return this.payloadStore;
      },
      bucketNear: (urls) =>
        payloadOptions?.bucket ?? payloadBucketNear(Object.values(urls.queues)[0] ?? urls.archive, this.config.app, this.version),
      eventBus: () => {
        this.eventBus ??= eventOptions?.bus ?? snsEventBus(eventOptions?.sns);
        return this.eventBus;
      },
      givenTopicArn: eventOptions?.topicArn,
      recent: new Map<string, JobRef>(),
      warnedAboutTracking: false,
    };
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
    return cancelJob(this.context, jobId);
  }

  /**
   * Completes a token a job waits for (`ctx.step.waitForToken`): the job resumes with `value` (JSON,
   * at most 1 KB; none: `null`) as the wait's return, at once. Refused, saying why: a token completed
   * before (`completed-already`, with when and its value: the first completion stands), a wait that
   * timed out or a job cancelled (`not-waiting`), or a token no job has (`unknown`). Needs
   * `dynamodb:GetItem` and `dynamodb:UpdateItem` on the jobs table (`grantPublish(role, { tokens: true })`).
   */
  async completeToken(token: string, value?: unknown): Promise<TokenResult> {
    return completeToken(this.context, token, value);
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
    return jobResult(this.context, job, options);
  }

  /**
   * Publishes steps that run one after another: each waits for the one before (and finds its
   * result in `ctx.dependencies[0].result`). With the default `onDependencyFailure: 'fail'`, a step
   * that does not succeed archives the rest (`dependency-failed`). All on queues tracked `full`.
   */
  async chain(steps: readonly PublishItem[]): Promise<Published[]> {
    return this.publishBatch(chainItems(steps));
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
    const [published, ...rest] = await this.publishBatch(chordItems(members, callback));
    return { callback: published as Published, members: rest };
  }

  /**
   * Jobs published with `tag`, newest first, in every state (queued, waiting, running, ended), from
   * the jobs table's tag index. `before` (a job's `publishedAt`) pages on. Needs
   * `dynamodb:Query` on the table's `byTag` index and `dynamodb:BatchGetItem` on the table.
   */
  async jobsByTag(tag: string, options: { limit?: number; before?: number } = {}): Promise<JobRecord[]> {
    return taggedJobs(this.context, tag, options);
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
    return emitEvent(this.context, name, payload, options);
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
      const published = await sendItems(this.context, items, span);
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
}
