/**
 * The narrow ports between taskworker's policy and AWS. Adapters (SQS, DynamoDB) and in-memory
 * fakes implement them; one conformance suite checks both.
 */

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

/** What the dispatcher and publisher need from a queue service. Batch calls take at most 10 entries. */
export interface QueueClient {
  receive(queueUrl: string, request: ReceiveRequest, signal?: AbortSignal): Promise<ReceivedMessage[]>;
  sendBatch(queueUrl: string, entries: readonly SendEntry[]): Promise<SendBatchResult>;
  deleteBatch(queueUrl: string, entries: readonly ReceiptEntry[]): Promise<BatchResult>;
  changeVisibilityBatch(queueUrl: string, entries: readonly VisibilityEntry[]): Promise<BatchResult>;
  depth(queueUrl: string): Promise<QueueDepth>;
}

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
