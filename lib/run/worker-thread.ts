import { isMainThread, type MessagePort, parentPort, workerData } from 'node:worker_threads';
import { definitionsFromModules, type TaskModuleEntry } from '../tasks/modules';
import { withRemoteParent } from '../trace/otel';
import type { StepWrite } from '../track/job-record';
import { serializeError, type TaskOutcome, type TaskRun } from './executor-types';
import { deadlineSignal, runTaskBody } from './task-body';

/** Marks a worker thread started by the pool, so a bundle loaded anywhere else stays inert. */
export const WORKER_FLAG = 'taskworkerThread';
/**
 * The port a pool thread reports on (its own channel, not the worker's: the pool reads it
 * synchronously at a run's deadline, so a body that ended in time is never taken for one that did not).
 */
export const REPORT_PORT = 'taskworkerReports';

export interface RunRequest {
  readonly type: 'run';
  readonly runId: number;
  readonly run: TaskRun;
  /**
   * The attempt's span on the dispatcher thread (W3C trace context): the body runs with it as its
   * remote parent, so spans it starts (with a tracer provider registered in the thread) are its children.
   */
  readonly trace?: { readonly traceparent: string; readonly tracestate?: string };
}

export interface RunDone {
  readonly type: 'done';
  readonly runId: number;
  readonly outcome: TaskOutcome;
}

/** Thread → pool: the task called ctx.heartbeat(). */
export interface HeartbeatRequest {
  readonly type: 'heartbeat';
  readonly runId: number;
  readonly beat: number;
}

/** Pool → thread: whether the heartbeat kept the lease. */
export interface HeartbeatAnswer {
  readonly type: 'heartbeat-answer';
  readonly beat: number;
  readonly ok: boolean;
}

/** Thread → pool: the task asks a step's result kept (`ctx.step.run`). */
export interface StepRequest {
  readonly type: 'step';
  readonly runId: number;
  readonly ask: number;
  readonly step: StepWrite;
}

/** Pool → thread: whether the step was kept (false: the attempt lost the job), or why the write failed. */
export interface StepAnswer {
  readonly type: 'step-answer';
  readonly ask: number;
  readonly kept: boolean;
  readonly error?: string;
}

/** Thread → pool: the task reported progress (JSON, size checked). */
export interface ProgressReport {
  readonly type: 'progress';
  readonly runId: number;
  readonly json: string;
}

/** Pool → thread: an operator cancelled the run's job; its signal aborts with JobCancelledError. */
export interface CancelRequest {
  readonly type: 'cancel';
  readonly runId: number;
}

/** Thread → pool: the thread has loaded the tasks bundle and takes runs. */
export interface ThreadReady {
  readonly type: 'ready';
}

/** Thread → pool: the body of run `runId` starts now (epoch ms): its time limit counts from here. */
export interface RunStarted {
  readonly type: 'started';
  readonly runId: number;
  readonly at: number;
}

export type ThreadMessage = ThreadReady | RunStarted | RunDone | HeartbeatRequest | ProgressReport | StepRequest;

/**
 * The body of a pool thread. Every tasks bundle calls this at load; it only acts inside a
 * thread the pool started, where it answers run requests one at a time.
 */
export function startTaskWorker(modules: readonly TaskModuleEntry[]): void {
  const port = parentPort;
  const data = workerData as Record<string, unknown> | undefined;
  if (isMainThread || !port || !data?.[WORKER_FLAG]) return;
  const reports = (data[REPORT_PORT] as MessagePort | undefined) ?? port;
  const report = (message: ThreadMessage) => reports.postMessage(message);
  const registry = new Map(definitionsFromModules(modules).map((def) => [def.name, def]));
  const beats = new Map<number, (ok: boolean) => void>();
  let nextBeat = 1;
  const asks = new Map<number, (answer: StepAnswer) => void>();
  let nextAsk = 1;
  /** The run in progress and how to stop it (one run per thread at a time). */
  let current: { readonly runId: number; readonly stop: () => void } | undefined;
  port.on('message', async (request: RunRequest | HeartbeatAnswer | CancelRequest | StepAnswer) => {
    if (request.type === 'heartbeat-answer') {
      beats.get(request.beat)?.(request.ok);
      beats.delete(request.beat);
      return;
    }
    if (request.type === 'step-answer') {
      asks.get(request.ask)?.(request);
      asks.delete(request.ask);
      return;
    }
    if (request.type === 'cancel') {
      if (current?.runId === request.runId) current.stop();
      return;
    }
    const { run } = request;
    const hooks = {
      heartbeat: () =>
        new Promise<boolean>((resolve) => {
          const beat = nextBeat++;
          beats.set(beat, resolve);
          report({ type: 'heartbeat', runId: request.runId, beat });
        }),
      progress: (json: string) => {
        report({ type: 'progress', runId: request.runId, json });
      },
      step: (step: StepWrite) =>
        new Promise<boolean>((resolve, reject) => {
          const ask = nextAsk++;
          asks.set(ask, (answer) => (answer.error === undefined ? resolve(answer.kept) : reject(new Error(answer.error))));
          report({ type: 'step', runId: request.runId, ask, step });
        }),
    };
    const def = registry.get(run.task);
    let outcome: TaskOutcome;
    if (!def) {
      outcome = {
        status: 'failed',
        kind: 'crashed',
        durationMs: 0,
        error: serializeError(new RangeError(`task ${run.task} is not in this bundle`)),
      };
    } else {
      const startedAt = Date.now();
      report({ type: 'started', runId: request.runId, at: startedAt });
      const deadline = startedAt + run.timeLimitMs;
      const { signal, cancel, stop } = deadlineSignal(run, deadline);
      current = { runId: request.runId, stop };
      outcome = await withRemoteParent(request.trace, () => runTaskBody(def, run, deadline, signal, hooks));
      current = undefined;
      cancel();
    }
    report({ type: 'done', runId: request.runId, outcome });
  });
  report({ type: 'ready' });
}
