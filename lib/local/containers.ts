/**
 * The local Lambda service's containers when `taskworker dev` invokes on demand: which function
 * each serves, whether it is busy, and the invocation it runs. As in Lambda, a container runs one
 * invocation at a time and a busy one is never handed another: an invocation that finds every
 * container of its function busy gets a new one (a cold start), up to the function's concurrency
 * (the dispatcher's reserved concurrency, a doorbell trigger's `MaximumConcurrency`); past it the
 * invocation is refused (throttled). A container started that way is stopped once it has idled a
 * while, down to the ones started up front.
 */
import type { InvokeResult, LocalFunctions } from './wake';

/** What the pool needs of a container: a child process of lib/local/runner.ts in `taskworker dev`. */
export interface Container {
  readonly connected: boolean;
  send(message: { readonly type: 'invoke'; readonly id: number; readonly event: unknown; readonly timeoutSeconds: number }): unknown;
}

export interface ContainerPoolOptions<C extends Container> {
  /**
   * Starts a container of `fn` (it {@link ContainerPool.add}s itself before it returns); undefined
   * when none can start now. The invocation is sent at once: the container takes it once loaded.
   */
  readonly start: (fn: string) => C | undefined;
  /** Invocations of `fn` at once, at most. */
  readonly concurrency: (fn: string) => number;
  /** Containers of `fn` kept however long they idle: the ones started up front. */
  readonly warm: (fn: string) => number;
  /** Stops a container the pool let go after it idled (it is no longer in the pool). */
  readonly retire: (container: C) => void;
  /** How long a container beyond the warm ones idles before it is let go. @defaultValue 60 s */
  readonly idleMs?: number;
}

interface State {
  readonly fn: string;
  busy?: ((result: InvokeResult) => void) | undefined;
  since?: number | undefined;
  idle?: NodeJS.Timeout | undefined;
}

/** A container beyond the warm ones is let go after this long without an invocation. */
export const CONTAINER_IDLE_MS = 60_000;

export class ContainerPool<C extends Container> implements LocalFunctions {
  private readonly byContainer = new Map<C, State>();
  private readonly ended: Array<{ fn: string; ms: number }> = [];
  private readonly counts: Record<string, number> = {};
  private nextId = 1;
  private ending = false;

  constructor(private readonly options: ContainerPoolOptions<C>) {}

  /** A container of `fn` joins the pool, free (and let go if it idles while its function has more than its warm ones). */
  add(container: C, fn: string): void {
    const state: State = { fn };
    this.byContainer.set(container, state);
    this.ending = false;
    this.idleFrom(container, state);
  }

  invoke(fn: string, event: unknown, timeoutSeconds: number): Promise<InvokeResult> | undefined {
    if (this.ending) return undefined;
    const mine = [...this.byContainer].filter(([container, state]) => state.fn === fn && container.connected);
    if (mine.filter(([, state]) => state.busy).length >= this.options.concurrency(fn)) return undefined;
    let found = mine.find(([, state]) => !state.busy);
    if (!found) {
      const started = this.options.start(fn);
      const state = started ? this.byContainer.get(started) : undefined;
      if (!started || !state) return undefined;
      found = [started, state];
    }
    const [container, state] = found;
    clearTimeout(state.idle);
    state.idle = undefined;
    const id = this.nextId++;
    this.counts[fn] = (this.counts[fn] ?? 0) + 1;
    return new Promise<InvokeResult>((resolve) => {
      state.busy = resolve;
      state.since = performance.now();
      container.send({ type: 'invoke', id, event, timeoutSeconds });
    });
  }

  /** The container answered its invocation. */
  finished(container: C, outcome: InvokeResult): void {
    const state = this.byContainer.get(container);
    if (!state) return;
    const done = state.busy;
    if (state.since !== undefined) this.ended.push({ fn: state.fn, ms: performance.now() - state.since });
    state.busy = undefined;
    state.since = undefined;
    done?.(outcome);
    if (!this.ending) this.idleFrom(container, state);
  }

  /** The container's process ended: its invocation, if any, fails. */
  exited(container: C): void {
    const state = this.byContainer.get(container);
    clearTimeout(state?.idle);
    this.byContainer.delete(container);
    state?.busy?.({ error: 'the container exited' });
  }

  /** From now on nothing is invoked and no idle container is let go. */
  stopping(): void {
    this.ending = true;
    for (const state of this.byContainer.values()) clearTimeout(state.idle);
  }

  clear(): void {
    this.stopping();
    this.byContainer.clear();
  }

  /** Containers in the pool now, by function. */
  containerCounts(): Readonly<Record<string, number>> {
    const counts: Record<string, number> = {};
    for (const state of this.byContainer.values()) counts[state.fn] = (counts[state.fn] ?? 0) + 1;
    return counts;
  }

  durations(): ReadonlyArray<{ readonly fn: string; readonly ms: number }> {
    return [...this.ended];
  }

  invocationCounts(): Readonly<Record<string, number>> {
    return { ...this.counts };
  }

  /** Lets the container go once it has idled `idleMs`, unless its function is down to its warm ones. */
  private idleFrom(container: C, state: State): void {
    clearTimeout(state.idle);
    state.idle = setTimeout(() => {
      state.idle = undefined;
      if (state.busy || this.ending || this.byContainer.get(container) !== state) return;
      if ((this.containerCounts()[state.fn] ?? 0) <= this.options.warm(state.fn)) return;
      this.byContainer.delete(container);
      this.options.retire(container);
    }, this.options.idleMs ?? CONTAINER_IDLE_MS);
    state.idle.unref();
  }
}
