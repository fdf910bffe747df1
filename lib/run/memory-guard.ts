import { MemoryLimitError } from '../errors';

export interface MemoryGuardOptions {
  /** Resident set size past which the guard aborts. */
  readonly limitBytes: number;
  /** Reads the resident set size. @defaultValue `process.memoryUsage.rss` */
  readonly rss?: () => number;
  /** How often it reads. @defaultValue 500 */
  readonly intervalMs?: number;
  /**
   * The caller's own stop signal: the guard's signal aborts with its reason too. It may outlive
   * the guard (a warm container's); `stop()` takes the guard's listener off it.
   */
  readonly stop?: AbortSignal;
}

/**
 * Readings for a dispatcher that shares its process with others (in-process test systems,
 * benchmarks): the process's resident set is not its own to guard, so it never trips.
 */
export const SHARED_PROCESS: Omit<MemoryGuardOptions, 'limitBytes'> = { rss: () => 0 };

export interface MemoryGuard {
  /** Aborts (reason: {@link MemoryLimitError}) the first time a reading passes the limit, or with `stop`'s reason. */
  readonly signal: AbortSignal;
  /** The reading that tripped the guard, if one did. */
  readonly tripped: { readonly rssBytes: number; readonly limitBytes: number } | undefined;
  /** Stops reading and lets go of `stop`. */
  stop(): void;
}

/**
 * Watches the process's resident set, as Kale's worker did between batches: the first reading
 * over the limit aborts `signal`. It reads once at once, then every `intervalMs` (an unref'd
 * timer, so it never keeps a process alive).
 *
 * @example
 * const guard = watchMemory({ limitBytes: 900 * 1024 * 1024, stop: stopping.signal });
 * try {
 *   await runDispatcher(deps, { deadline, signal: guard.signal });
 * } finally {
 *   guard.stop();
 * }
 */
export function watchMemory(options: MemoryGuardOptions): MemoryGuard {
  const rss = options.rss ?? (() => process.memoryUsage.rss());
  const controller = new AbortController();
  let tripped: MemoryGuard['tripped'];
  let timer: NodeJS.Timeout | undefined;
  const outer = options.stop;
  const forward = () => controller.abort(outer?.reason);
  const stop = () => {
    clearInterval(timer);
    outer?.removeEventListener('abort', forward);
  };
  const check = () => {
    const rssBytes = rss();
    if (rssBytes <= options.limitBytes) return;
    tripped = { rssBytes, limitBytes: options.limitBytes };
    stop();
    controller.abort(new MemoryLimitError(rssBytes, options.limitBytes));
  };
  if (outer?.aborted) forward();
  else {
    outer?.addEventListener('abort', forward, { once: true });
    check();
  }
  if (!controller.signal.aborted) {
    timer = setInterval(check, options.intervalMs ?? 500);
    timer.unref();
  }
  return {
    signal: controller.signal,
    get tripped() {
      return tripped;
    },
    stop,
  };
}
