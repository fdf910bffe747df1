import { MessageChannel, type MessagePort, receiveMessageOnPort, Worker } from 'node:worker_threads';
import { describe, JobCancelledError, TimeLimitExceededError, WorkerCrashedError } from '../errors';
import { type Logger, silentLogger } from '../ports';
import { activeTraceparent } from '../trace/otel';
import { type RunHooks, type RunReservation, serializeError, type TaskExecutor, type TaskOutcome, type TaskRun } from './executor-types';
import {
  type CancelRequest,
  type HeartbeatAnswer,
  REPORT_PORT,
  type RunRequest,
  type StepAnswer,
  type ThreadMessage,
  WORKER_FLAG,
} from './worker-thread';

export interface ThreadPoolOptions {
  /** Path of the built tasks bundle (`tasks.cjs`); each thread loads it once. */
  readonly bundlePath: string;
  /** Threads, and so tasks running at once. */
  readonly size: number;
  /** Time after a task's limit (when its AbortSignal fires) before its thread is terminated. */
  readonly killGraceMs: number;
  readonly logger?: Logger;
}

/** A pool thread: its worker, the port it reports on, and whether it has loaded the tasks bundle. */
interface Thread {
  readonly worker: Worker;
  /** What the thread reports (ready, started, done, heartbeats, progress), read synchronously at a deadline. */
  readonly reports: MessagePort;
  /** True once the thread has loaded the bundle and listens for runs; false if it died first. */
  readonly loaded: Promise<boolean>;
  /** Why it could not load, when it could not. */
  loadError?: string;
  /** Its worker has exited (a reserved thread can die before its run). */
  exited?: boolean;
}

/**
 * Runs each task in a worker thread, one task per thread at a time. A run is handed only to a
 * thread that has loaded the tasks bundle (threads are started ahead, and a terminated one is
 * replaced at once), and its time limit counts from the moment the body starts in its thread, as
 * the thread reports it: loading a bundle or a busy dispatcher thread never eats into it. A task
 * that outlives its limit plus the grace has its thread terminated, which stops even a CPU-bound
 * loop; the other threads, and so the rest of the batch, carry on. A body that ended in time is a
 * success even when the dispatcher's own thread was too busy to hear of it before the deadline: at
 * the deadline the thread's reports are read first.
 */
export class ThreadPoolExecutor implements TaskExecutor {
  /** Loaded threads with no run. */
  private readonly idle: Thread[] = [];
  private readonly waiting: Array<(thread: Thread | undefined) => void> = [];
  /** {@link ready} calls waiting for a thread to become free (each told once, whether it is still free or not). */
  private readonly readyWaiters = new Set<() => void>();
  private readonly logger: Logger;
  /** Threads started and not ended (loading, idle or running). */
  private live = 0;
  private nextRunId = 1;
  private closed = false;

  constructor(private readonly options: ThreadPoolOptions) {
    if (!Number.isInteger(options.size) || options.size < 1) throw new RangeError(`pool size ${options.size} must be ≥ 1`);
    this.logger = options.logger ?? silentLogger;
  }

  /** Starts threads ahead of the first batch (during Lambda init, which is not billed the same way). */
  warm(count = this.options.size): void {
    while (!this.closed && this.live < Math.min(count, this.options.size)) this.start();
  }

  /**
   * Waits until a loaded thread is free, or `deadline` (epoch ms) passes: true when a run handed over
   * now would start at once. The dispatcher asks before it claims a job, so the claim's lease and
   * the task's time limit both start with the body.
   */
  async ready(deadline: number): Promise<boolean> {
    if (this.idle.length > 0) return true;
    if (this.closed) return false;
    this.warm();
    return new Promise<boolean>((resolve) => {
      const timer = setTimeout(
        () => {
          this.readyWaiters.delete(notify);
          resolve(this.idle.length > 0);
        },
        Math.max(0, deadline - Date.now()),
      );
      const notify = () => {
        clearTimeout(timer);
        resolve(this.idle.length > 0);
      };
      this.readyWaiters.add(notify);
    });
  }

