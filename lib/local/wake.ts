/**
 * The local stand-in for what invokes the functions in AWS: the EventBridge schedule (a scheduled
 * event to the dispatcher function every minute, and one at start) and, for each doorbell queue,
 * Lambda's SQS event-source mapping (a poller that receives a batch, invokes the doorbell with a
 * real SQS event, then deletes what the function did not report as a batch item failure). Like
 * the mapping, a trigger polls on while its invocations run, up to its `MaximumConcurrency` at
 * once: a message that arrives while a slow batch runs starts an invocation of its own (on a
 * container of its own, lib/local/containers.ts) rather than waiting for that batch to settle. The
 * functions are `taskworker dev`'s containers, invoked on demand (lib/local/runner.ts).
 */
import { DeleteMessageBatchCommand, type Message, ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { SQSRecord } from 'aws-lambda';
import type { TaskworkerConfig } from '../config/app-config';
import { SCHEDULE_PERIOD_MS, SCHEDULE_SOURCE } from '../invocation/scaling';
import type { QueueUrls } from '../ports';
import { DOORBELL_MAX_CONCURRENCY, doorbellBatchSize, doorbellQueues, doorbellTimeoutSeconds } from '../wake-up';

/** The dispatcher function's name among the local functions; a doorbell's is {@link doorbellFunction}. */
export const DISPATCHER_FUNCTION = 'dispatcher';
export const doorbellFunction = (queue: string) => `doorbell-${queue}`;

export interface InvokeResult {
  readonly result?: unknown;
  readonly error?: string;
}

/** The functions' containers, as the local Lambda service sees them. */
export interface LocalFunctions {
  /**
   * Invokes `fn` with `event` on a free container, or a new one when all are busy; undefined when
   * `fn` runs as many invocations as its concurrency allows (throttled) or the functions are stopping.
   */
  invoke(fn: string, event: unknown, timeoutSeconds: number): Promise<InvokeResult> | undefined;
}

export interface LocalWakeUpOptions {
  readonly config: TaskworkerConfig;
  readonly urls: QueueUrls;
  readonly sqs: SQSClient;
  readonly region: string;
  readonly functions: LocalFunctions;
  /** @defaultValue one minute, as deployed */
  readonly schedulePeriodMs?: number;
  /** A trigger's poll or delete failed (the emulator stopped, say); it tries again a second later. */
  readonly onError?: (message: string) => void;
  /**
   * The queues paused now (the operator controls, cached): their triggers do not poll, as a
   * disabled event-source mapping does not in AWS.
   */
  readonly paused?: () => Promise<readonly string[]>;
  /** Invocations a doorbell trigger runs at once. @defaultValue its `MaximumConcurrency` as deployed, {@link DOORBELL_MAX_CONCURRENCY} */
  readonly doorbellConcurrency?: number;
}

export interface LocalWakeUp {
  /** Turns the doorbell triggers on or off (those of the queues in `off` off either way), as UpdateEventSourceMapping does. */
  setDoorbells(on: boolean, off?: readonly string[]): void;
  /**
   * Stops the schedule and the pollers; resolves once no poll is in flight (a poll is short) and the
   * invocations the triggers started have ended and their batches are deleted.
   */
  stop(): Promise<void>;
}

/**
 * A local poll waits this long: long enough that a message starts a doorbell the moment it
 * arrives, short enough that stopping never abandons a poll (which could leave a message invisible).
 */
const LOCAL_POLL_SECONDS = 2;

export function startLocalWakeUp(options: LocalWakeUpOptions): LocalWakeUp {
  const { config, functions } = options;
  let stopped = false;
  /** The queues whose triggers are off now. */
  let off = new Set<string>();
  const waitingForOn = new Set<() => void>();
  const turnedOn = () => {
    for (const resolve of waitingForOn) resolve();
    waitingForOn.clear();
  };
  const whenOn = async (queue: string) => {
    while (off.has(queue) && !stopped) await new Promise<void>((resolve) => waitingForOn.add(resolve));
  };
  const tick = () => {
    if (stopped) return;
    // At the function's reserved concurrency the tick is throttled: the running ones are at work already, as in AWS.
    void functions.invoke(DISPATCHER_FUNCTION, { source: SCHEDULE_SOURCE, app: config.app }, config.dispatcher.timeoutSeconds);
  };
  tick();
  const schedule = setInterval(tick, options.schedulePeriodMs ?? SCHEDULE_PERIOD_MS);
  const concurrency = options.doorbellConcurrency ?? DOORBELL_MAX_CONCURRENCY;
  const pollers = doorbellQueues(config).map(async (queue) => {
    const url = options.urls.queues[queue.name] as string;
    const arn = `arn:aws:sqs:${options.region}:000000000000:${url.slice(url.lastIndexOf('/') + 1)}`;
    const fn = doorbellFunction(queue.name);
    /** The invocations this trigger started that have not yet ended (and had their batch deleted). */
    const running = new Set<Promise<void>>();
    const report = (error: unknown) =>
      options.onError?.(`doorbell trigger on ${queue.name}: ${error instanceof Error ? error.message : String(error)}`);
    /** What the trigger does when an invocation ends: deletes what it did not keep. */
    const deleteSettled = async (messages: readonly Message[], invoked: Promise<InvokeResult>) => {
      const kept = failedItems(await invoked);
      if (!kept) return;
      const deletes = messages
        .filter((m) => !kept.has(m.MessageId as string))
        .map((m) => ({ Id: m.MessageId as string, ReceiptHandle: m.ReceiptHandle as string }));
      if (deletes.length > 0) await options.sqs.send(new DeleteMessageBatchCommand({ QueueUrl: url, Entries: deletes }));
    };
    while (!stopped) {
      await whenOn(queue.name);
      // At its concurrency the mapping stops polling until an invocation ends, as in AWS.
      while (running.size >= concurrency && !stopped) await Promise.race(running);
      if (stopped) break;
      try {
        if (options.paused && (await options.paused()).includes(queue.name)) {
          await new Promise((resolve) => setTimeout(resolve, 1000));
          continue;
        }
        const received = await options.sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: url,
            MaxNumberOfMessages: doorbellBatchSize(config, queue),
            WaitTimeSeconds: LOCAL_POLL_SECONDS,
            VisibilityTimeout: queue.visibilityTimeoutSeconds,
            MessageSystemAttributeNames: ['All'],
            MessageAttributeNames: ['All'],
          }),
        );
        const messages = received.Messages ?? [];
        if (messages.length === 0) continue;
        const records = messages.map((m) => sqsRecord(m, arn, options.region));
        const invoked = functions.invoke(fn, { Records: records }, doorbellTimeoutSeconds(config, queue));
        // Throttled or stopping: the messages return to the queue when their visibility lapses, as in AWS.
        if (!invoked) continue;
        // Not awaited: the trigger polls on while the batch runs, and a new message gets an invocation of its own.
        const settled: Promise<void> = deleteSettled(messages, invoked)
          .catch((error: unknown) => {
            if (!stopped) report(error);
          })
          .finally(() => running.delete(settled));
        running.add(settled);
      } catch (error) {
        if (stopped) break;
        report(error);
        await new Promise((resolve) => setTimeout(resolve, 1000));
      }
    }
    await Promise.all(running);
  });
  return {
    setDoorbells(on, offQueues = []) {
      off = new Set(on ? offQueues : doorbellQueues(config).map((q) => q.name));
      turnedOn();
    },
    async stop() {
      stopped = true;
      turnedOn();
      clearInterval(schedule);
      await Promise.all(pollers);
    },
  };
}

