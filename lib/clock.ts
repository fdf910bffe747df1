/** Time as the library sees it: wall-clock epoch ms and a way to wait. Injected so tests can control it. */
export interface Clock {
  now(): number;
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** The real clock. `sleep` resolves early (without error) when the signal aborts. */
export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve) => {
      if (ms <= 0 || signal?.aborted) return resolve();
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal?.addEventListener('abort', done, { once: true });
    }),
};

/** A virtual clock for tests and simulations: `sleep` moves time forward at once. */
export class VirtualClock implements Clock {
  private current: number;
  constructor(start = Date.UTC(2026, 0, 1)) {
    this.current = start;
  }
  now(): number {
    return this.current;
  }
  async sleep(ms: number): Promise<void> {
    if (ms > 0) this.current += ms;
  }
  advance(ms: number): void {
    this.current += ms;
  }
}
