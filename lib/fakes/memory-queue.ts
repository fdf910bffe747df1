import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock';
import { messageBytes, SQS_MESSAGE_LIMIT_BYTES } from '../layout/sqs-limits';
import type {
  BatchFailure,
  BatchResult,
  QueueClient,
  QueueDepth,
  ReceiptEntry,
  ReceivedMessage,
  ReceiveRequest,
  SendBatchResult,
  SendEntry,
  VisibilityEntry,
} from '../ports';

interface StoredMessage {
  readonly messageId: string;
  readonly body: string;
  readonly attributes: Readonly<Record<string, string>>;
  readonly sentTimestamp: number;
  visibleAt: number;
  receiveCount: number;
  receipt: string | undefined;
}

interface MemoryQueue {
  readonly name: string;
  readonly visibilityTimeoutSeconds: number;
  readonly redrive: { readonly deadLetterUrl: string; readonly maxReceiveCount: number } | undefined;
  messages: StoredMessage[];
}

export interface MemoryQueueOptions {
  readonly visibilityTimeoutSeconds?: number;
  readonly redrive?: { readonly deadLetterUrl: string; readonly maxReceiveCount: number };
}

/** Calls made, by operation: the fake counts requests the way SQS bills them. */
export type RequestCounts = Record<'receive' | 'sendBatch' | 'deleteBatch' | 'changeVisibilityBatch' | 'depth', number>;

/**
 * An in-memory SQS for unit tests and simulations: visibility timeouts, receive counts, delays,
 * long polls and DLQ redrive, on an injected clock. Its semantics are pinned to fauxqs's by the
 * shared queue-client conformance suite.
 */
export class MemoryQueueService implements QueueClient {
  private readonly queues = new Map<string, MemoryQueue>();
  readonly requests: RequestCounts = { receive: 0, sendBatch: 0, deleteBatch: 0, changeVisibilityBatch: 0, depth: 0 };

  constructor(
    private readonly clock: Clock,
    /**
     * How often a long poll looks again: 20 ms, near SQS's prompt answer. A simulation of hours
     * takes a coarser step (a message then waits up to that long for its long poll).
     */
    private readonly pollMs = 20,
  ) {}

  createQueue(name: string, options: MemoryQueueOptions = {}): string {
    const url = `memory://queues/${name}`;
    if (!this.queues.has(url)) {
      this.queues.set(url, {
        name,
        visibilityTimeoutSeconds: options.visibilityTimeoutSeconds ?? 30,
        redrive: options.redrive,
        messages: [],
      });
    }
    return url;
  }

  /** Every message still in a queue, visible or not (test inspection). */
  peek(url: string): readonly { body: string; attributes: Readonly<Record<string, string>>; receiveCount: number }[] {
    return this.queue(url).messages;
  }

  async receive(queueUrl: string, request: ReceiveRequest, signal?: AbortSignal): Promise<ReceivedMessage[]> {
    this.requests.receive += 1;
    const queue = this.queue(queueUrl);
    const until = this.clock.now() + request.waitSeconds * 1000;
    for (;;) {
      const taken = this.take(queue, request);
      if (taken.length > 0 || this.clock.now() >= until || signal?.aborted) return taken;
      await this.clock.sleep(Math.min(this.pollMs, until - this.clock.now()), signal);
    }
  }

  private take(queue: MemoryQueue, request: ReceiveRequest): ReceivedMessage[] {
    const now = this.clock.now();
    const out: ReceivedMessage[] = [];
    for (const message of [...queue.messages]) {
      if (out.length >= request.maxMessages) break;
      if (message.visibleAt > now) continue;
      if (queue.redrive && message.receiveCount >= queue.redrive.maxReceiveCount) {
        queue.messages.splice(queue.messages.indexOf(message), 1);
        this.queue(queue.redrive.deadLetterUrl).messages.push({ ...message, visibleAt: now, receipt: undefined });
        continue;
      }
      message.receiveCount += 1;
      message.receipt = randomUUID();
      message.visibleAt = now + request.visibilityTimeoutSeconds * 1000;
      out.push({
        messageId: message.messageId,
        receiptHandle: message.receipt,
        body: message.body,
        receiveCount: message.receiveCount,
        sentTimestamp: message.sentTimestamp,
        attributes: message.attributes,
      });
    }
    return out;
  }

  async sendBatch(queueUrl: string, entries: readonly SendEntry[]): Promise<SendBatchResult> {
    this.requests.sendBatch += 1;
    const queue = this.queue(queueUrl);
    const now = this.clock.now();
    const failed: BatchFailure[] = [];
    const messageIds: Record<string, string> = {};
    for (const entry of entries) {
      const size = messageBytes(entry.body, entry.attributes);
      if (size > SQS_MESSAGE_LIMIT_BYTES) {
        failed.push({
          id: entry.id,
          code: 'InvalidParameterValue',
          message: `message of ${size} bytes exceeds the limit`,
          senderFault: true,
        });
        continue;
      }
      const messageId = randomUUID();
      queue.messages.push({
        messageId,
        body: entry.body,
        attributes: { ...entry.attributes },
        sentTimestamp: now,
        visibleAt: now + (entry.delaySeconds ?? 0) * 1000,
        receiveCount: 0,
        receipt: undefined,
      });
      messageIds[entry.id] = messageId;
    }
    return { failed, messageIds };
  }

  async deleteBatch(queueUrl: string, entries: readonly ReceiptEntry[]): Promise<BatchResult> {
    this.requests.deleteBatch += 1;
    const queue = this.queue(queueUrl);
    // Like SQS, a stale or unknown receipt handle "succeeds" without deleting anything.
    queue.messages = queue.messages.filter((m) => !entries.some((e) => m.receipt !== undefined && e.receiptHandle === m.receipt));
    return { failed: [] };
  }

  async changeVisibilityBatch(queueUrl: string, entries: readonly VisibilityEntry[]): Promise<BatchResult> {
    this.requests.changeVisibilityBatch += 1;
    const queue = this.queue(queueUrl);
    const now = this.clock.now();
    const failed: BatchFailure[] = [];
    for (const entry of entries) {
      const message = queue.messages.find((m) => m.receipt === entry.receiptHandle);
      if (!message) {
        failed.push({ id: entry.id, code: 'ReceiptHandleIsInvalid', message: 'The input receipt handle is invalid.', senderFault: true });
        continue;
      }
      message.visibleAt = now + entry.visibilityTimeoutSeconds * 1000;
    }
    return { failed };
  }

  async depth(queueUrl: string): Promise<QueueDepth> {
    this.requests.depth += 1;
    const now = this.clock.now();
    let visible = 0;
    let inFlight = 0;
    let delayed = 0;
    for (const m of this.queue(queueUrl).messages) {
      if (m.visibleAt <= now) visible += 1;
      else if (m.receiveCount > 0) inFlight += 1;
      else delayed += 1;
    }
    return { visible, inFlight, delayed };
  }

  private queue(url: string): MemoryQueue {
    const queue = this.queues.get(url);
    if (!queue) throw Object.assign(new Error(`The specified queue does not exist: ${url}`), { name: 'QueueDoesNotExist' });
    return queue;
  }
}
