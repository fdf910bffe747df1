/**
 * How a dispatcher learns that an operator cancelled a job it is running: it reads the version's
 * cancellations item (lib/track/job-record.ts `CancelRequests`) at most once per {@link CANCEL_POLL_MS}
 * while it holds running claimed jobs, and not at all when it holds none. One read serves every job
 * the process runs: not a read per job, nor per message.
 */
import { describe } from '../errors';
import type { Logger } from '../ports';
import type { ClaimStore } from '../track/job-stores';

/** How often a dispatcher holding running claimed jobs reads the cancellations item. */
export const CANCEL_POLL_MS = 1_000;

/**
 * Watches the cancellations item for the jobs registered with it, and calls each one's `onCancel`
 * once its job is found there. A read whose version was seen already changes nothing; a job
 * registered after a read is checked at once against what that read found.
 *
 * @example
 * ```ts
 * const watch = new CancelWatch(jobs, logger);
 * const stop = new AbortController();
 * const unwatch = watch.watch('job-1', () => stop.abort());
 * // … run the job with stop.signal …
 * unwatch();
 * ```
 */
export class CancelWatch {
  private readonly watched = new Map<string, Set<() => void>>();
  private timer: NodeJS.Timeout | undefined;
  private reading: Promise<void> | undefined;
  private seen: { readonly version: number; readonly requests: Readonly<Record<string, number>> } | undefined;

  constructor(
    private readonly jobs: Pick<ClaimStore, 'cancellations'>,
    private readonly logger: Logger,
    private readonly pollMs = CANCEL_POLL_MS,
  ) {}

  /** Watches `jobId` until the returned function is called; `onCancel` runs (at most once) when it is cancelled. */
  watch(jobId: string, onCancel: () => void): () => void {
    let fired = false;
    const once = () => {
      if (fired) return;
      fired = true;
      onCancel();
    };
    const callbacks = this.watched.get(jobId) ?? new Set();
    callbacks.add(once);
    this.watched.set(jobId, callbacks);
    if (this.seen?.requests[jobId] !== undefined) once();
    this.arm();
    return () => {
      callbacks.delete(once);
      if (callbacks.size === 0 && this.watched.get(jobId) === callbacks) this.watched.delete(jobId);
      if (this.watched.size === 0) {
        clearTimeout(this.timer);
        this.timer = undefined;
      }
    };
  }

  /** Reads now rather than at the next poll (a lease write was refused: the job may have been cancelled). */
  poke(): void {
    if (this.watched.size > 0) void this.read();
  }

  private arm(): void {
    if (this.timer || this.watched.size === 0) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.read().then(() => this.arm());
    }, this.pollMs);
    this.timer.unref();
  }

  private read(): Promise<void> {
    this.reading ??= (async () => {
      try {
        const found = await this.jobs.cancellations();
        if (found.version === this.seen?.version) return;
        this.seen = found;
        for (const [jobId, callbacks] of [...this.watched]) if (found.requests[jobId] !== undefined) for (const fn of [...callbacks]) fn();
      } catch (error) {
        this.logger.warn('cancellations could not be read; trying again at the next poll', { error: describe(error) });
      } finally {
        this.reading = undefined;
      }
    })();
    return this.reading;
  }
}

const watches = new WeakMap<Pick<ClaimStore, 'cancellations'>, CancelWatch>();

/** The one watch of a job store: every dispatcher of a process that shares the store shares its reads. */
export function cancelWatchFor(jobs: Pick<ClaimStore, 'cancellations'>, logger: Logger): CancelWatch {
  let watch = watches.get(jobs);
  if (!watch) {
    watch = new CancelWatch(jobs, logger);
    watches.set(jobs, watch);
  }
  return watch;
}
