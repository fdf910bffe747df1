/**
 * A discrete-event simulation clock. It implements the library's {@link Clock}, so the real
 * dispatcher loop, selectors and batch code run on it unchanged: `sleep` registers a timer, and
 * {@link Simulation.runUntil} fires timers in time order (ties in the order they were set),
 * letting every continuation run to its next sleep before time moves on. No wall-clock time or
 * real timer is involved, so a run with the same seeds is repeatable to the digit.
 */
import type { Clock } from '../../lib/clock';
import { Heap } from './heap';

interface Timer {
  readonly at: number;
  resolve: (() => void) | undefined;
}

/** Lets every pending promise continuation run (they all run before the next macrotask). */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

export class Simulation implements Clock {
  private current: number;
  /** Timers by due time; the heap keeps ties in the order they were set. */
  private readonly timers = new Heap<Timer>();
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
      const timer: Timer = { at: this.current + Math.max(0, ms), resolve };
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
      this.timers.push(timer.at, timer);
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