  /**
   * Takes a loaded, free thread out of the idle ones for one run, waiting for one until `deadline`
   * (epoch ms). {@link ready} alone is a look: two callers seeing one free thread would both claim a
   * job, and the second job's body would wait for the next thread to free or load while its claim's
   * lease and its message's visibility ran out, so another delivery could take the job over.
   */
  async reserve(deadline: number): Promise<RunReservation | undefined> {
    for (;;) {
      const thread = this.idle.pop();
      if (thread) return new Reserved(this, thread, (t) => this.park(t));
      if (this.closed || !(await this.ready(deadline))) return undefined;
    }
  }

  async run(run: TaskRun, hooks: RunHooks, reservation?: RunReservation): Promise<TaskOutcome> {
    let reserved = reservation instanceof Reserved && reservation.pool === this ? reservation.take() : undefined;
    if (reserved?.exited) {
      this.live -= 1;
      reserved = undefined;
    }
    if (this.closed) {
      if (reserved) this.park(reserved);
      throw new WorkerCrashedError('the thread pool is closed');
    }
    const thread = reserved ?? (await this.acquire());
    if (!thread) {
      return {
        status: 'failed',
        kind: 'crashed',
        durationMs: 0,
        error: serializeError(new WorkerCrashedError(`no thread could load the tasks bundle to run ${run.task}`)),
      };
    }
    return this.execute(thread, run, hooks);
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const resolve of this.waiting.splice(0)) resolve(undefined);
    for (const notify of this.readyWaiters) notify();
    this.readyWaiters.clear();
    const threads = this.idle.splice(0);
    this.live -= threads.length;
    await Promise.all(threads.map((thread) => this.end(thread)));
  }

  /** Starts a thread; it joins the idle ones once it has loaded the bundle. */
  private start(): void {
    this.live += 1;
    const { port1: reports, port2 } = new MessageChannel();
    const worker = new Worker(this.options.bundlePath, {
      workerData: { [WORKER_FLAG]: true, [REPORT_PORT]: port2 },
      transferList: [port2],
      // Task errors' stacks point at the task's own source files (the bundle's source map), in
      // logs, job records and the archive, however the dispatcher process was started.
      execArgv: [...process.execArgv.filter((a) => a !== '--enable-source-maps'), '--enable-source-maps'],
    });
    worker.unref();
    reports.unref();
    let loaded: (ok: boolean) => void = () => {};
    const thread: Thread = { worker, reports, loaded: new Promise<boolean>((resolve) => (loaded = resolve)) };
    const onReady = (message: ThreadMessage) => {
      if (message.type !== 'ready') return;
      reports.off('message', onReady);
      loaded(true);
    };
    reports.on('message', onReady);
    // Always listening, so an error raised by a task's stray callback after it returned never
    // reaches Node as an unhandled 'error' event (which would take the dispatcher down).
    worker.on('error', (error) => {
      thread.loadError ??= error.message;
      this.logger.warn('task thread raised an error', { error: error.message });
    });
    worker.once('exit', () => {
      thread.exited = true;
      loaded(false);
      reports.close();
      const index = this.idle.indexOf(thread);
      if (index >= 0) {
        this.idle.splice(index, 1);
        this.live -= 1;
      }
    });
    void thread.loaded.then((ok) => {
      if (ok) {
        this.park(thread);
        return;
      }
      // It died loading the bundle (a task module that throws at load, say): the runs waiting are
      // told, rather than starting thread after thread that dies the same way.
      this.live -= 1;
      this.logger.error('a task thread could not load the tasks bundle', { error: thread.loadError ?? 'it exited' });
      const next = this.waiting.shift();
      next?.(undefined);
    });
  }

  /** A loaded, free thread: one idle now, or the next one to become free or load. Undefined when none can. */
  private acquire(): Promise<Thread | undefined> {
    const thread = this.idle.pop();
    if (thread) return Promise.resolve(thread);
    if (this.live < this.options.size) this.start();
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  private park(thread: Thread): void {
    if (thread.exited) {
      // It died while set aside: a thread fewer, started again when one is next wanted.
      this.live -= 1;
      return;
    }
    if (this.closed) {
      this.live -= 1;
      void this.end(thread);
      return;
    }
    const next = this.waiting.shift();
    if (next) {
      next(thread);
      return;
    }
    this.idle.push(thread);
    const told = [...this.readyWaiters];
    this.readyWaiters.clear();
    for (const notify of told) notify();
  }

  /** Ends a thread that ran out of time (or crashed) and starts its replacement at once, to load before it is needed. */
  private discard(thread: Thread): void {
    this.live -= 1;
    void this.end(thread);
    if (!this.closed) this.start();
  }

  private async end(thread: Thread): Promise<void> {
    thread.reports.close();
    await thread.worker.terminate();
  }

  private execute(thread: Thread, run: TaskRun, hooks: RunHooks): Promise<TaskOutcome> {
    const runId = this.nextRunId++;
    const { killGraceMs } = this.options;
    thread.worker.ref();
    thread.reports.ref();
    return new Promise<TaskOutcome>((resolve) => {
      const ends = {
        killGraceMs,
        logger: this.logger,
        end: (reusable: boolean) => {
          if (reusable && !this.closed) this.park(thread);
          else this.discard(thread);
        },
        resolve,
      };
      new ThreadRun(thread, runId, run, hooks, ends).begin();
    });
  }
}

