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
}

/** Validates `limits` (a task's or a queue's), naming the field; undefined when absent or empty. */
export function resolveLimits(value: unknown, field: string, owner?: string): Limits | undefined {
  if (value === undefined) return undefined;
  const fail = (f: string, v: unknown, expected: string): never => {
    throw owner ? new TaskDefinitionError(owner, f, v, expected) : new ConfigError(f, v, expected);
  };
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return fail(field, value, '{ concurrency?, perSecond?, burst? }');
  const l = value as Record<string, unknown>;
  const out: { concurrency?: number; perSecond?: number; burst?: number } = {};
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
  return Object.keys(out).length > 0 ? out : undefined;
}
