import { MessageChannel, Worker } from 'node:worker_threads';
import { describe, WorkerCrashedError } from '../errors';
import { type Logger, silentLogger } from '../ports';
import { activeTraceparent } from '../trace/otel';
import { type RunHooks, type RunReservation, serializeError, type TaskExecutor, type TaskOutcome, type TaskRun } from './executor-types';
import { type RunHost, type Thread, ThreadRun, type Traceparent } from './thread-run';
import {
  HAND_OFF_PLACES,
  type HandedRun,
  REPORT_PORT,
  type RunsRequest,
  START_SLOT,
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
  /** {@link SHORT_RUN_MS} by default. */
  readonly shortRunMs?: number;
  /** {@link MOVE_AFTER_MS} by default. */
  readonly moveAfterMs?: number;
}

/**
 * A task is short once its bodies have averaged at most this long (ms, as their threads timed them)
 * over {@link SHORT_AFTER_RUNS} runs: its runs handed over together go to one thread in one hand-off.
 */
export const SHORT_RUN_MS = 2;
/** Runs of a task its threads time before it may count as short (one that timed out or crashed starts over). */
export const SHORT_AFTER_RUNS = 10;
/**
 * A run that waits in a shared hand-off this long without starting (the one before it turned out
 * long) is taken back and started on a thread of its own: it never waits behind a long body for more.
 */
export const MOVE_AFTER_MS = 20;

/** A run on its way to a thread: what the pool hands over, and where its outcome goes. */
interface Handing {
  readonly run: TaskRun;
  readonly hooks: RunHooks;
  readonly resolve: (outcome: TaskOutcome) => void;
  readonly trace?: Traceparent;
}

/** How long a task's bodies take, as its threads timed them. */
interface BodyTimes {
  runs: number;
  meanMs: number;
}

/**
 * Runs each task in a worker thread, one task per thread at a time. A run is handed only to a
 * thread that has loaded the tasks bundle (threads are started ahead, and a terminated one is
 * replaced at once), and its time limit counts from the moment the body starts in its thread, as
 * the thread records it: loading a bundle or a busy dispatcher thread never eats into it. A task
 * that outlives its limit plus the grace has its thread terminated, which stops even a CPU-bound
 * loop; the other threads, and so the rest of the batch, carry on. A body that ended in time is a
 * success even when the dispatcher's own thread was too busy to hear of it before the deadline: at
 * the deadline the thread's reports are read first.
 *
 * A hand-off wakes a thread, and for the shortest bodies the wake-ups are most of the cost (on a
 * small machine the woken thread takes the core from the dispatcher's). So the runs of a short task
 * ({@link SHORT_RUN_MS}) handed over in one turn of the event loop (a batch's) go to one thread in
 * one message, and it starts them one after another; each reports its own end. One that has not
 * started {@link MOVE_AFTER_MS} after the hand-off is taken back and started on another thread, and
 * one behind a body that loses its thread never started there, so it is started elsewhere: the
 * thread-per-body isolation and every run's whole limit are kept.
 */
export class ThreadPoolExecutor implements TaskExecutor, RunHost {
  /** Loaded threads with no run. */
  private readonly idle: Thread[] = [];
  private readonly waiting: Array<(thread: Thread | undefined) => void> = [];
  /** {@link ready} calls waiting for a thread to become free (each told once, whether it is still free or not). */
  private readonly readyWaiters = new Set<() => void>();
  readonly logger: Logger;
  readonly killGraceMs: number;
  /** Threads started and not ended (loading, idle or running). */
  private live = 0;
  private nextRunId = 1;
  private nextTicket = 1;
  private closed = false;
  /** Short runs gathered in this turn of the event loop for one thread, handed over at its end. */
  private gathering: { readonly thread: Thread; readonly runs: Handing[] } | undefined;
  private readonly bodyTimes = new Map<string, BodyTimes>();