/**
 * The messages a doorbell invocation kept (its batch item failures); undefined when the whole
 * batch failed (an error): then the trigger deletes nothing and every message returns.
 */
function failedItems(outcome: InvokeResult): Set<string> | undefined {
  if (outcome.error !== undefined) return undefined;
  const failures = (outcome.result as { batchItemFailures?: Array<{ itemIdentifier?: unknown }> } | undefined)?.batchItemFailures;
  if (!Array.isArray(failures)) return new Set();
  return new Set(failures.map((f) => String(f.itemIdentifier)));
}

/** A received message as a record of Lambda's SQS event. */
function sqsRecord(message: Message, arn: string, region: string): SQSRecord {
  return {
    messageId: message.MessageId as string,
    receiptHandle: message.ReceiptHandle as string,
    body: message.Body ?? '',
    attributes: {
      ApproximateReceiveCount: message.Attributes?.ApproximateReceiveCount ?? '1',
      SentTimestamp: message.Attributes?.SentTimestamp ?? String(Date.now()),
      SenderId: message.Attributes?.SenderId ?? 'local',
      ApproximateFirstReceiveTimestamp: message.Attributes?.ApproximateFirstReceiveTimestamp ?? String(Date.now()),
    },
    messageAttributes: Object.fromEntries(
      Object.entries(message.MessageAttributes ?? {}).map(([name, value]) => [
        name,
        { ...(value.StringValue !== undefined ? { stringValue: value.StringValue } : {}), dataType: value.DataType ?? 'String' },
      ]),
    ),
    md5OfBody: message.MD5OfBody ?? '',
    eventSource: 'aws:sqs',
    eventSourceARN: arn,
    awsRegion: region,
  };
}
