/**
 * A simulated SQS standard queue service behind the library's {@link QueueClient} port, on the
 * simulation clock. What it models, and what it leaves out:
 *
 * - every request takes a latency drawn from a seeded distribution; its effect lands half-way;
 * - a short poll (WaitTimeSeconds 0) samples a subset of SQS's servers: each visible message is
 *   found with probability `shortPollFindProbability`, so a queue holding a few messages can
 *   answer empty; a long poll queries every server and answers as soon as one message is visible
 *   (with whatever is visible then), or empty when its wait ends;
 * - at most `maxMessages` (≤ 10) per receive, oldest first; visibility timeouts; receipt handles
 *   that go stale on the next receive (a delete or visibility change with a stale one does
 *   nothing); `ChangeMessageVisibility` to 0 makes a message visible at once;
 * - string message attributes, `DelaySeconds`, the 1 MiB limit on a message (an entry over it
 *   fails on its own), and a dead-letter queue per queue (a receive that finds a message already
 *   received `maxReceiveCount` times moves it there instead);
 * - every request is counted by operation and queue, as SQS bills them.
 *
 * The queue conformance suite (test/conformance/queue-client.ts) runs against it, as against the
 * in-memory fake and the emulator. Arrivals are generated lazily from each queue's arrival
 * process, so publishing costs no simulation events.
 */

import { messageBytes, SQS_MESSAGE_LIMIT_BYTES } from '../../lib/layout/sqs-limits';
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
} from '../../lib/ports';
import type { Random } from '../../lib/random';
import type { Simulation } from './engine';
import { Heap } from './heap';

/** The next messages a queue receives: arrival times in order, and each message's body. */
export interface ArrivalSource {
  /** Time of the next arrival (epoch ms), Infinity when there is none. */
  peek(): number;
  /** Takes the next arrival. */
  take(): { readonly at: number; readonly body: string };
}

export interface LatencyModel {
  /** Fixed part of a request's round trip, ms. */
  readonly baseMs: number;
  /** Mean of an exponential extra, ms. */
  readonly jitterMeanMs: number;
}

export type Operation = 'receive' | 'deleteBatch' | 'changeVisibilityBatch' | 'depth' | 'sendBatch';

/** Where a queue's messages go after too many receives (SQS's RedrivePolicy). */
export interface SimRedrive {
  readonly deadLetterUrl: string;
  readonly maxReceiveCount: number;
}

/** A queue's settings beyond its arrivals. */
export interface SimQueueOptions {
  readonly redrive?: SimRedrive;
}

/** Attributes of a message sent without any (arrivals): one shared empty record. */
const NO_ATTRIBUTES: Readonly<Record<string, string>> = Object.freeze({});

interface Message {
  readonly messageId: string;
  readonly body: string;
  readonly attributes: Readonly<Record<string, string>>;
  readonly sent: number;
  receiveCount: number;
  receipt: string | undefined;
  visibleAt: number;
  state: 'delayed' | 'ready' | 'inflight' | 'deleted';
  firstReceivedAt?: number;
}

class SimQueue {
  /** Visible messages, oldest first (entries of messages deleted while visible are skipped). */
  readonly ready = new Heap<Message>();
  /** In-flight messages by the time they become visible (stale entries are skipped). */
  readonly inflight = new Heap<{ message: Message; visibleAt: number }>();
  /** Messages sent with a delay, by the time it ends (none can be deleted or changed before: no entry goes stale). */
  readonly delayed = new Heap<Message>();
  readonly byReceipt = new Map<string, Message>();
  readonly byId = new Map<string, Message>();
  readonly wakers = new Set<() => void>();
  visible = 0;
  inFlight = 0;
  /** Messages made visible so far (sent, or back from flight): what wakes the emulator's long polls. */
  becameVisible = 0;

  constructor(
    readonly name: string,
    readonly arrivals: ArrivalSource | undefined,
    readonly redrive: SimRedrive | undefined,
  ) {}
}

/** How receives are answered. */
export interface SqsModel {
  /** Chance that a short poll finds a given visible message. @defaultValue 0.8 */
  readonly shortPollFindProbability?: number;
  /**
   * The emulator's long poll instead of SQS's: a message becoming visible ends every long poll
   * waiting on its queue, and each takes what it finds then — empty for all but the first. SQS
   * keeps the others waiting. fauxqs works this way (its `notifyWaiters`), so a comparison with
   * real dispatchers on fauxqs models it. @defaultValue false
   */
  readonly wakeEveryPoller?: boolean;
}

