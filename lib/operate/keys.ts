/**
 * `taskworker keys`: the busiest keys of tasks whose limits hold per key (`limits.per: 'key'`),
 * from each key's limit item in the stats table — jobs running (slots held by live holders), jobs
 * waiting in its line (lib/dispatch/key-lines.ts) and the limit its dispatchers hold it to.
 */
import type { KeyUsage } from '../adapters/dynamo-limits';
import type { Clock } from '../clock';

export type { KeyUsage };

/** Reads every key's limit item of the version. */
export interface KeyUsageReader {
  keyUsage(now: number): Promise<KeyUsage[]>;
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
