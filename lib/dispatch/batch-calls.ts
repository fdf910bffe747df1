/**
 * Batch tasks' calls (`batch: { maxSize, maxWaitMs, key }`, `runBatch`): each of their jobs is
 * received, claimed and ended on its own (lib/dispatch/job.ts), but its run is one item of a call
 * gathered here. A call holds the items of one task and key value; it starts when it is full, when
 * `maxWaitMs` has passed since its first item, when the invocation must start it to end in time, or
 * when the loop stops. It runs on one task slot and one thread, under the task's time limit; each
 * item's outcome goes back to its own job, so only the failed items retry.
 *
 * An item gives its own slot back once it is handed here: the slots count calls, not items, so a
 * dispatcher of 10 slots gathers calls of 100.
 */

import type { Clock } from '../clock';
import { describe, JobCancelledError, WorkerCrashedError } from '../errors';
import { payloadAt } from '../policy/payload-paths';
import type { Logger } from '../ports';
import { type BatchRunItem, type RunHooks, serializeError, type TaskExecutor, type TaskOutcome, type TaskRun } from '../run/executor-types';
import type { TaskDefinition } from '../tasks/task';
import type { TaskSlots } from './slots';

/** One item waiting for its call: its job's run, the attempt's hooks, and where its outcome goes. */
interface Waiting {
  readonly run: TaskRun;
  readonly hooks: RunHooks;
  readonly resolve: (outcome: TaskOutcome) => void;
}

/** A call being gathered: its items, and what starts it. */
interface OpenCall {
  readonly def: TaskDefinition;
  readonly key: string | undefined;
  readonly items: Waiting[];
  /** Ends the wait for more items (the call starts now). */
  readonly stopWaiting: AbortController;
}

export interface BatchCallPorts {
  readonly executor: TaskExecutor;
  readonly clock: Clock;
  readonly logger: Logger;
}

/** Calls are gathered per set of task slots: one loop's run (its batches share them). */
const gatherers = new WeakMap<TaskSlots, BatchCalls>();

/** The calls gathered on `slots` (made at its first batch item). */
export function batchCallsOn(slots: TaskSlots, ports: BatchCallPorts): BatchCalls {
  let calls = gatherers.get(slots);
  if (!calls) {
    calls = new BatchCalls(ports, slots);
    gatherers.set(slots, calls);
  }
  return calls;
}

/** What a call's items share: the task and its `batch.key` value (undefined: a missing value, its own call). */
export function batchKeyOf(def: TaskDefinition, payload: unknown): string | undefined {
  const key = def.batch?.key;
  if (key === undefined) return undefined;
  const value = typeof key === 'function' ? key(payload) : payloadAt(payload, key);
  if (value === undefined || value === null) return undefined;
  return typeof value === 'string' ? value : JSON.stringify(value);
}

export class BatchCalls {
  private readonly open = new Map<string, OpenCall>();

  constructor(
    private readonly ports: BatchCallPorts,
    private readonly slots: TaskSlots,
  ) {}

  /**
   * The executor one item of `def` runs on: its `run` adds the item to the open call of its key and
   * resolves with the item's own outcome once the call has ended. `startBy` (epoch ms): the call must
   * start by then to end before the invocation does. A key the task's `batch.key` cannot read
   * (its function threw) ends the item `invalid-payload`, never the call.
   */
  itemExecutor(def: TaskDefinition, startBy: number, signal?: AbortSignal): TaskExecutor {
    return { run: (run, hooks) => this.add(def, run, hooks, startBy, signal), close: async () => {} };
  }