/** fauxqs, the emulator the real dispatchers run on here: a short poll finds every visible message, a message wakes every long poll. */
export const FAUXQS_MODEL: SqsModel = { shortPollFindProbability: 1, wakeEveryPoller: true };

export interface SimSqsOptions extends SqsModel {
  readonly clock: Simulation;
  readonly random: Random;
  readonly latency?: LatencyModel;
}

export class SimSqs implements QueueClient {
  private readonly queues = new Map<string, SimQueue>();
  private readonly clock: Simulation;
  private readonly random: Random;
  private readonly latency: LatencyModel;
  private readonly findProbability: number;
  private readonly wakeEveryPoller: boolean;
  private nextSeq = 1;
  /** Requests by operation, all queues. */
  readonly requests: Record<Operation, number> = { receive: 0, deleteBatch: 0, changeVisibilityBatch: 0, depth: 0, sendBatch: 0 };
  /** Receives that returned nothing. */
  emptyReceives = 0;

  constructor(options: SimSqsOptions) {
    this.clock = options.clock;
    this.random = options.random;
    this.latency = options.latency ?? { baseMs: 8, jitterMeanMs: 4 };
    this.findProbability = options.shortPollFindProbability ?? 0.8;
    this.wakeEveryPoller = options.wakeEveryPoller ?? false;
  }

  /** Creates the queue `name`, fed by `arrivals` when given; returns its URL. */
  createQueue(name: string, arrivals?: ArrivalSource, options: SimQueueOptions = {}): string {
    const url = `sim://sqs/${name}`;
    this.queues.set(url, new SimQueue(name, arrivals, options.redrive));
    return url;
  }

  get totalRequests(): number {
    return Object.values(this.requests).reduce((a, n) => a + n, 0);
  }

  /** First receive time of each message still known, by SQS MessageId (for splitting wait times). */
  firstReceivedAt(url: string, messageId: string): number | undefined {
    return this.queue(url).byId.get(messageId)?.firstReceivedAt;
  }

  /** Visible messages now, without a (counted) request: for the simulation's own timeline. */
  visibleCount(url: string): number {
    const q = this.queue(url);
    this.catchUp(q);
    return q.visible;
  }

  /** Send time of a message (for wait times), by SQS MessageId. */
  sentAt(url: string, messageId: string): number | undefined {
    return this.queue(url).byId.get(messageId)?.sent;
  }

  /** Messages not deleted yet, with their send times (visible or in flight). */
  pending(url: string): Array<{ messageId: string; sent: number }> {
    const q = this.queue(url);
    this.catchUp(q);
    return [...q.byId.values()].filter((m) => m.state !== 'deleted').map((m) => ({ messageId: m.messageId, sent: m.sent }));
  }

  async receive(url: string, request: ReceiveRequest, signal?: AbortSignal): Promise<ReceivedMessage[]> {
    this.requests.receive += 1;
    const q = this.queue(url);
    await this.halfTrip();
    const end = this.clock.now() + request.waitSeconds * 1000;
    let taken: ReceivedMessage[];
    for (;;) {
      this.catchUp(q);
      const becameVisible = q.becameVisible;
      taken = this.take(q, request, request.waitSeconds === 0);
      if (taken.length > 0 || this.clock.now() >= end || signal?.aborted) break;
      // Long poll: sleep until something may have become visible, or the wait ends.
      const wake = Math.min(end, q.arrivals?.peek() ?? Number.POSITIVE_INFINITY, q.inflight.peekKey(), q.delayed.peekKey());
      await this.waitOn(q, wake - this.clock.now(), signal);
      if (this.wakeEveryPoller) {
        // The emulator's way: any message made visible meanwhile ends the poll with one more look.
        this.catchUp(q);
        if (q.becameVisible !== becameVisible) {
          taken = this.take(q, request, false);
          break;
        }
      }
    }
    if (taken.length === 0) this.emptyReceives += 1;
    await this.halfTrip();
    return taken;
  }

