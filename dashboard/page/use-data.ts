/** How a page reads its data from the API: now, on change, and again every few seconds until it is settled. */
import { useCallback, useEffect, useState } from 'preact/hooks';

/** How often a page reads its data again, unless it says otherwise. */
export const REFRESH_MS = 3000;

/**
 * Loads `load()` now, again whenever `keys` change, and every `everyMs` if given until `settled`
 * says the data will not change any more (a finished job, a list read by a table scan). Data loaded
 * for other keys is never returned: right after a change (another tab, another filter) the page
 * shows nothing loaded yet rather than the last keys' rows under the new heading.
 */
export function useData<T>(
  load: () => Promise<T>,
  keys: readonly unknown[],
  everyMs?: number,
  settled: (data: T) => boolean = () => false,
): { data?: T; error?: string; reload: () => void } {
  const [state, setState] = useState<{ data?: T; error?: string; keys?: readonly unknown[] }>({});
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    let timer: ReturnType<typeof setInterval> | undefined;
    const run = () =>
      load().then(
        (data) => {
          if (!live) return;
          setState({ data, keys });
          if (timer && settled(data)) clearInterval(timer);
        },
        (error: unknown) =>
          live &&
          setState((s) => ({ ...(sameKeys(s.keys, keys) ? s : {}), keys, error: error instanceof Error ? error.message : String(error) })),
      );
    timer = everyMs ? setInterval(run, everyMs) : undefined;
    void run();
    return () => {
      live = false;
      if (timer) clearInterval(timer);
    };
  }, [...keys, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  const { keys: loadedFor, ...loaded } = state;
  return sameKeys(loadedFor, keys) ? { ...loaded, reload } : { reload };
}

function sameKeys(a: readonly unknown[] | undefined, b: readonly unknown[]): boolean {
  return a !== undefined && a.length === b.length && a.every((k, i) => Object.is(k, b[i]));
}
