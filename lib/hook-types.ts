/**
 * The shapes of lifecycle hooks, shared by task definitions and the app config; they are run by
 * lib/settle/run-hooks.ts.
 */
import type { SerializedError } from './errors';
import type { ArchiveReason } from './wire/archive-reasons';

/** What a hook knows about the job. */
export interface HookContext {
  readonly jobId: string;
  /** Undefined for an archived message that named no registered task (malformed, unknown task). */
  readonly task: string | undefined;
  readonly queue: string;
  readonly attempt: number;
  readonly payload: unknown;
  /** The envelope's `appData`, untouched (Kale's app_data). */
  readonly appData: unknown;
  readonly workerId: string;
  /** Fires at the hook's time limit. */
  readonly signal: AbortSignal;
}

export interface JobHooks<R = unknown> {
  /**
   * The job succeeded. `result` is its return value as its JSON gives it back (up to 10 MiB, the most
   * a result is kept), else undefined (no value, not JSON, or larger).
   */
  onSuccess?(result: R | undefined, ctx: HookContext): void | Promise<void>;
  /** An attempt failed and the job will run again. */
  onRetry?(error: SerializedError, ctx: HookContext): void | Promise<void>;
  /** The job was given up on (or its message could not run), with the reason. */
  onArchived?(error: SerializedError, reason: ArchiveReason, ctx: HookContext): void | Promise<void>;
}

export const HOOK_NAMES = ['onSuccess', 'onRetry', 'onArchived'] as const;
