/**
 * A batch is settled when its slowest task ends, so a quick task's message waits for the settle
 * with its outcome decided. Its heartbeat stops with the task: without a hold, a batch that outlasts
 * the queue's visibility timeout lets SQS hand that message to another dispatcher, which runs the
 * body a second time though no process died. The hold keeps every decided message invisible until
 * its batch is settled: one ChangeMessageVisibilityBatch for all of a batch's held messages, a
 * moment before the first of them would lapse. A batch that ends within the visibility (nearly
 * all) makes no request.
 *
 * It keeps the batch's messages from their receive, too, while the dispatcher works out what each
 * is (a dependent registering with each of its dependencies, a park, a limit): a dependent of a
 * hundred jobs on a loaded machine took longer than its visibility, another dispatcher received it
 * and did the same, and its receives ran out into the DLQ though every copy was handled. A message
 * that goes on to run is let go as it starts: its heartbeat keeps it from there.
 */
import type { Clock } from '../clock';
import { HEARTBEAT_LEAD_MS, visibilityReserveMs } from '../deadlines';
import { describe } from '../errors';
import type { Logger, QueueClient, ReceivedMessage } from '../ports';
import { callWithEntryRetries } from '../retry-entries';

export interface HoldPorts {
  readonly queues: QueueClient;
  readonly clock: Clock;
  readonly logger: Logger;
}

export class SettleHold {
  /** Held messages and when each would become visible again (epoch ms). */
  private readonly held = new Map<string, { readonly message: ReceivedMessage; visibleUntil: number }>();
  private timer: NodeJS.Timeout | undefined;
  /** The lapse the timer is set for. */
  private armedFor = Number.POSITIVE_INFINITY;
  private extending: Promise<void> | undefined;
  private released = false;
  private readonly leadMs: number;

  constructor(
    private readonly ports: HoldPorts,
    private readonly url: string,
    private readonly visibilityTimeoutSeconds: number,
  ) {
    this.leadMs = visibilityReserveMs(visibilityTimeoutSeconds, HEARTBEAT_LEAD_MS);
  }

  /**
   * Keeps `message` invisible from now until it is let go or the hold released; `visibleUntil` is
   * where its visibility stands (what the hold moved it to, if later).
   */
  keep(message: ReceivedMessage, visibleUntil: number): void {
    const until = Math.max(visibleUntil, this.held.get(message.messageId)?.visibleUntil ?? 0);
    // One whose visibility has lapsed may be another worker's now: extending it with this receipt could undo theirs.
    if (this.released || until <= this.ports.clock.now()) return;
    this.held.set(message.messageId, { message, visibleUntil: until });
    this.arm();
  }

  /**
   * Stops holding `messageId` (its run's heartbeat keeps it now, or it is left to lapse). Returns
   * where its visibility stands; undefined when it was not held (or SQS refused to extend it).
   */
  letGo(messageId: string): number | undefined {
    const until = this.held.get(messageId)?.visibleUntil;
    this.held.delete(messageId);
    return until;
  }

  /**
   * Stops holding (the settle takes over): no extension starts after this. Returns the extension
   * under way, if one is, to wait for; none otherwise (a settle that has nothing to wait for does not).
   */
  release(): Promise<void> | undefined {
    this.released = true;
    clearTimeout(this.timer);
    return this.extending;
  }

  /** One timer for the batch, at the earliest lapse less the heartbeat's lead; real time, as the heartbeat's. */
  private arm(): void {
    if (this.released || this.extending || this.held.size === 0) return;
    const first = Math.min(...[...this.held.values()].map((h) => h.visibleUntil));
    // The timer already set fires for this lapse or an earlier one.
    if (this.timer !== undefined && this.armedFor <= first) return;
    clearTimeout(this.timer);
    this.armedFor = first;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        this.extend();
      },
      Math.max(0, first - this.leadMs - this.ports.clock.now()),
    );
    // The settle releases the hold; a timer left by a batch that never settles must not keep a process alive.
    this.timer.unref();
  }

  private extend(): void {
    // All let go since the timer was set: nothing to extend.
    if (this.released || this.held.size === 0) return;
    const now = this.ports.clock.now();
    // All of them at once: one request, and they lapse together from then on.
    const entries = [...this.held.values()].map((h) => ({
      id: h.message.messageId,
      receiptHandle: h.message.receiptHandle,
      visibilityTimeoutSeconds: this.visibilityTimeoutSeconds,
    }));
    this.extending = callWithEntryRetries(entries, (e) => this.ports.queues.changeVisibilityBatch(this.url, e), this.ports.clock)
      .then(
        (result) => {
          const failed = new Set(result.failed.map((f) => f.id));
          // The ones this request was for: one kept or let go while it was under way is not among them.
          for (const { id } of entries) {
            const h = this.held.get(id);
            if (!h) continue;
            // A message SQS would not extend is no longer ours to hold (its receipt went stale).
            if (failed.has(id)) this.held.delete(id);
            else h.visibleUntil = now + this.visibilityTimeoutSeconds * 1000;
          }
          if (failed.size > 0)
            this.ports.logger.warn('could not keep settled messages invisible until their batch settles', { failed: result.failed });
        },
        (error: unknown) => {
          for (const { id } of entries) this.held.delete(id);
          this.ports.logger.warn('could not keep settled messages invisible until their batch settles', { error: describe(error) });
        },
      )
      .finally(() => {
        this.extending = undefined;
        this.arm();
      });
  }
}