  async deleteBatch(url: string, entries: readonly ReceiptEntry[]): Promise<BatchResult> {
    this.requests.deleteBatch += 1;
    const q = this.queue(url);
    await this.halfTrip();
    for (const entry of entries) {
      const message = q.byReceipt.get(entry.receiptHandle);
      // Like SQS, a stale receipt "succeeds" without deleting.
      if (!message || message.receipt !== entry.receiptHandle || message.state === 'deleted') continue;
      if (message.state === 'ready') q.visible -= 1;
      else q.inFlight -= 1;
      message.state = 'deleted';
      q.byReceipt.delete(entry.receiptHandle);
      q.byId.delete(message.messageId);
    }
    await this.halfTrip();
    return { failed: [] };
  }

  async changeVisibilityBatch(url: string, entries: readonly VisibilityEntry[]): Promise<BatchResult> {
    this.requests.changeVisibilityBatch += 1;
    const q = this.queue(url);
    await this.halfTrip();
    this.catchUp(q);
    const failed: BatchFailure[] = [];
    const now = this.clock.now();
    for (const entry of entries) {
      const message = q.byReceipt.get(entry.receiptHandle);
      if (!message || message.receipt !== entry.receiptHandle || message.state !== 'inflight') {
        failed.push({ id: entry.id, code: 'ReceiptHandleIsInvalid', message: 'stale or unknown receipt', senderFault: true });
        continue;
      }
      message.visibleAt = now + entry.visibilityTimeoutSeconds * 1000;
      if (entry.visibilityTimeoutSeconds === 0) this.makeVisible(q, message);
      else q.inflight.push(message.visibleAt, { message, visibleAt: message.visibleAt });
    }
    for (const wake of [...q.wakers]) wake();
    await this.halfTrip();
    return { failed };
  }

  async depth(url: string): Promise<QueueDepth> {
    this.requests.depth += 1;
    const q = this.queue(url);
    await this.halfTrip();
    this.catchUp(q);
    const depth = { visible: q.visible, inFlight: q.inFlight, delayed: q.delayed.size };
    await this.halfTrip();
    return depth;
  }

  async sendBatch(url: string, entries: readonly SendEntry[]): Promise<SendBatchResult> {
    this.requests.sendBatch += 1;
    const q = this.queue(url);
    await this.halfTrip();
    const messageIds: Record<string, string> = {};
    const failed: BatchFailure[] = [];
    for (const entry of entries) {
      // SQS holds each message, not the batch, to the limit: one too large fails alone.
      const bytes = messageBytes(entry.body, entry.attributes);
      if (bytes > SQS_MESSAGE_LIMIT_BYTES) {
        failed.push({
          id: entry.id,
          code: 'InvalidParameterValue',
          message: `message of ${bytes} bytes exceeds the limit`,
          senderFault: true,
        });
        continue;
      }
      const attributes = entry.attributes ? { ...entry.attributes } : NO_ATTRIBUTES;
      messageIds[entry.id] = this.add(q, entry.body, attributes, this.clock.now(), (entry.delaySeconds ?? 0) * 1000).messageId;
    }
    for (const wake of [...q.wakers]) wake();
    await this.halfTrip();
    return { failed, messageIds };
  }

  /** Adds a message sent at `sent`, visible after `delayMs`. */
  private add(q: SimQueue, body: string, attributes: Readonly<Record<string, string>>, sent: number, delayMs = 0): Message {
    const seq = this.nextSeq++;
    const message: Message = {
      messageId: `m${seq}`,
      body,
      attributes,
      sent,
      receiveCount: 0,
      receipt: undefined,
      visibleAt: sent + delayMs,
      state: delayMs > 0 ? 'delayed' : 'ready',
    };
    q.byId.set(message.messageId, message);
    if (message.state === 'delayed') q.delayed.push(message.visibleAt, message);
    else {
      q.ready.push(sent, message);
      q.visible += 1;
      q.becameVisible += 1;
    }
    return message;
  }

  /**
   * Moves a message a receive found to the queue's dead-letter queue, as SQS does once it has been
   * received `maxReceiveCount` times: same MessageId, body, attributes, send time and receive count.
   */
  private moveToDeadLetter(q: SimQueue, m: Message, deadLetterUrl: string): void {
    m.state = 'deleted';
    q.visible -= 1;
    q.byId.delete(m.messageId);
    if (m.receipt) q.byReceipt.delete(m.receipt);
    const dlq = this.queue(deadLetterUrl);
    const moved: Message = {
      messageId: m.messageId,
      body: m.body,
      attributes: m.attributes,
      sent: m.sent,
      receiveCount: m.receiveCount,
      receipt: undefined,
      visibleAt: this.clock.now(),
      state: 'ready',
    };
    dlq.byId.set(moved.messageId, moved);
    dlq.ready.push(moved.sent, moved);
    dlq.visible += 1;
    dlq.becameVisible += 1;
    for (const wake of [...dlq.wakers]) wake();
  }

