/**
 * `taskworker keys`: the busiest keys of tasks whose limits hold per key (`limits.per: 'key'`),
 * from each key's limit item in the stats table — jobs running (slots held by live holders), jobs
 * waiting in its line (lib/dispatch/key-lines.ts) and the limit its dispatchers hold it to. And
 * one key of a task (`keys show`, the dashboard's key page): its limit, its order (an `ordered`
 * task's turn and counter, lib/settle/key-order.ts) and the jobs waiting in its lines.
 */
import type { KeyUsage } from '../adapters/dynamo-limits';
import type { Clock } from '../clock';
import { keyLineTag } from '../dispatch/key-lines';
import { orderTag } from '../settle/key-order';
import type { JobReader, OrderStore } from '../track/job-stores';
import { keyProblem } from '../wire/envelope';
import type { KeyView } from './answers';

export type { KeyUsage, KeyView };

/** Reads every key's limit item of the version, or one. */
export interface KeyUsageReader {
  keyUsage(now: number): Promise<KeyUsage[]>;
  /** One key's limit item (one read); undefined when the key has none. */
  keyUsageOf(task: string, key: string, now: number): Promise<KeyUsage | undefined>;
}

/** The most jobs of a line a key view lists. */
export const KEY_VIEW_LINE = 50;

/** What is wrong with a task and key asked for (a CLI option, a dashboard query), or undefined. */
export function keyViewProblem(task: string, key: string): string | undefined {
  if (task === '') return 'task is empty: name the task whose key to show';
  const problem = keyProblem(key);
  return problem ? `key ${problem}` : undefined;
}

/**
 * One key of a task: its limit item (when its task limits per key), its order item (when its task is
 * ordered) and the first {@link KEY_VIEW_LINE} jobs of its lines. Reads the items and lines
 * whatever the task's rules (the operator may not have its code): what the key has is shown.
 */
export async function keyView(
  ctx: { readonly clock: Clock; readonly keys?: KeyUsageReader; readonly jobs: OrderStore & Pick<JobReader, 'getMany'> },
  task: string,
  key: string,
): Promise<KeyView> {
  const now = ctx.clock.now();
  const [usage, order, ordered, limited] = await Promise.all([
    ctx.keys?.keyUsageOf(task, key, now),
    ctx.jobs.keyOrder(task, key),
    ctx.jobs.lineEntries(orderTag(task, key), KEY_VIEW_LINE),
    ctx.jobs.lineEntries(keyLineTag(task, key), KEY_VIEW_LINE),
  ]);
  const states = new Map((await ctx.jobs.getMany([...ordered, ...limited].map((e) => e.jobId))).map((r) => [r.jobId, r.state]));
  const stateOf = (jobId: string) => {
    const state = states.get(jobId);
    return state !== undefined ? { state } : {};
  };
  // An order's line holds its running job and tags an ended job may leave behind: the waiting are those at or past the turn, not ended.
  const waitingInOrder = ordered.filter(
    (e) => e.at >= order.next && states.get(e.jobId) !== 'succeeded' && states.get(e.jobId) !== 'cancelled',
  );
  const line = [
    ...waitingInOrder.map((e, i) => ({ jobId: e.jobId, place: i + 1, number: e.at, ...stateOf(e.jobId) })),
    ...limited
      .filter((e) => states.get(e.jobId) === 'waiting-key' || states.get(e.jobId) === 'queued')
      .map((e, i) => ({ jobId: e.jobId, place: i + 1, ...stateOf(e.jobId) })),
  ];
  return {
    task,
    key,
    ...(usage
      ? {
          limit: {
            running: usage.running,
            waiting: usage.waiting,
            ...(usage.concurrency !== undefined ? { concurrency: usage.concurrency } : {}),
          },
        }
      : {}),
    ...(order.last > 0
      ? {
          order: {
            last: order.last,
            next: order.next,
            pending: Math.max(0, order.last - order.next + 1),
            ...(order.gapSince !== undefined ? { gapSince: order.gapSince } : {}),
          },
        }
      : {}),
    line: line.slice(0, KEY_VIEW_LINE),
  };
}

export interface KeysView {
  /** The busiest keys: most jobs running and waiting first. */
  readonly keys: readonly KeyUsage[];
  /** Keys with jobs running or waiting, before the limit took the busiest. */
  readonly busy: number;
}

/**
 * The `limit` busiest keys, most jobs running and waiting first, of `task` or of every task. A key
 * whose jobs have all ended keeps its item (its counts at 0) and is left out.
 */
export async function busiestKeys(
  ctx: { readonly clock: Clock; readonly keys?: KeyUsageReader },
  options: { readonly task?: string; readonly limit: number },
): Promise<KeysView> {
  const read = ctx.keys ? await ctx.keys.keyUsage(ctx.clock.now()) : [];
  const busy = read.filter((k) => (options.task === undefined || k.task === options.task) && k.running + k.waiting > 0);
  busy.sort((a, b) => b.running + b.waiting - (a.running + a.waiting) || b.waiting - a.waiting || a.key.localeCompare(b.key));
  return { keys: busy.slice(0, options.limit), busy: busy.length };
}
