/**
 * Which errors a task retries, as its `retry` option declares them: `never` (archived at once, as
 * `unrecoverable`), `on` (only these retried; any other error archived as `unrecoverable`), and
 * `maxRetryAfters`, how many times a job may ask to run later with RetryAfterError before such an
 * ask counts as an ordinary failure. Errors are named by class (instanceof) or by name (the error's
 * `name`, or a class name along its prototype chain), so a task bundle's own copy of a library's
 * error class still matches, and so do errors crossing from a worker thread.
 */
import { type RateLimitScope, TaskDefinitionError, UnrecoverableError } from '../errors';

// biome-ignore lint/suspicious/noExplicitAny: error classes take any constructor arguments
export type ErrorClass = abstract new (...args: any[]) => Error;

/** An error class, or the name its errors carry (`'TimeoutError'`, `'ThrottlingException'`). */
export type ErrorMatcher = ErrorClass | string;

export interface RetryOptions {
  /** Only these errors are retried; any other is archived at once as `unrecoverable`. @defaultValue every error */
  readonly on?: readonly ErrorMatcher[];
  /** These errors are archived at once as `unrecoverable` (beside `unrecoverable` and UnrecoverableError). */
  readonly never?: readonly ErrorMatcher[];
  /** RetryAfterError (and RateLimitedError) re-runs a job may take without using an attempt (0..1000). @defaultValue 10 */
  readonly maxRetryAfters?: number;
}

export interface RetryPolicy {
  readonly on?: readonly ErrorMatcher[];
  readonly never: readonly ErrorMatcher[];
  readonly maxRetryAfters: number;
}

export const DEFAULT_MAX_RETRY_AFTERS = 10;
const MAX_RETRY_AFTERS_BOUND = 1_000;

/**
 * How a failed attempt's error is treated: run later without using an attempt (and, rate limited,
 * with its scope paused), retried, or archived at once.
 */
export type ErrorTreatment = 'rate-limited' | 'retry-after' | 'error' | 'unrecoverable';

/** Validates `retry` (and the older `unrecoverable` list, folded into `never`), naming the bad field. */
export function retryPolicy(task: string, retry: unknown, unrecoverable: unknown): RetryPolicy {
  if (unrecoverable !== undefined && (!Array.isArray(unrecoverable) || unrecoverable.some((c) => typeof c !== 'function'))) {
    throw new TaskDefinitionError(task, 'unrecoverable', unrecoverable, 'an array of error classes');
  }
  if (retry === undefined)
    return { never: [...((unrecoverable as ErrorClass[] | undefined) ?? [])], maxRetryAfters: DEFAULT_MAX_RETRY_AFTERS };
  if (typeof retry !== 'object' || retry === null || Array.isArray(retry)) {
    throw new TaskDefinitionError(task, 'retry', retry, '{ on?, never?, maxRetryAfters? }');
  }
  const r = retry as Record<string, unknown>;
  for (const field of Object.keys(r)) {
    if (!['on', 'never', 'maxRetryAfters'].includes(field))
      throw new TaskDefinitionError(task, `retry.${field}`, r[field], 'no such field (on, never, maxRetryAfters)');
  }
  const matchers = (field: 'on' | 'never'): ErrorMatcher[] | undefined => {
    const value = r[field];
    if (value === undefined) return undefined;
    if (!Array.isArray(value) || value.some((m) => typeof m !== 'function' && (typeof m !== 'string' || m.length === 0))) {
      throw new TaskDefinitionError(task, `retry.${field}`, value, 'an array of error classes or error names');
    }
    return [...value];
  };
  const maxRetryAfters = r.maxRetryAfters ?? DEFAULT_MAX_RETRY_AFTERS;
  if (!Number.isInteger(maxRetryAfters) || (maxRetryAfters as number) < 0 || (maxRetryAfters as number) > MAX_RETRY_AFTERS_BOUND) {
    throw new TaskDefinitionError(task, 'retry.maxRetryAfters', maxRetryAfters, `an integer 0..${MAX_RETRY_AFTERS_BOUND}`);
  }
  const on = matchers('on');
  return {
    ...(on ? { on } : {}),
    // A set: a definition validated again (its `retry` holds `unrecoverable` already) lists each once.
    never: [...new Set([...((unrecoverable as ErrorClass[] | undefined) ?? []), ...(matchers('never') ?? [])])],
    maxRetryAfters: maxRetryAfters as number,
  };
}

/** Whether `error` is what `matcher` names: an instance of the class, or an error of that name. */
export function matchesError(error: unknown, matcher: ErrorMatcher): boolean {
  if (typeof matcher === 'function') {
    if (error instanceof matcher) return true;
    return matchesError(error, matcher.name);
  }
  if (typeof error !== 'object' || error === null) return false;
  if ((error as { name?: unknown }).name === matcher) return true;
  for (let proto = Object.getPrototypeOf(error); proto && proto !== Object.prototype; proto = Object.getPrototypeOf(proto)) {
    if (proto.constructor?.name === matcher) return true;
  }
  return false;
}

/** The ms a RetryAfterError asks for (by name, so another copy of the library's class counts), else undefined. */
export function retryAfterMsOf(error: unknown): number | undefined {
  if (!matchesError(error, 'RetryAfterError')) return undefined;
  const ms = (error as { retryAfterMs?: unknown }).retryAfterMs;
  return typeof ms === 'number' && Number.isFinite(ms) && ms >= 0 ? ms : undefined;
}

/** The pause a RateLimitedError asks for (by name, as {@link retryAfterMsOf}), else undefined. */
export function rateLimitOf(error: unknown): { readonly ms: number; readonly scope: RateLimitScope } | undefined {
  if (!matchesError(error, 'RateLimitedError')) return undefined;
  const ms = retryAfterMsOf(error);
  const scope = (error as { scope?: unknown }).scope;
  if (ms === undefined) return undefined;
  return { ms, scope: scope === 'key' || scope === 'queue' ? scope : 'task' };
}

/**
 * How the task treats `error`: a RateLimitedError first (a RetryAfterError that also pauses its
 * scope), then a RetryAfterError, then `never` (and UnrecoverableError), then `on`.
 */
export function treatmentOf(error: unknown, policy: RetryPolicy): ErrorTreatment {
  if (rateLimitOf(error) !== undefined) return 'rate-limited';
  if (retryAfterMsOf(error) !== undefined) return 'retry-after';
  if (matchesError(error, UnrecoverableError) || policy.never.some((m) => matchesError(error, m))) return 'unrecoverable';
  if (policy.on && !policy.on.some((m) => matchesError(error, m))) return 'unrecoverable';
  return 'error';
}