  private makeVisible(q: SimQueue, message: Message): void {
    message.state = 'ready';
    q.inFlight -= 1;
    q.visible += 1;
    q.becameVisible += 1;
    q.ready.push(message.sent, message);
  }

  /** Brings a queue up to now: arrivals so far, delays that ended, and in-flight messages whose visibility ended. */
  private catchUp(q: SimQueue): void {
    const now = this.clock.now();
    if (q.arrivals) {
      while (q.arrivals.peek() <= now) {
        const arrival = q.arrivals.take();
        this.add(q, arrival.body, NO_ATTRIBUTES, arrival.at);
      }
    }
    while (q.delayed.peekKey() <= now) {
      const m = q.delayed.pop() as Message;
      m.state = 'ready';
      q.visible += 1;
      q.becameVisible += 1;
      q.ready.push(m.sent, m);
    }
    while (q.inflight.peekKey() <= now) {
      const entry = q.inflight.pop() as { message: Message; visibleAt: number };
      const m = entry.message;
      if (m.state === 'inflight' && m.visibleAt === entry.visibleAt) this.makeVisible(q, m);
    }
  }

  private take(q: SimQueue, request: ReceiveRequest, shortPoll: boolean): ReceivedMessage[] {
    const now = this.clock.now();
    const out: ReceivedMessage[] = [];
    const skipped: Message[] = [];
    // A short poll looks at a bounded sample of the oldest visible messages.
    let budget = shortPoll ? request.maxMessages * 3 : Number.POSITIVE_INFINITY;
    while (out.length < request.maxMessages && budget > 0 && q.ready.size > 0) {
      const m = q.ready.pop() as Message;
      if (m.state !== 'ready') continue;
      budget -= 1;
      if (shortPoll && this.random() >= this.findProbability) {
        skipped.push(m);
        continue;
      }
      // Only a receive that finds the message moves it (a short poll that misses it does not).
      if (q.redrive && m.receiveCount >= q.redrive.maxReceiveCount) {
        this.moveToDeadLetter(q, m, q.redrive.deadLetterUrl);
        continue;
      }
      m.state = 'inflight';
      q.visible -= 1;
      q.inFlight += 1;
      m.receiveCount += 1;
      m.firstReceivedAt ??= now;
      if (m.receipt) q.byReceipt.delete(m.receipt);
      m.receipt = `${m.messageId}#${m.receiveCount}`;
      q.byReceipt.set(m.receipt, m);
      m.visibleAt = now + request.visibilityTimeoutSeconds * 1000;
      q.inflight.push(m.visibleAt, { message: m, visibleAt: m.visibleAt });
      out.push({
        messageId: m.messageId,
        receiptHandle: m.receipt,
        body: m.body,
        receiveCount: m.receiveCount,
        sentTimestamp: m.sent,
        attributes: { ...m.attributes },
      });
    }
    for (const m of skipped) q.ready.push(m.sent, m);
    return out;
  }

  /** Sleeps up to `ms`, woken early by a visibility change or send on the queue, or the signal. */
  private async waitOn(q: SimQueue, ms: number, signal?: AbortSignal): Promise<void> {
    const wake = new AbortController();
    const onAbort = () => wake.abort();
    signal?.addEventListener('abort', onAbort, { once: true });
    const waker = () => wake.abort();
    q.wakers.add(waker);
    try {
      await this.clock.sleep(ms, wake.signal);
    } finally {
      q.wakers.delete(waker);
      signal?.removeEventListener('abort', onAbort);
    }
  }

  private halfTrip(): Promise<void> {
    const { baseMs, jitterMeanMs } = this.latency;
    const ms = baseMs + -Math.log(1 - this.random()) * jitterMeanMs;
    return this.clock.sleep(ms / 2);
  }

  private queue(url: string): SimQueue {
    const q = this.queues.get(url);
    if (!q) throw new Error(`no simulated queue ${url}`);
    return q;
  }
}
