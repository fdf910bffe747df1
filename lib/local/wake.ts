/**
 * The local stand-in for what invokes the functions in AWS: the EventBridge schedule (a scheduled
 * event to the dispatcher function every minute, and one at start) and, for each doorbell queue,
 * Lambda's SQS event-source mapping (a poller that receives a batch, invokes the doorbell with a
 * real SQS event, then deletes what the function did not report as a batch item failure). The
 * functions are `taskworker dev`'s containers, invoked on demand (lib/local/runner.ts).
 */
import { DeleteMessageBatchCommand, type Message, ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { SQSRecord } from 'aws-lambda';
import type { TaskworkerConfig } from '../config';
import { SCHEDULE_PERIOD_MS, SCHEDULE_SOURCE } from '../invocation/scaling';
import type { QueueUrls } from '../ports';
import { doorbellQueues, doorbellTimeoutSeconds } from '../wake-up';

/** The dispatcher function's name among the local functions; a doorbell's is {@link doorbellFunction}. */
export const DISPATCHER_FUNCTION = 'dispatcher';
export const doorbellFunction = (queue: string) => `doorbell-${queue}`;

export interface InvokeResult {
  readonly result?: unknown;
  readonly error?: string;
}

/** The functions' containers, as the local Lambda service sees them. */
export interface LocalFunctions {
  /** Invokes a free container of `fn` with `event`; undefined when none is free. */
  invoke(fn: string, event: unknown, timeoutSeconds: number): Promise<InvokeResult> | undefined;
  /** Resolves once a container of `fn` is free (or the functions are stopping). */
  whenFree(fn: string): Promise<void>;
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
}

export interface LocalWakeUp {
  /** Turns the doorbell triggers on or off, as UpdateEventSourceMapping does. */
  setDoorbells(on: boolean): void;
  /** Stops the schedule and the pollers; resolves once no poll is in flight (a poll is short). */
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
  let doorbellsOn = true;
  const waitingForOn = new Set<() => void>();
  const turnedOn = () => {
    for (const resolve of waitingForOn) resolve();
    waitingForOn.clear();
  };
  const whenOn = () => (doorbellsOn || stopped ? Promise.resolve() : new Promise<void>((resolve) => waitingForOn.add(resolve)));
  const tick = () => {
    if (stopped) return;
    // All dispatcher containers busy: the running ones are at work already, as a skipped tick is in AWS.
    void functions.invoke(DISPATCHER_FUNCTION, { source: SCHEDULE_SOURCE, app: config.app }, config.dispatcher.timeoutSeconds);
  };
  tick();
  const schedule = setInterval(tick, options.schedulePeriodMs ?? SCHEDULE_PERIOD_MS);
  const pollers = doorbellQueues(config).map(async (queue) => {
    const url = options.urls.queues[queue.name] as string;
    const arn = `arn:aws:sqs:${options.region}:000000000000:${url.slice(url.lastIndexOf('/') + 1)}`;
    const fn = doorbellFunction(queue.name);
    while (!stopped) {
      await whenOn();
      await functions.whenFree(fn);
      if (stopped) break;
      try {
        if (options.paused && (await options.paused()).includes(queue.name)) {
          await new Promise((resolve) => setTimeout(resolve, 1000));
          continue;
        }
        const received = await options.sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: url,
            MaxNumberOfMessages: queue.batchSize,
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
        // Taken meanwhile: the messages return to the queue when their visibility lapses, as in AWS.
        if (!invoked) continue;
        const outcome = await invoked;
        const kept = failedItems(outcome);
        if (!kept) continue;
        const deletes = messages
          .filter((m) => !kept.has(m.MessageId as string))
          .map((m) => ({ Id: m.MessageId as string, ReceiptHandle: m.ReceiptHandle as string }));
        if (deletes.length > 0) await options.sqs.send(new DeleteMessageBatchCommand({ QueueUrl: url, Entries: deletes }));
      } catch (error) {
        if (stopped) break;
        options.onError?.(`doorbell trigger on ${queue.name}: ${error instanceof Error ? error.message : String(error)}`);
        await new Promise((resolve) => setTimeout(resolve, 1000));
      }
    }
  });
  return {
    setDoorbells(on) {
      doorbellsOn = on;
      if (on) turnedOn();
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
