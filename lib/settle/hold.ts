/**
 * A batch is settled when its slowest task ends, so a quick task's message waits for the settle
 * with its outcome decided. Its heartbeat stops with the task: without a hold, a batch that outlasts
 * the queue's visibility timeout lets SQS hand that message to another dispatcher, which runs the
 * body a second time though no process died. The hold keeps every decided message invisible until
 * its batch is settled: one ChangeMessageVisibilityBatch for all of a batch's held messages, a
 * moment before the first of them would lapse. A batch that ends within the visibility (nearly
 * all) makes no request.
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

  /** Keeps `message` invisible from now until {@link release}; `visibleUntil` is where its visibility stands. */
  keep(message: ReceivedMessage, visibleUntil: number): void {
    // One whose visibility has lapsed may be another worker's now: extending it with this receipt could undo theirs.
    if (this.released || visibleUntil <= this.ports.clock.now()) return;
    this.held.set(message.messageId, { message, visibleUntil });
    this.arm();
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
          for (const [id, h] of this.held) {
            // A message SQS would not extend is no longer ours to hold (its receipt went stale).
            if (failed.has(id)) this.held.delete(id);
            else h.visibleUntil = now + this.visibilityTimeoutSeconds * 1000;
          }
          if (failed.size > 0)
            this.ports.logger.warn('could not keep settled messages invisible until their batch settles', { failed: result.failed });
        },
        (error: unknown) => {
          this.held.clear();
          this.ports.logger.warn('could not keep settled messages invisible until their batch settles', { error: describe(error) });
        },
      )
      .finally(() => {
        this.extending = undefined;
        this.arm();
      });
  }
}
