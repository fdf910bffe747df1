/**
 * The narrow ports between taskworker's policy and AWS. Adapters (SQS, DynamoDB) and in-memory
 * fakes implement them; one conformance suite checks both.
 */

/** Where each configured queue and the archive live. */
export interface QueueUrls {
  readonly queues: Readonly<Record<string, string>>;
  readonly archive: string;
}

/** A message as received from a queue. */
export interface ReceivedMessage {
  readonly messageId: string;
  readonly receiptHandle: string;
  readonly body: string;
  /** SQS ApproximateReceiveCount: receives so far, this one included. */
  readonly receiveCount: number;
  /** SQS SentTimestamp, epoch ms. */
  readonly sentTimestamp: number;
  /** String message attributes, if any were sent. */
  readonly attributes: Readonly<Record<string, string>>;
  /** Lambda's X-Ray header (the `AWSTraceHeader` system attribute), when the sender was traced by X-Ray. */
  readonly awsTraceHeader?: string;
}

export interface ReceiveRequest {
  readonly maxMessages: number;
  readonly waitSeconds: number;
  readonly visibilityTimeoutSeconds: number;
}

/** One entry of a batch call that did not succeed. */
export interface BatchFailure {
  readonly id: string;
  readonly code: string;
  readonly message: string;
  /** True when the request itself was wrong (retrying cannot help). */
  readonly senderFault: boolean;
}

export interface BatchResult {
  readonly failed: readonly BatchFailure[];
}

export interface SendEntry {
  readonly id: string;
  readonly body: string;
  readonly delaySeconds?: number;
  readonly attributes?: Readonly<Record<string, string>>;
}

export interface SendBatchResult extends BatchResult {
  /** Entry id → SQS MessageId of the entries that were sent. */
  readonly messageIds: Readonly<Record<string, string>>;
}

export interface ReceiptEntry {
  readonly id: string;
  readonly receiptHandle: string;
}

export interface VisibilityEntry extends ReceiptEntry {
  readonly visibilityTimeoutSeconds: number;
}

export interface QueueDepth {
  readonly visible: number;
  readonly inFlight: number;
  readonly delayed: number;
}

/** Where a publisher emits events: a topic that fans each one out to the subscribed queues (SNS). */
export interface EventBus {
  /** `attributes`: string message attributes, which raw delivery passes on to the queues. */
  publish(topicArn: string, body: string, attributes?: Readonly<Record<string, string>>): Promise<{ readonly messageId: string }>;
}

/**
 * Where claim-checked payloads are kept (S3): objects by bucket and key. `get` throws
 * `PayloadMissingError` for an object that is not there; any other error is transient.
 */
export interface PayloadStore {
  put(bucket: string, key: string, body: string, sha256: string): Promise<void>;
  get(bucket: string, key: string): Promise<string>;
  delete(bucket: string, key: string): Promise<void>;
}

/** What the dispatcher and publisher need from a queue service. Batch calls take at most 10 entries. */
export interface QueueClient {
  receive(queueUrl: string, request: ReceiveRequest, signal?: AbortSignal): Promise<ReceivedMessage[]>;
  sendBatch(queueUrl: string, entries: readonly SendEntry[]): Promise<SendBatchResult>;
  deleteBatch(queueUrl: string, entries: readonly ReceiptEntry[]): Promise<BatchResult>;
  changeVisibilityBatch(queueUrl: string, entries: readonly VisibilityEntry[]): Promise<BatchResult>;
  depth(queueUrl: string): Promise<QueueDepth>;
}

/** Finding a version's queues by name (operator commands, publishers without URLs). */
export interface QueueDirectory {
  /** The URL of the queue named `name`; undefined when there is no such queue. */
  urlOf(name: string): Promise<string | undefined>;
}

/** Listing queues by name (the versions deployed in an account and region). */
export interface QueueLister {
  /** Names of the queues whose name starts with `prefix`. */
  namesWithPrefix(prefix: string): Promise<string[]>;
}

/** The service's own way to move a dead-letter queue's messages back to their source queue. */
export interface DeadLetterMover {
  /**
   * Starts moving every message of the dead-letter queue at `deadLetterUrl` back to its source.
   * Throws {@link MoveTaskUnavailableError} where the service cannot (an emulator without move
   * tasks, an endpoint answering with an error page); a refusal to the caller is thrown as it is.
   */
  startMove(deadLetterUrl: string): Promise<{ readonly taskHandle?: string }>;
  /** Status of the newest move from that queue: RUNNING, COMPLETED, FAILED, CANCELLING, CANCELLED. */
  moveStatus(deadLetterUrl: string): Promise<string>;
}

/** Starts dispatcher invocations (on Lambda: asynchronous InvokeFunction of the dispatcher itself). */
export interface DispatcherLauncher {
  /** Starts `count` invocations with `event` (JSON-serializable); resolves with how many were accepted. */
  launch(count: number, event: object): Promise<number>;
}

/**
 * Turns the doorbell queues' triggers on and off: off while the scheduled fleet works a backlog
 * (it selects by priority; a trigger would take batches out of order beside it), on again once
 * that fleet finds nothing to do (lib/invocation/doorbell.ts).
 */
export interface DoorbellSwitch {
  /** Turns the doorbells on or off; those of the queues named in `off` (paused ones) are turned or left off either way. */
  set(on: boolean, off?: readonly string[]): Promise<void>;
}

/** Age in seconds of the oldest message per queue resource name, where the platform measures it. */
export type OldestAge = (queueResourceNames: readonly string[]) => Promise<Record<string, number | undefined>>;

/** A deployed function's invocations, errors and peak concurrency over the last `minutes` (CloudWatch). */
export type RecentInvocations = (
  functionName: string,
  minutes: number,
) => Promise<{ functionName: string; minutes: number; invocations: number; errors: number; maxConcurrent: number }>;

/** Structured log lines; Powertools Logger fits this shape. */
export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} };

/** Writes one JSON line per message to stderr at `info` and above (local runs). */
export function jsonLogger(bindings: Record<string, unknown> = {}, minLevel: 'debug' | 'info' | 'warn' | 'error' = 'info'): Logger {
  const order = ['debug', 'info', 'warn', 'error'] as const;
  const min = order.indexOf(minLevel);
  const write = (level: (typeof order)[number]) => (message: string, fields?: Record<string, unknown>) => {
    if (order.indexOf(level) < min) return;
    process.stderr.write(`${JSON.stringify({ level, time: new Date().toISOString(), message, ...bindings, ...fields })}\n`);
  };
  return { debug: write('debug'), info: write('info'), warn: write('warn'), error: write('error') };
}