/** How a {@link ThreadRun} ends: its thread back to the pool (or discarded), and its outcome. */
interface RunEnds {
  readonly killGraceMs: number;
  readonly logger: Logger;
  /** Parks the thread again when `reusable` and the pool is open, else discards it. */
  readonly end: (reusable: boolean) => void;
  readonly resolve: (outcome: TaskOutcome) => void;
}

/**
 * One run on a pool thread: what the thread reports of it, the timers that bound it (the start
 * guard, the kill timer from the body's start, the kill grace after a cancel), and its one outcome.
 */
class ThreadRun {
  private settled = false;
  /** When the body started in its thread (epoch ms), as the thread reports it. */
  private startedAt: number | undefined;
  private cancelTimer: NodeJS.Timeout | undefined;
  private killTimer: NodeJS.Timeout | undefined;
  private startGuard: NodeJS.Timeout | undefined;
  private readonly limitMs: number;

  constructor(
    private readonly thread: Thread,
    private readonly runId: number,
    private readonly run: TaskRun,
    private readonly hooks: RunHooks,
    private readonly ends: RunEnds,
  ) {
    this.limitMs = run.timeLimitMs + ends.killGraceMs;
  }

  /** Hands the run to its thread and listens for its reports, its thread's death and a cancel. */
  begin(): void {
    const { thread, run, hooks } = this;
    // A loaded, idle thread starts the body as soon as it reads the request. One that does not say
    // so within the task's whole limit is stuck (a previous task's stray callback hogging it): it
    // is replaced, and the attempt ends as crashed, never as a time limit the body never had.
    this.startGuard = setTimeout(() => {
      this.readReports();
      if (this.settled || this.startedAt !== undefined) return;
      this.finish(this.crashed(new WorkerCrashedError(`thread for ${run.task} did not start the body within ${this.limitMs} ms`)), false);
    }, this.limitMs);
    thread.reports.on('message', this.onMessage);
    thread.worker.once('error', this.onError);
    thread.worker.once('exit', this.onExit);
    // The attempt's span (the active context here) goes with the run: threads do not share contexts.
    const trace = activeTraceparent();
    const request: RunRequest = { type: 'run', runId: this.runId, run, ...(trace ? { trace } : {}) };
    try {
      thread.worker.postMessage(request);
    } catch (error) {
      this.finish(this.crashed(new WorkerCrashedError(`could not hand ${run.task} to its thread: ${describe(error)}`)), false);
      return;
    }
    if (hooks.cancel?.aborted) this.onCancel();
    else hooks.cancel?.addEventListener('abort', this.onCancel, { once: true });
  }

  private elapsed(): number {
    return this.startedAt === undefined ? 0 : Math.max(0, Date.now() - this.startedAt);
  }

  private finish(outcome: TaskOutcome, reusable: boolean): void {
    if (this.settled) return;
    this.settled = true;
    clearTimeout(this.killTimer);
    clearTimeout(this.startGuard);
    clearTimeout(this.cancelTimer);
    this.hooks.cancel?.removeEventListener('abort', this.onCancel);
    const { worker, reports } = this.thread;
    reports.off('message', this.onMessage);
    worker.off('error', this.onError);
    worker.off('exit', this.onExit);
    worker.unref();
    reports.unref();
    this.ends.end(reusable);
    this.ends.resolve(outcome);
  }

