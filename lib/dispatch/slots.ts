/** One held slot: tell it when the work holding it must be over, release it when it is. */
export interface SlotLease {
  /** The latest time (epoch ms) the holder keeps the slot: a task's start + time limit + kill grace. */
  endsBy(epochMs: number): void;
  release(): void;
}

/**
 * The dispatcher's task slots (`dispatcher.concurrency`), shared by every batch in flight. Waiters
 * are served in arrival order, so messages start in the order they were received, across batches.
 * It also knows when its slots will be free at the latest (each holder declares its hard end), so
 * the loop can tell whether messages received now would start before their visibility lapses.
 *
 * @example
 * ```ts
 * const slots = new TaskSlots(10);
 * await slots.run(5000, async () => { await work(); });
 * ```
 */
export class TaskSlots {
  private readonly holders = new Set<{ end: number; readonly start: number }>();
  /** Slot-milliseconds held by leases already released. */
  private releasedBusyMs = 0;
  private readonly waiters: Array<{ readonly holdMs: number; readonly resolve: (lease: SlotLease) => void }> = [];
  private readonly watchers: Array<() => void> = [];

  /** @param now the clock holders' hold times are counted on (epoch ms). */
  constructor(
    readonly size: number,
    private readonly now: () => number = Date.now,
  ) {
    if (!Number.isInteger(size) || size < 1) throw new RangeError(`slot count ${size} must be an integer ≥ 1`);
  }

  /** Slots nobody holds. */
  get free(): number {
    return this.size - this.holders.size;
  }

  /** Callers waiting for a slot. */
  get waiting(): number {
    return this.waiters.length;
  }

  /** True when a slot is free and nobody is waiting for one: more work can start at once. */
  get hasRoom(): boolean {
    return this.free > 0 && this.waiters.length === 0;
  }

  /**
   * Waits for a slot. `holdMs` is how long the holder may keep it at most, counted from when it is
   * granted (a task's time limit + kill grace); refine it with {@link SlotLease.endsBy}.
   */
  acquire(holdMs = Number.POSITIVE_INFINITY): Promise<SlotLease> {
    if (this.hasRoom) return Promise.resolve(this.lease(holdMs));
    return new Promise((resolve) => this.waiters.push({ holdMs, resolve }));
  }

  /** Runs `fn` holding a slot (see {@link acquire}); the slot is released however `fn` ends. */
  async run<T>(holdMs: number, fn: (lease: SlotLease) => Promise<T>): Promise<T> {
    const lease = await this.acquire(holdMs);
    try {
      return await fn(lease);
    } finally {
      lease.release();
    }
  }

  /**
   * The time by which `count` more callers would all hold a slot at the latest, if they asked now:
   * `now` when that many are free, else the hard end of the holder that would free the last one
   * (holders that declared no end count as ending never). Waiting callers are served first.
   */
  freeBy(count: number, now: number): number {
    const needed = count + this.waiters.length - this.free;
    if (needed <= 0) return now;
    if (needed > this.holders.size) return Number.POSITIVE_INFINITY;
    const ends = [...this.holders].map((h) => h.end).sort((a, b) => a - b);
    return Math.max(now, ends[needed - 1] as number);
  }

  /** Slot-milliseconds held since the slots were made, up to `now`: how busy they have been. */
  busyMs(now: number): number {
    let busy = this.releasedBusyMs;
    for (const holder of this.holders) busy += Math.max(0, now - holder.start);
    return busy;
  }

  /** Resolves at the next release of a slot. */
  released(): Promise<void> {
    return new Promise((resolve) => this.watchers.push(resolve));
  }

  private lease(holdMs: number): SlotLease {
    const start = this.now();
    const holder = { end: start + holdMs, start };
    this.holders.add(holder);
    let done = false;
    return {
      endsBy: (epochMs) => {
        holder.end = epochMs;
      },
      release: () => {
        if (done) return;
        done = true;
        this.holders.delete(holder);
        this.releasedBusyMs += Math.max(0, this.now() - holder.start);
        const next = this.waiters.shift();
        if (next) next.resolve(this.lease(next.holdMs));
        for (const watcher of this.watchers.splice(0)) watcher();
      },
    };
  }
}
