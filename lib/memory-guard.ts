import { MemoryLimitError } from './errors';

export interface MemoryGuardOptions {
  /** Resident set size past which the guard aborts. */
  readonly limitBytes: number;
  /** Reads the resident set size. @defaultValue `process.memoryUsage.rss` */
  readonly rss?: () => number;
  /** How often it reads. @defaultValue 500 */
  readonly intervalMs?: number;
}

export interface MemoryGuard {
  /** Aborts (reason: {@link MemoryLimitError}) the first time a reading passes the limit. */
  readonly signal: AbortSignal;
  /** The reading that tripped the guard, if one did. */
  readonly tripped: { readonly rssBytes: number; readonly limitBytes: number } | undefined;
  /** Stops reading. */
  stop(): void;
}

/**
 * Watches the process's resident set, as Kale's worker did between batches: the first reading
 * over the limit aborts `signal`. It reads once at once, then every `intervalMs` (an unref'd
 * timer, so it never keeps a process alive).
 *
 * @example
 * const guard = watchMemory({ limitBytes: 900 * 1024 * 1024 });
 * try {
 *   await runDispatcher(deps, { deadline, signal: anySignal([stop.signal, guard.signal]) });
 * } finally {
 *   guard.stop();
 * }
 */
export function watchMemory(options: MemoryGuardOptions): MemoryGuard {
  const rss = options.rss ?? (() => process.memoryUsage.rss());
  const controller = new AbortController();
  let tripped: MemoryGuard['tripped'];
  let timer: NodeJS.Timeout | undefined;
  const check = () => {
    const rssBytes = rss();
    if (rssBytes <= options.limitBytes) return;
    tripped = { rssBytes, limitBytes: options.limitBytes };
    clearInterval(timer);
    controller.abort(new MemoryLimitError(rssBytes, options.limitBytes));
  };
  check();
  if (!tripped) {
    timer = setInterval(check, options.intervalMs ?? 500);
    timer.unref();
  }
  return {
    signal: controller.signal,
    get tripped() {
      return tripped;
    },
    stop: () => clearInterval(timer),
  };
}

/** A signal that aborts when any of `signals` does, with that signal's reason. */
export function anySignal(signals: readonly AbortSignal[]): AbortSignal {
  const controller = new AbortController();
  for (const signal of signals) {
    if (signal.aborted) {
      controller.abort(signal.reason);
      return controller.signal;
    }
  }
  const onAbort = (event: Event) => {
    controller.abort((event.target as AbortSignal).reason);
    for (const signal of signals) signal.removeEventListener('abort', onAbort);
  };
  for (const signal of signals) signal.addEventListener('abort', onAbort, { once: true });
  return controller.signal;
}
