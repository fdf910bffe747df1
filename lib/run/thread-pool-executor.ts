import { Worker } from 'node:worker_threads';
import { JobCancelledError, TimeLimitExceededError, WorkerCrashedError } from '../errors';
import { type Logger, silentLogger } from '../ports';
import { activeTraceparent } from '../trace/otel';
import { type RunHooks, serializeError, type TaskExecutor, type TaskOutcome, type TaskRun } from './types';
import { type CancelRequest, type HeartbeatAnswer, type RunRequest, type ThreadMessage, WORKER_FLAG } from './worker-thread';

export interface ThreadPoolOptions {
  /** Path of the built tasks bundle (`tasks.cjs`); each thread loads it once. */
  readonly bundlePath: string;
  /** Threads, and so tasks running at once. */
  readonly size: number;
  /** Time after a task's limit (when its AbortSignal fires) before its thread is terminated. */
  readonly killGraceMs: number;
  readonly logger?: Logger;
}

/**
 * Runs each task in a worker thread, one task per thread at a time. A task that outlives its
 * limit plus the grace has its thread terminated, which stops even a CPU-bound loop; the other
 * threads, and so the rest of the batch, carry on. Threads are reused across batches and
 * invocations; a terminated or crashed thread is replaced on demand.
 */
export class ThreadPoolExecutor implements TaskExecutor {
  private readonly idle: Worker[] = [];
  private readonly waiting: Array<(worker: Worker) => void> = [];
  private readonly logger: Logger;
  private live = 0;
  private nextRunId = 1;
  private closed = false;

  constructor(private readonly options: ThreadPoolOptions) {
    if (!Number.isInteger(options.size) || options.size < 1) throw new RangeError(`pool size ${options.size} must be ≥ 1`);
    this.logger = options.logger ?? silentLogger;
  }

  /** Starts threads ahead of the first batch (during Lambda init, which is not billed the same way). */
  warm(count = this.options.size): void {
    while (this.live < Math.min(count, this.options.size)) {
      this.live += 1;
      this.park(this.spawn());
    }
  }

  async run(run: TaskRun, hooks: RunHooks): Promise<TaskOutcome> {
    if (this.closed) throw new WorkerCrashedError('the thread pool is closed');
    return this.execute(await this.acquire(), run, hooks);
  }

  async close(): Promise<void> {
    this.closed = true;
    const threads = this.idle.splice(0);
    this.live -= threads.length;
    await Promise.all(threads.map((worker) => worker.terminate()));
  }

  private spawn(): Worker {
    const worker = new Worker(this.options.bundlePath, {
      workerData: { [WORKER_FLAG]: true },
      // Task errors' stacks point at the task's own source files (the bundle's source map), in
      // logs, job records and the archive, however the dispatcher process was started.
      execArgv: [...process.execArgv.filter((a) => a !== '--enable-source-maps'), '--enable-source-maps'],
    });
    worker.unref();
    // Always listening, so an error raised by a task's stray callback after it returned never
    // reaches Node as an unhandled 'error' event (which would take the dispatcher down).
    worker.on('error', (error) => this.logger.warn('task thread raised an error', { error: error.message }));
    worker.on('exit', () => {
      const index = this.idle.indexOf(worker);
      if (index >= 0) {
        this.idle.splice(index, 1);
        this.live -= 1;
      }
    });
    return worker;
  }

  private acquire(): Promise<Worker> {
    const worker = this.idle.pop();
    if (worker) return Promise.resolve(worker);
    if (this.live < this.options.size) {
      this.live += 1;
      return Promise.resolve(this.spawn());
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  private park(worker: Worker): void {
    const next = this.waiting.shift();
    if (next) next(worker);
    else this.idle.push(worker);
  }

  private discard(worker: Worker): void {
    this.live -= 1;
    void worker.terminate();
    if (this.waiting.length > 0 && !this.closed) {
      this.live += 1;
      this.park(this.spawn());
    }
  }

  private execute(worker: Worker, run: TaskRun, hooks: RunHooks): Promise<TaskOutcome> {
    const runId = this.nextRunId++;
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    worker.ref();
    return new Promise<TaskOutcome>((resolve) => {
      let settled = false;
      let cancelTimer: NodeJS.Timeout | undefined;
      const finish = (outcome: TaskOutcome, reusable: boolean) => {
        if (settled) return;
        settled = true;
        clearTimeout(killTimer);
        clearTimeout(cancelTimer);
        hooks.cancel?.removeEventListener('abort', onCancel);
        worker.off('message', onMessage);
        worker.off('error', onError);
        worker.off('exit', onExit);
        worker.unref();
        if (reusable && !this.closed) this.park(worker);
        else this.discard(worker);
        resolve(outcome);
      };
      const crashed = (error: Error): TaskOutcome => ({
        status: 'failed',
        kind: 'crashed',
        durationMs: elapsed(),
        error: serializeError(error),
      });
      const onMessage = (message: ThreadMessage) => {
        if (message.runId !== runId) return;
        if (message.type === 'done') finish(message.outcome, true);
        else if (message.type === 'progress') hooks.progress?.(message.json);
        else if (message.type === 'heartbeat') {
          void hooks.heartbeat().then(
            (ok) => answer(message.beat, ok),
            () => answer(message.beat, false),
          );
        }
      };
      const answer = (beat: number, ok: boolean) => {
        const reply: HeartbeatAnswer = { type: 'heartbeat-answer', beat, ok };
        if (!settled) worker.postMessage(reply);
      };
      const onError = (error: Error) => {
        finish(crashed(new WorkerCrashedError(`thread running ${run.task} crashed: ${error.message}`, { cause: error })), false);
      };
      const onExit = (code: number) =>
        finish(crashed(new WorkerCrashedError(`thread running ${run.task} exited with code ${code}`)), false);
      const killTimer = setTimeout(() => {
        this.logger.warn('task exceeded its time limit; terminating its thread', {
          task: run.task,
          jobId: run.jobId,
          timeLimitMs: run.timeLimitMs,
        });
        finish(
          { status: 'timed-out', durationMs: elapsed(), error: serializeError(new TimeLimitExceededError(run.task, run.timeLimitMs)) },
          false,
        );
      }, run.timeLimitMs + this.options.killGraceMs);
      // An operator's cancel: the task's signal aborts now; a task that ignores it loses its thread
      // after the kill grace, as at its time limit.
      const onCancel = () => {
        if (settled) return;
        const stop: CancelRequest = { type: 'cancel', runId };
        worker.postMessage(stop);
        cancelTimer = setTimeout(() => {
          this.logger.warn('cancelled task did not stop within the kill grace; terminating its thread', {
            task: run.task,
            jobId: run.jobId,
          });
          finish({ status: 'cancelled', durationMs: elapsed(), error: serializeError(new JobCancelledError(run.jobId)) }, false);
        }, this.options.killGraceMs);
      };
      worker.on('message', onMessage);
      worker.once('error', onError);
      worker.once('exit', onExit);
      // The attempt's span (the active context here) goes with the run: threads do not share contexts.
      const trace = activeTraceparent();
      const request: RunRequest = { type: 'run', runId, run, ...(trace ? { trace } : {}) };
      worker.postMessage(request);
      if (hooks.cancel?.aborted) onCancel();
      else hooks.cancel?.addEventListener('abort', onCancel, { once: true });
    });
  }
}