  private add(def: TaskDefinition, run: TaskRun, hooks: RunHooks, startBy: number, signal?: AbortSignal): Promise<TaskOutcome> {
    const window = def.batch;
    if (!window) return Promise.reject(new TypeError(`task ${def.name} has no batch rule`));
    let key: string | undefined;
    try {
      key = batchKeyOf(def, run.payload);
    } catch (error) {
      return Promise.resolve({
        status: 'failed',
        kind: 'invalid-payload',
        durationMs: 0,
        error: serializeError(new TypeError(`batch.key of task ${def.name} could not be read: ${describe(error)}`)),
      });
    }
    return new Promise<TaskOutcome>((resolve) => {
      const id = `${def.name}\u0000${key ?? '\u0001'}`;
      let call = this.open.get(id);
      if (!call) {
        call = { def, key, items: [], stopWaiting: new AbortController() };
        this.open.set(id, call);
        void this.gather(id, call, startBy, signal);
      }
      const item: Waiting = { run, hooks, resolve };
      call.items.push(item);
      // An item cancelled before its call starts leaves it at once.
      hooks.cancel?.addEventListener(
        'abort',
        () => {
          const at = call.items.indexOf(item);
          if (at < 0 || this.open.get(id) !== call) return;
          call.items.splice(at, 1);
          resolve({ status: 'cancelled', durationMs: 0, error: serializeError(new JobCancelledError(run.jobId)) });
        },
        { once: true },
      );
      if (call.items.length >= window.maxSize) {
        // Full: the next item opens the next call.
        this.open.delete(id);
        call.stopWaiting.abort();
      }
    });
  }

  /** Waits for the call's items (until full, its wait is over, it must start, or the loop stops), then runs it. */
  private async gather(id: string, call: OpenCall, startBy: number, signal?: AbortSignal): Promise<void> {
    const { clock } = this.ports;
    const waitMs = Math.min(call.def.batch?.maxWaitMs ?? 0, startBy - clock.now());
    const stop = signal ? AbortSignal.any([call.stopWaiting.signal, signal]) : call.stopWaiting.signal;
    if (waitMs > 0 && !stop.aborted) await clock.sleep(waitMs, stop);
    // Items on their way (claimed, a turn of the event loop from here) still join: on a virtual
    // clock the wait above passes at once, and a receive's items come a few turns apart.
    for (let seen = -1; seen !== call.items.length && !stop.aborted; ) {
      seen = call.items.length;
      await new Promise((resolve) => setImmediate(resolve));
    }
    if (this.open.get(id) === call) this.open.delete(id);
    if (call.items.length === 0) return;
    const lease = await this.slots.acquire();
    try {
      await this.runCall(call);
    } finally {
      lease.release();
    }
  }

  /** Runs one call on the executor and hands each item its outcome. Never throws. */
  private async runCall(call: OpenCall): Promise<void> {
    const { def, key, items } = call;
    const [first] = items as [Waiting, ...Waiting[]];
    const batchItems: BatchRunItem[] = items.map(({ run }) => ({
      jobId: run.jobId,
      payload: run.payload,
      attempt: run.attempt,
      fencingToken: run.fencingToken,
      appData: run.appData,
      ...(run.dependencies ? { dependencies: run.dependencies } : {}),
      ...(run.event ? { event: run.event } : {}),
    }));
    const run: TaskRun = {
      ...first.run,
      payload: null,
      batch: { items: batchItems, ...(key !== undefined ? { key } : {}) },
    };
    const hooks: RunHooks = {
      // Every item's message and lease; the call goes on while any item is still held.
      heartbeat: async () => (await Promise.all(items.map((i) => i.hooks.heartbeat().catch(() => false)))).some(Boolean),
      ...(first.hooks.log ? { log: first.hooks.log } : {}),
    };
    let outcome: TaskOutcome;
    try {
      outcome = await this.ports.executor.run(run, hooks);
    } catch (error) {
      outcome = { status: 'failed', kind: 'crashed', durationMs: 0, error: serializeError(new WorkerCrashedError(describe(error))) };
    }
    const each = outcome.status === 'succeeded' ? outcome.items : undefined;
    if (outcome.status === 'succeeded' && each?.length !== items.length) {
      this.ports.logger.error('a batch call reported no outcome for some items; they are retried', { task: def.name });
    }
    items.forEach((item, i) => {
      item.resolve({ ...itemOutcome(outcome, each?.[i]), call: { size: items.length, first: i === 0 } });
    });
  }
}

/** An item's end: its own, or the call's when the call was stopped from outside (a time limit, a crash). */
function itemOutcome(call: TaskOutcome, own: TaskOutcome | undefined): TaskOutcome {
  if (own) return own;
  if (call.status !== 'succeeded') return call;
  return {
    status: 'failed',
    kind: 'crashed',
    durationMs: call.durationMs,
    error: serializeError(new WorkerCrashedError('the batch call reported no outcome for this item')),
  };
}
