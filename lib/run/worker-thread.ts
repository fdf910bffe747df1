import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import { definitionsFromModules, type TaskModuleEntry } from '../tasks/modules';
import { deadlineSignal, runTaskBody } from './task-body';
import { serializeError, type TaskOutcome, type TaskRun } from './types';

/** Marks a worker thread started by the pool, so a bundle loaded anywhere else stays inert. */
export const WORKER_FLAG = 'taskworkerThread';

export interface RunRequest {
  readonly type: 'run';
  readonly runId: number;
  readonly run: TaskRun;
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

export type ThreadMessage = RunDone | HeartbeatRequest;

/**
 * The body of a pool thread. Every tasks bundle calls this at load; it only acts inside a
 * thread the pool started, where it answers run requests one at a time.
 */
export function startTaskWorker(modules: readonly TaskModuleEntry[]): void {
  const port = parentPort;
  if (isMainThread || !port || !(workerData as Record<string, unknown> | undefined)?.[WORKER_FLAG]) return;
  const registry = new Map(definitionsFromModules(modules).map((def) => [def.name, def]));
  const beats = new Map<number, (ok: boolean) => void>();
  let nextBeat = 1;
  port.on('message', async (request: RunRequest | HeartbeatAnswer) => {
    if (request.type === 'heartbeat-answer') {
      beats.get(request.beat)?.(request.ok);
      beats.delete(request.beat);
      return;
    }
    const { run } = request;
    const hooks = {
      heartbeat: () =>
        new Promise<boolean>((resolve) => {
          const beat = nextBeat++;
          beats.set(beat, resolve);
          const ask: HeartbeatRequest = { type: 'heartbeat', runId: request.runId, beat };
          port.postMessage(ask);
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
      const deadline = Date.now() + run.timeLimitMs;
      const { signal, cancel } = deadlineSignal(run, deadline);
      outcome = await runTaskBody(def, run, deadline, signal, hooks);
      cancel();
    }
    const done: RunDone = { type: 'done', runId: request.runId, outcome };
    port.postMessage(done);
  });
}
