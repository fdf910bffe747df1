/**
 * Fleet-wide limits as a task or a queue declares them (`limits`), validated. What they do is
 * lib/track/fleet-limits.ts's.
 */
import { ConfigError, TaskDefinitionError } from '../errors';

export interface Limits {
  /** Jobs running at once, fleet-wide (1..100000). */
  readonly concurrency?: number;
  /** Jobs started per second, fleet-wide (> 0). */
  readonly perSecond?: number;
  /** Starts a bucket holds when idle. @defaultValue max(1, ceil(perSecond)) */
  readonly burst?: number;
  /**
   * `'key'`: the limits hold per key value (the job's `key`; jobs without one are one group), each
   * key on its own — at most `concurrency` of one customer's jobs at once. A job over its key's
   * concurrency is parked in the jobs table (not received again and again) and sent when a job of its
   * key ends, oldest first; the queue's other keys run meanwhile. A task's only (needs its queue
   * tracked `full`). See docs/keys.md.
   */
  readonly per?: 'key';
  /** With `per: 'key'`: limits on all the task's jobs together, beside each key's (`{ concurrency: 20 }`). */
  readonly total?: Limits;
}

/** A limit held per key value ({@link Limits.per}). */
export const isPerKey = (limits: Limits): boolean => limits.per === 'key';

/** Validates `limits` (a task's or a queue's), naming the field; undefined when absent or empty. */
export function resolveLimits(value: unknown, field: string, owner?: string, nested = false): Limits | undefined {
  if (value === undefined) return undefined;
  const fail = (f: string, v: unknown, expected: string): never => {
    throw owner ? new TaskDefinitionError(owner, f, v, expected) : new ConfigError(f, v, expected);
  };
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return fail(
      field,
      value,
      nested ? '{ concurrency?, perSecond?, burst? }' : "{ concurrency?, perSecond?, burst?, per?: 'key', total? }",
    );
  const l = value as Record<string, unknown>;
  const out: { concurrency?: number; perSecond?: number; burst?: number; per?: 'key'; total?: Limits } = {};
  if (l.per !== undefined) {
    if (nested) fail(`${field}.per`, l.per, 'no per inside total (total is every key together)');
    if (l.per !== 'key') fail(`${field}.per`, l.per, "'key'");
    // A queue's jobs are many tasks': a key means something only to its task.
    if (!owner) fail(`${field}.per`, l.per, "no per on a queue's limits (a task's limits may be per key)");
    out.per = 'key';
  }
  if (l.total !== undefined) {
    if (out.per === undefined) fail(`${field}.total`, l.total, "no total without per: 'key' (the limits are the total)");
    const total = resolveLimits(l.total, `${field}.total`, owner, true);
    if (total) out.total = total;
  }
  if (l.concurrency !== undefined) {
    if (!Number.isInteger(l.concurrency) || (l.concurrency as number) < 1 || (l.concurrency as number) > 100_000) {
      fail(`${field}.concurrency`, l.concurrency, 'an integer 1..100000');
    }
    out.concurrency = l.concurrency as number;
  }
  if (l.perSecond !== undefined) {
    if (typeof l.perSecond !== 'number' || !(l.perSecond > 0) || l.perSecond > 100_000)
      fail(`${field}.perSecond`, l.perSecond, 'a number in (0, 100000]');
    out.perSecond = l.perSecond as number;
  }
  if (l.burst !== undefined) {
    if (out.perSecond === undefined) fail(`${field}.burst`, l.burst, 'no burst without perSecond');
    if (!Number.isInteger(l.burst) || (l.burst as number) < 1 || (l.burst as number) > 100_000)
      fail(`${field}.burst`, l.burst, 'an integer 1..100000');
    out.burst = l.burst as number;
  }
  if (out.per && out.concurrency === undefined && out.perSecond === undefined)
    fail(field, value, "concurrency or perSecond beside per: 'key'");
  const known = ['concurrency', 'perSecond', 'burst', ...(nested ? [] : ['per', 'total'])];
  for (const name of Object.keys(l)) if (!known.includes(name)) fail(`${field}.${name}`, l[name], `one of ${known.join(', ')}`);
  return Object.keys(out).length > 0 ? out : undefined;
}
