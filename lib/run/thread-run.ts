import { type MessagePort, receiveMessageOnPort, type Worker } from 'node:worker_threads';
import { JobCancelledError, TimeLimitExceededError, WorkerCrashedError } from '../errors';
import type { Logger } from '../ports';
import { type RunHooks, serializeError, type TaskOutcome, type TaskRun } from './executor-types';
import type { CancelRequest, HandedRun, HeartbeatAnswer, StepAnswer, ThreadMessage } from './worker-thread';

/** An attempt's span as it goes with its run to the thread. */
export type Traceparent = NonNullable<HandedRun['trace']>;

/** A pool thread: its worker, the port it reports on, where it writes its runs' starts, and the runs it holds. */
export interface Thread {
  readonly worker: Worker;
  /** What the thread reports (ready, done, heartbeats, progress), read synchronously at a deadline. */
  readonly reports: MessagePort;
  /** A run's place holds its ticket (negated) until its body starts, then the start (epoch ms): see worker-thread.ts's START_SLOT. */
  readonly starts: BigInt64Array;
  /** The runs handed to it and not ended, by run id: where its reports go. */
  readonly runs: Map<number, ThreadRun>;
  /** True once the thread has loaded the bundle and listens for runs; false if it died first. */
  readonly loaded: Promise<boolean>;
  /** Why it could not load, when it could not. */
  loadError?: string;
  /** Its worker has exited (a reserved thread can die before its run). */
  exited?: boolean;
  /** It holds runs (handed over, not all ended): taken out of the pool until they are. */
  busy?: boolean;
  /** A run on it ended in a way that costs the thread (its limit, a crash, a cancel ignored): it is discarded once its runs are gone. */
  doomed?: boolean;
}

/** What a {@link ThreadRun} asks of its pool. */
export interface RunHost {
  readonly killGraceMs: number;
  readonly logger: Logger;
  /** A run left its thread: `reusable` false dooms the thread. */
  left(thread: Thread, reusable: boolean): void;
  /** A run taken back before its body started, to start on another thread. */
  rehand(run: TaskRun, hooks: RunHooks, resolve: (outcome: TaskOutcome) => void, trace?: Traceparent): void;
}

/**
 * One run on a pool thread: what the thread reports of it, the timers that bound it (the limit
 * timer, from the body's start as the thread wrote it; the kill grace after a cancel), and its one
 * outcome. Until its body starts it can be withdrawn (its place swapped from its ticket to 0), and
 * then no thread starts it here.
 */
export class ThreadRun {
  private ended = false;
  private cancelTimer: NodeJS.Timeout | undefined;
  private limitTimer: NodeJS.Timeout | undefined;
  private readonly limitMs: number;

  constructor(
    private readonly host: RunHost,
    readonly thread: Thread,
    readonly place: number,
    readonly ticket: number,
    readonly runId: number,
    readonly run: TaskRun,
    private readonly hooks: RunHooks,
    private readonly resolve: (outcome: TaskOutcome) => void,
    readonly trace?: Traceparent,
  ) {
    this.limitMs = run.timeLimitMs + host.killGraceMs;
    Atomics.store(thread.starts, place, BigInt(-ticket));
    thread.runs.set(runId, this);
  }

  /**
   * Starts its clocks as it is handed over: one timer for the whole limit from the hand-off (when it
   * comes, the body's start is known and the timer runs on to that start plus the limit, or the run
   * never started: see onLimit), and its job's cancel.
   */
  arm(): void {
    this.limitTimer = setTimeout(this.onLimit, this.limitMs);
    if (this.hooks.cancel?.aborted) this.onCancel();
    else this.hooks.cancel?.addEventListener('abort', this.onCancel, { once: true });
  }

  /** When the body started in its thread (epoch ms), as the thread wrote it; undefined before. */
  startedAt(): number | undefined {
    const at = Number(Atomics.load(this.thread.starts, this.place));
    return at > 0 ? at : undefined;
  }

  get settled(): boolean {
    return this.ended;
  }

  /**
   * Takes the run back if its body has not started (its place still holds its ticket): no thread
   * starts it here then, and it leaves the thread (`reusable` false: the thread is to be replaced).
   * False once it started.
   */
  withdraw(reusable = true): boolean {
    if (this.ended) return false;
    const waiting = BigInt(-this.ticket);
    if (Atomics.compareExchange(this.thread.starts, this.place, waiting, 0n) !== waiting) return false;
    this.leave(reusable);
    return true;
  }

  /** Withdraws the run, if it has not started, to start it on another thread: true then. */
  moveElsewhere(): boolean {
    if (!this.withdraw()) return false;
    this.host.rehand(this.run, this.hooks, this.resolve, this.trace);
    return true;
  }

  /** It was handed to a thread that never got it (the hand-off could not be sent): it ends crashed. */
  notHanded(error: Error): void {
    this.finish(this.crashed(error), false);
  }

  /** Its thread raised an error or exited: a run that had not started goes to another thread; the one that had, crashed. */
  threadDied(error: WorkerCrashedError): void {
    if (this.moveElsewhere()) return;
    this.finish(this.crashed(error), false);
  }

