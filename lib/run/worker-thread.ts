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
/**
 * Where a pool thread writes when the body of each run handed to it started (epoch ms): one
 * BigInt64 per place of a hand-off ({@link HAND_OFF_PLACES}) in a SharedArrayBuffer. A run waits
 * its turn with its ticket there, negated; the thread swaps that for the start as the body begins,
 * and the pool may swap it for 0 first (the run is withdrawn, to start on another thread). So a
 * start costs no message (one would wake the dispatcher's thread, one more per run for the shortest
 * tasks), and a run is started by one thread or none, never two.
 */
export const START_SLOT = 'taskworkerStartSlot';

/** Runs one hand-off can carry: a thread's start places. */
export const HAND_OFF_PLACES = 10;

/** One run of a hand-off: where its start is written, and the ticket that place holds until then. */
export interface HandedRun {
  readonly runId: number;
  readonly run: TaskRun;
  readonly place: number;
  readonly ticket: number;
  /**
   * The attempt's span on the dispatcher thread (W3C trace context): the body runs with it as its
   * remote parent, so spans it starts (with a tracer provider registered in the thread) are its children.
   */
  readonly trace?: { readonly traceparent: string; readonly tracestate?: string };
}

/**
 * Pool → thread: runs to start one after another, in order (a short task's runs of one batch go in
 * one hand-off: one wake-up of the thread, not one per run). Each reports its own end.
 */
export interface RunsRequest {
  readonly type: 'runs';
  readonly runs: readonly HandedRun[];
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

export type ThreadMessage = ThreadReady | RunDone | HeartbeatRequest | ProgressReport | StepRequest;

/**
 * The body of a pool thread. Every tasks bundle calls this at load; it only acts inside a
 * thread the pool started, where it runs what it is handed one run at a time.
 */
export function startTaskWorker(modules: readonly TaskModuleEntry[]): void {
  const port = parentPort;
  const data = workerData as Record<string, unknown> | undefined;
  if (isMainThread || !port || !data?.[WORKER_FLAG]) return;
  const reports = (data[REPORT_PORT] as MessagePort | undefined) ?? port;
  const starts = new BigInt64Array(data[START_SLOT] as SharedArrayBuffer);
  const report = (message: ThreadMessage) => reports.postMessage(message);
  const registry = new Map(definitionsFromModules(modules).map((def) => [def.name, def]));
  const beats = new Map<number, (ok: boolean) => void>();
  let nextBeat = 1;
  const asks = new Map<number, (answer: StepAnswer) => void>();
  let nextAsk = 1;
  /** The run in progress and how to stop it (one run per thread at a time). */
  let current: { readonly runId: number; readonly stop: () => void } | undefined;

  /** Runs one handed run, unless the pool withdrew it first; reports its end. */
  const runHanded = async ({ runId, run, place, ticket, trace }: HandedRun): Promise<void> => {
    const startedAt = Date.now();
    const waiting = BigInt(-ticket);
    // Its time limit counts from here. A run the pool took back (its place no longer holds its ticket) is not this thread's to start.
    if (Atomics.compareExchange(starts, place, waiting, BigInt(startedAt)) !== waiting) return;
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
      const hooks = {
        heartbeat: () =>
          new Promise<boolean>((resolve) => {
            const beat = nextBeat++;
            beats.set(beat, resolve);
            report({ type: 'heartbeat', runId, beat });
          }),
        progress: (json: string) => {
          report({ type: 'progress', runId, json });
        },
        step: (step: StepWrite) =>
          new Promise<boolean>((resolve, reject) => {
            const ask = nextAsk++;
            asks.set(ask, (answer) => (answer.error === undefined ? resolve(answer.kept) : reject(new Error(answer.error))));
            report({ type: 'step', runId, ask, step });
          }),
      };
      const deadline = startedAt + run.timeLimitMs;
      const { signal, cancel, stop } = deadlineSignal(run, deadline);
      current = { runId, stop };
      outcome = await withRemoteParent(trace, () => runTaskBody(def, run, deadline, signal, hooks));
      current = undefined;
      cancel();
    }
    report({ type: 'done', runId, outcome });
  };

  port.on('message', async (request: RunsRequest | HeartbeatAnswer | CancelRequest | StepAnswer) => {
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
    for (const handed of request.runs) await runHanded(handed);
  });
  report({ type: 'ready' });
}
