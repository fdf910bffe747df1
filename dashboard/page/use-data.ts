/** How a page reads its data from the API: now, on change, and again every few seconds until it is settled. */
import { useCallback, useEffect, useState } from 'preact/hooks';

/** How often a page reads its data again, unless it says otherwise. */
export const REFRESH_MS = 3000;

/**
 * Loads `load()` now, again whenever `keys` change, and every `everyMs` if given until `settled`
 * says the data will not change any more (a finished job, a list read by a table scan).
 */
export function useData<T>(
  load: () => Promise<T>,
  keys: readonly unknown[],
  everyMs?: number,
  settled: (data: T) => boolean = () => false,
): { data?: T; error?: string; reload: () => void } {
  const [state, setState] = useState<{ data?: T; error?: string }>({});
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    let timer: ReturnType<typeof setInterval> | undefined;
    const run = () =>
      load().then(
        (data) => {
          if (!live) return;
          setState({ data });
          if (timer && settled(data)) clearInterval(timer);
        },
        (error: unknown) => live && setState((s) => ({ ...s, error: error instanceof Error ? error.message : String(error) })),
      );
    timer = everyMs ? setInterval(run, everyMs) : undefined;
    void run();
    return () => {
      live = false;
      if (timer) clearInterval(timer);
    };
  }, [...keys, tick]);
  return { ...state, reload: useCallback(() => setTick((t) => t + 1), []) };
}