  constructor(private readonly options: ThreadPoolOptions) {
    if (!Number.isInteger(options.size) || options.size < 1) throw new RangeError(`pool size ${options.size} must be ≥ 1`);
    this.logger = options.logger ?? silentLogger;
    this.killGraceMs = options.killGraceMs;
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
    if (!thread) return noThread(run);
    // The attempt's span (the active context here) goes with the run: threads do not share contexts.
    const trace = activeTraceparent();
    return new Promise<TaskOutcome>((resolve) => {
      const handing: Handing = { run, hooks, resolve: (outcome) => this.timed(run.task, outcome, resolve), ...(trace ? { trace } : {}) };
      this.give(thread, handing);
    });
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

  /** {@link RunHost.left}: a run left `thread`; once none is left the thread goes back to the pool, or is replaced when doomed. */
  left(thread: Thread, reusable: boolean): void {
    if (!reusable) thread.doomed = true;
    // What waits behind a body that costs the thread never started there: it starts elsewhere.
    if (thread.doomed) for (const other of [...thread.runs.values()]) other.moveElsewhere();
    if (thread.runs.size > 0 || !thread.busy) return;
    thread.busy = false;
    thread.worker.unref();
    thread.reports.unref();
    if (thread.doomed || this.closed) this.discard(thread);
    else this.park(thread);
  }

  /** {@link RunHost.rehand}: a run taken back before it started goes to the next free thread, on its own. */
  rehand(run: TaskRun, hooks: RunHooks, resolve: (outcome: TaskOutcome) => void, trace?: Traceparent): void {
    void this.acquire().then((thread) => {
      if (thread) this.handOff(thread, [{ run, hooks, resolve, ...(trace ? { trace } : {}) }]);
      else resolve(noThread(run));
    });
  }

  /** A run for `thread`: a short task's joins the runs gathered in this turn (and `thread` is free again), any other goes at once. */
  private give(thread: Thread, handing: Handing): void {
    if (!this.isShort(handing.run.task)) {
      this.handOff(thread, [handing]);
      return;
    }
    const gathering = this.gathering;
    if (gathering && !gathering.thread.exited) {
      this.park(thread);
      gathering.runs.push(handing);
      if (gathering.runs.length === HAND_OFF_PLACES) this.handGathered(gathering);
      return;
    }
    // A gathering whose thread died meanwhile goes now (handOff starts its runs elsewhere).
    if (gathering) this.handGathered(gathering);
    const gathered = { thread, runs: [handing] };
    this.gathering = gathered;
    // The rest of this turn's runs (a batch's, started together) join it before it is handed over.
    setImmediate(() => this.handGathered(gathered));
  }

  /** Hands over the runs gathered for one thread, once: at the end of their turn, when full, or when its thread died. */
  private handGathered(gathered: { readonly thread: Thread; readonly runs: Handing[] }): void {
    if (this.gathering !== gathered) return;
    this.gathering = undefined;
    this.handOff(gathered.thread, gathered.runs);
  }

  /** Hands `runs` to `thread` in one message, each at a start place of its own. */
  private handOff(thread: Thread, runs: readonly Handing[]): void {
    if (thread.exited) {
      for (const r of runs) this.rehand(r.run, r.hooks, r.resolve, r.trace);
      return;
    }
    if (!thread.busy) {
      thread.busy = true;
      thread.worker.ref();
      thread.reports.ref();
    }
    const handed = runs.map(
      (r, place) => new ThreadRun(this, thread, place, this.nextTicket++, this.nextRunId++, r.run, r.hooks, r.resolve, r.trace),
    );
    const request: RunsRequest = {
      type: 'runs',
      runs: handed.map(({ runId, run, place, ticket, trace }): HandedRun => ({ runId, run, place, ticket, ...(trace ? { trace } : {}) })),
    };
    // Armed before the message goes: a run whose job was cancelled already is withdrawn now, before
    // the thread (on another core) could start it.
    for (const r of handed) r.arm();
    try {
      thread.worker.postMessage(request);
    } catch (error) {
      for (const r of handed) r.notHanded(new WorkerCrashedError(`could not hand ${r.run.task} to its thread: ${describe(error)}`));
      return;
    }
    if (handed.length > 1) {
      setTimeout(() => {
        for (const r of handed) if (!r.settled && r.startedAt() === undefined) r.moveElsewhere();
      }, this.options.moveAfterMs ?? MOVE_AFTER_MS).unref();
    }
  }

  /** Whether `task`'s runs are short enough to share a hand-off. */
  private isShort(task: string): boolean {
    const times = this.bodyTimes.get(task);
    return times !== undefined && times.runs >= SHORT_AFTER_RUNS && times.meanMs <= (this.options.shortRunMs ?? SHORT_RUN_MS);
  }

  /** Notes how long a run's body took (a mean over the last few), then passes its outcome on. */
  private timed(task: string, outcome: TaskOutcome, resolve: (outcome: TaskOutcome) => void): void {
    const failedHard = outcome.status === 'timed-out' || (outcome.status === 'failed' && outcome.kind === 'crashed');
    if (failedHard) this.bodyTimes.delete(task);
    else {
      const times = this.bodyTimes.get(task) ?? { runs: 0, meanMs: outcome.durationMs };
      times.runs += 1;
      times.meanMs += (outcome.durationMs - times.meanMs) / Math.min(times.runs, SHORT_AFTER_RUNS);
      this.bodyTimes.set(task, times);
    }
    resolve(outcome);
  }

  /** Starts a thread; it joins the idle ones once it has loaded the bundle. */
  private start(): void {
    this.live += 1;
    const { port1: reports, port2 } = new MessageChannel();
    const starts = new BigInt64Array(new SharedArrayBuffer(BigInt64Array.BYTES_PER_ELEMENT * HAND_OFF_PLACES));
    const worker = new Worker(this.options.bundlePath, {
      workerData: { [WORKER_FLAG]: true, [REPORT_PORT]: port2, [START_SLOT]: starts.buffer },
      transferList: [port2],
      // Task errors' stacks point at the task's own source files (the bundle's source map), in
      // logs, job records and the archive, however the dispatcher process was started.
      execArgv: [...process.execArgv.filter((a) => a !== '--enable-source-maps'), '--enable-source-maps'],
    });
    let loaded: (ok: boolean) => void = () => {};
    const thread: Thread = { worker, reports, starts, runs: new Map(), loaded: new Promise<boolean>((resolve) => (loaded = resolve)) };
    // Listening refs the port: a loading thread keeps the process alive (whoever waits for it is
    // told), a loaded idle one does not (a hand-off refs both again).
    reports.on('message', (message: ThreadMessage) => {
      if (message.type !== 'ready') thread.runs.get(message.runId)?.onMessage(message);
      else {
        reports.unref();
        loaded(true);
      }
    });
    worker.unref();
    // Always listening, so an error raised by a task's stray callback after it returned never
    // reaches Node as an unhandled 'error' event (which would take the dispatcher down).
    worker.on('error', (error) => {
      thread.loadError ??= error.message;
      this.logger.warn('task thread raised an error', { error: error.message });
      for (const r of [...thread.runs.values()]) {
        r.threadDied(new WorkerCrashedError(`thread running ${r.run.task} crashed: ${error.message}`, { cause: error }));
      }
    });
    worker.once('exit', (code) => {
      thread.exited = true;
      loaded(false);
      for (const r of [...thread.runs.values()])
        r.threadDied(new WorkerCrashedError(`thread running ${r.run.task} exited with code ${code}`));
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
}

/** A run no thread could take: the bundle does not load. */
function noThread(run: TaskRun): TaskOutcome {
  return {
    status: 'failed',
    kind: 'crashed',
    durationMs: 0,
    error: serializeError(new WorkerCrashedError(`no thread could load the tasks bundle to run ${run.task}`)),
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
