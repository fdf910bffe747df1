/**
 * A discrete-event simulation clock. It implements the library's {@link Clock}, so the real
 * dispatcher loop, selectors and batch code run on it unchanged: `sleep` registers a timer, and
 * {@link Simulation.runUntil} fires timers in time order (ties in the order they were set),
 * letting every continuation run to its next sleep before time moves on. No wall-clock time or
 * real timer is involved, so a run with the same seeds is repeatable to the digit.
 */
import type { Clock } from '../../lib/clock';

interface Timer {
  readonly at: number;
  readonly seq: number;
  resolve: (() => void) | undefined;
}

/** A binary min-heap of timers by (at, seq). */
class TimerHeap {
  private readonly items: Timer[] = [];

  get size(): number {
    return this.items.length;
  }

  peek(): Timer | undefined {
    return this.items[0];
  }

  push(timer: Timer): void {
    const a = this.items;
    a.push(timer);
    let i = a.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(a[i] as Timer, a[parent] as Timer)) break;
      [a[i], a[parent]] = [a[parent] as Timer, a[i] as Timer];
      i = parent;
    }
  }

  pop(): Timer | undefined {
    const a = this.items;
    const top = a[0];
    const last = a.pop();
    if (a.length > 0 && last) {
      a[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < a.length && before(a[l] as Timer, a[m] as Timer)) m = l;
        if (r < a.length && before(a[r] as Timer, a[m] as Timer)) m = r;
        if (m === i) break;
        [a[i], a[m]] = [a[m] as Timer, a[i] as Timer];
        i = m;
      }
    }
    return top;
  }
}

const before = (x: Timer, y: Timer) => x.at < y.at || (x.at === y.at && x.seq < y.seq);

/** Lets every pending promise continuation run (they all run before the next macrotask). */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

export class Simulation implements Clock {
  private current: number;
  private seq = 0;
  private readonly timers = new TimerHeap();
  /** Timers fired so far (a measure of the work a run took). */
  events = 0;

  constructor(readonly start = Date.UTC(2026, 0, 5, 9)) {
    this.current = start;
  }

  now(): number {
    return this.current;
  }

  /** Resolves after `ms` of simulated time, or when `signal` aborts (without error, like the system clock). */
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const timer: Timer = { at: this.current + Math.max(0, ms), seq: this.seq++, resolve };
      if (signal) {
        const abort = () => {
          const pending = timer.resolve;
          timer.resolve = undefined;
          pending?.();
        };
        signal.addEventListener('abort', abort, { once: true });
        timer.resolve = () => {
          signal.removeEventListener('abort', abort);
          resolve();
        };
      }
      this.timers.push(timer);
    });
  }

  /** Fires every timer due up to `until` (epoch ms), in order, then sets the clock to `until`. */
  async runUntil(until: number): Promise<void> {
    await settle();
    for (;;) {
      const next = this.timers.peek();
      if (!next || next.at > until) break;
      this.current = next.at;
      // Every timer due at this instant fires before continuations run; they run in the order set.
      while (this.timers.peek()?.at === this.current) {
        const timer = this.timers.pop() as Timer;
        const resolve = timer.resolve;
        timer.resolve = undefined;
        if (resolve) {
          this.events += 1;
          resolve();
        }
      }
      await settle();
    }
    this.current = Math.max(this.current, until);
  }

  /** Runs until `done()` holds (checked after each instant), or `until`. */
  async runWhile(keepGoing: () => boolean, until: number): Promise<void> {
    await settle();
    while (keepGoing()) {
      const next = this.timers.peek();
      if (!next || next.at > until) break;
      await this.runUntil(next.at);
    }
  }
}