  private crashed(error: Error): TaskOutcome {
    return { status: 'failed', kind: 'crashed', durationMs: this.elapsed(), error: serializeError(error) };
  }

  private readonly onMessage = (message: ThreadMessage): void => {
    if (!('runId' in message) || message.runId !== this.runId) return;
    if (message.type === 'started') this.armKill(message.at);
    else if (message.type === 'done') this.finish(message.outcome, true);
    else if (message.type === 'progress') this.hooks.progress?.(message.json);
    else if (message.type === 'heartbeat') {
      void this.hooks.heartbeat().then(
        (ok) => this.answer(message.beat, ok),
        () => this.answer(message.beat, false),
      );
    } else if (message.type === 'step') {
      const keep = this.hooks.step ? this.hooks.step(message.step) : Promise.resolve(true);
      void keep.then(
        (kept) => this.answerStep({ type: 'step-answer', ask: message.ask, kept }),
        (error: unknown) => this.answerStep({ type: 'step-answer', ask: message.ask, kept: false, error: describe(error) }),
      );
    }
  };

  private answerStep(answer: StepAnswer): void {
    if (!this.settled) this.thread.worker.postMessage(answer);
  }

  /** What the thread reported and this thread has not read yet (it was busy): read now, in order. */
  private readReports(): void {
    const { reports } = this.thread;
    for (let report = receiveMessageOnPort(reports); report !== undefined && !this.settled; report = receiveMessageOnPort(reports)) {
      this.onMessage(report.message as ThreadMessage);
    }
  }

  private answer(beat: number, ok: boolean): void {
    const reply: HeartbeatAnswer = { type: 'heartbeat-answer', beat, ok };
    if (!this.settled) this.thread.worker.postMessage(reply);
  }

  private readonly onError = (error: Error): void => {
    this.finish(this.crashed(new WorkerCrashedError(`thread running ${this.run.task} crashed: ${error.message}`, { cause: error })), false);
  };

  private readonly onExit = (code: number): void =>
    this.finish(this.crashed(new WorkerCrashedError(`thread running ${this.run.task} exited with code ${code}`)), false);

  /** The kill timer, from the body's start as the thread saw it. */
  private armKill(at: number): void {
    const { run } = this;
    clearTimeout(this.startGuard);
    this.startedAt = at;
    this.killTimer = setTimeout(
      () => {
        // A body that ended in time may have reported so while this thread was busy.
        this.readReports();
        if (this.settled) return;
        this.ends.logger.warn('task exceeded its time limit; terminating its thread', {
          task: run.task,
          jobId: run.jobId,
          timeLimitMs: run.timeLimitMs,
        });
        this.finish(
          { status: 'timed-out', durationMs: this.elapsed(), error: serializeError(new TimeLimitExceededError(run.task, run.timeLimitMs)) },
          false,
        );
      },
      Math.max(0, at + this.limitMs - Date.now()),
    );
  }

  /**
   * An operator's cancel: the task's signal aborts now; a task that ignores it loses its thread
   * after the kill grace, as at its time limit.
   */
  private readonly onCancel = (): void => {
    const { run } = this;
    if (this.settled) return;
    const stop: CancelRequest = { type: 'cancel', runId: this.runId };
    this.thread.worker.postMessage(stop);
    this.cancelTimer = setTimeout(() => {
      this.readReports();
      if (this.settled) return;
      this.ends.logger.warn('cancelled task did not stop within the kill grace; terminating its thread', {
        task: run.task,
        jobId: run.jobId,
      });
      this.finish({ status: 'cancelled', durationMs: this.elapsed(), error: serializeError(new JobCancelledError(run.jobId)) }, false);
    }, this.ends.killGraceMs);
  };
}

/** A thread {@link ThreadPoolExecutor.reserve} set aside: taken once by a run, or parked again on release. */
class Reserved implements RunReservation {
  private thread: Thread | undefined;

  constructor(
    readonly pool: ThreadPoolExecutor,
    thread: Thread,
    private readonly park: (thread: Thread) => void,
  ) {
    this.thread = thread;
  }

  /** The thread, once: undefined if it was taken or released already. */
  take(): Thread | undefined {
    const thread = this.thread;
    this.thread = undefined;
    return thread;
  }

  release(): void {
    const thread = this.take();
    if (thread) this.park(thread);
  }
}