  /** What the thread reported of this run. */
  readonly onMessage = (message: ThreadMessage): void => {
    if (message.type === 'done') this.finish(message.outcome, true);
    else if (message.type === 'progress') this.hooks.progress?.(message.json);
    else if (message.type === 'heartbeat') {
      void this.hooks.heartbeat().then(
        (ok) => this.post({ type: 'heartbeat-answer', beat: message.beat, ok }),
        () => this.post({ type: 'heartbeat-answer', beat: message.beat, ok: false }),
      );
    } else if (message.type === 'step') {
      const keep = this.hooks.step ? this.hooks.step(message.step) : Promise.resolve(true);
      void keep.then(
        (kept) => this.post({ type: 'step-answer', ask: message.ask, kept }),
        (error: unknown) =>
          this.post({ type: 'step-answer', ask: message.ask, kept: false, error: error instanceof Error ? error.message : String(error) }),
      );
    }
  };

  private post(message: HeartbeatAnswer | StepAnswer | CancelRequest): void {
    if (!this.ended) this.thread.worker.postMessage(message);
  }

  private elapsed(): number {
    const startedAt = this.startedAt();
    return startedAt === undefined ? 0 : Math.max(0, Date.now() - startedAt);
  }

  private crashed(error: Error): TaskOutcome {
    return { status: 'failed', kind: 'crashed', durationMs: this.elapsed(), error: serializeError(error) };
  }

  /** Stops its clocks and leaves its thread (for good or not). */
  private leave(reusable: boolean): void {
    this.ended = true;
    clearTimeout(this.limitTimer);
    clearTimeout(this.cancelTimer);
    this.hooks.cancel?.removeEventListener('abort', this.onCancel);
    this.thread.runs.delete(this.runId);
    this.host.left(this.thread, reusable);
  }

  private finish(outcome: TaskOutcome, reusable: boolean): void {
    if (this.ended) return;
    this.leave(reusable);
    this.resolve(outcome);
  }

  /** What the thread reported and this thread has not read yet (it was busy): read now, in order, each to its run. */
  private readReports(): void {
    const { reports, runs } = this.thread;
    for (let report = receiveReport(reports); report !== undefined && !this.ended; report = receiveReport(reports)) {
      if ('runId' in report) runs.get(report.runId)?.onMessage(report);
    }
  }

  /**
   * The limit timer. A loaded, idle thread starts the body as soon as it reads the request; one that
   * has not within the task's whole limit is stuck (a previous task's stray callback hogging it): the
   * run is taken back and ends as crashed, never as a time limit the body never had, and the thread
   * is replaced. A body that started runs to its start plus the limit (and the kill grace); one still
   * running then loses its thread, which stops even a CPU-bound loop.
   */
  private readonly onLimit = (): void => {
    const { run } = this;
    // A body that ended in time may have reported so while this thread was busy.
    this.readReports();
    if (this.ended) return;
    const startedAt = this.startedAt();
    if (startedAt === undefined && this.withdraw(false)) {
      this.resolve(this.crashed(new WorkerCrashedError(`thread for ${run.task} did not start the body within ${this.limitMs} ms`)));
      return;
    }
    const leftMs = (startedAt ?? Date.now()) + this.limitMs - Date.now();
    if (leftMs > 0) {
      this.limitTimer = setTimeout(this.onLimit, leftMs);
      return;
    }
    this.host.logger.warn('task exceeded its time limit; terminating its thread', {
      task: run.task,
      jobId: run.jobId,
      timeLimitMs: run.timeLimitMs,
    });
    this.finish(
      { status: 'timed-out', durationMs: this.elapsed(), error: serializeError(new TimeLimitExceededError(run.task, run.timeLimitMs)) },
      false,
    );
  };

  /**
   * An operator's cancel: a run not started yet ends at once (its thread untouched); a started
   * one's signal aborts now, and a task that ignores it loses its thread after the kill grace, as at
   * its time limit.
   */
  private readonly onCancel = (): void => {
    const { run } = this;
    if (this.ended) return;
    const cancelled = (): TaskOutcome => ({
      status: 'cancelled',
      durationMs: this.elapsed(),
      error: serializeError(new JobCancelledError(run.jobId)),
    });
    if (this.withdraw()) {
      this.resolve(cancelled());
      return;
    }
    this.post({ type: 'cancel', runId: this.runId });
    this.cancelTimer = setTimeout(() => {
      this.readReports();
      if (this.ended) return;
      this.host.logger.warn('cancelled task did not stop within the kill grace; terminating its thread', {
        task: run.task,
        jobId: run.jobId,
      });
      this.finish(cancelled(), false);
    }, this.host.killGraceMs);
  };
}

/** The next report a thread's port holds, read synchronously; undefined when none. */
function receiveReport(port: MessagePort): ThreadMessage | undefined {
  return (receiveMessageOnPort(port) as { message: ThreadMessage } | undefined)?.message;
}
