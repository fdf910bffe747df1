/** One held slot: tell it when the work holding it must be over, release it when it is. */
export interface SlotLease {
  /**
   * When the holder will likely give the slot back (epoch ms): its start + the run time its task
   * has taken lately. Until told, a holder is expected to keep its slot as long as it may.
   */
  expectsEnd(epochMs: number): void;
  release(): void;
}

/**
 * Free slots set aside for the messages of a batch just received, before the batch's own checks
 * (dependencies, schedules, limits) decide which of them run: each that runs takes one, the rest go
 * back. Meanwhile nobody else counts them free, so the loop never receives for slots already spoken for.
 */
export interface SlotReservation {
  /** One of the set-aside slots, at once; undefined when none is left (then wait with {@link TaskSlots.acquire}). */
  take(): SlotLease | undefined;
  /** Gives back what was not taken. */
  release(): void;
}

/**
 * The dispatcher's task slots (`dispatcher.concurrency`), shared by every batch in flight. Waiters
 * are served in arrival order, so messages start in the order they were received, across batches.
 * The loop receives no more messages than will start within a moment ({@link startableWithin}),
 * and sets their slots aside as it receives them ({@link reserve}): a received message never waits
 * long in the dispatcher behind running tasks while a higher queue's work waits in SQS.
 *
 * @example
 * ```ts
 * const slots = new TaskSlots(10);
 * await slots.run(async () => { await work(); });
 * ```
 */
export class TaskSlots {
  private readonly holders = new Set<{ expectedEnd: number; readonly start: number }>();
  /** Slot-milliseconds held by leases already released. */
  private releasedBusyMs = 0;
  private readonly waiters: Array<(lease: SlotLease) => void> = [];
  private readonly watchers: Array<() => void> = [];

  /** @param now the clock holders' hold times are counted on (epoch ms). */
  constructor(
    readonly size: number,
    private readonly now: () => number = Date.now,
  ) {
    if (!Number.isInteger(size) || size < 1) throw new RangeError(`slot count ${size} must be an integer ≥ 1`);
  }

  /** Slots set aside by reservations and not yet taken. */
  private reservedCount = 0;

  /** Slots nobody holds and nobody set aside. */
  get free(): number {
    return this.size - this.holders.size - this.reservedCount;
  }

  /** Callers waiting for a slot. */
  get waiting(): number {
    return this.waiters.length;
  }

  /** True when a slot is free and nobody is waiting for one: more work can start at once. */
  get hasRoom(): boolean {
    return this.free > 0 && this.waiters.length === 0;
  }

  /** Waits for a slot. */
  acquire(): Promise<SlotLease> {
    if (this.hasRoom) return Promise.resolve(this.lease());
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /**
   * How many messages received now would start within `horizonMs`, less the callers already waiting:
   * each slot free by then starts one, and when a message is expected to hold its slot `runMs`, as
   * many more as fit in the rest of the horizon one after another (a slot gets through ten 50 ms
   * tasks in 500 ms, and a slot running an 8 s task none). Without `runMs`, one a slot.
   */
  startableWithin(horizonMs: number, now: number, runMs?: number): number {
    const until = now + horizonMs;
    const startsBy = (freeAt: number) => {
      if (freeAt > until) return 0;
      if (runMs === undefined) return 1;
      // A run of 0 ms (a clock that did not move) would count without end: a slot starts at most one a millisecond.
      return 1 + Math.floor((until - Math.max(now, freeAt)) / Math.max(1, runMs));
    };
    let starts = this.free * startsBy(now);
    for (const holder of this.holders) starts += startsBy(holder.expectedEnd);
    return Math.max(0, starts - this.waiters.length);
  }

  /**
   * Runs `fn` holding a slot (one of `reservation`'s when it has one left, else see {@link acquire});
   * the slot is released however `fn` ends.
   */
  async run<T>(fn: (lease: SlotLease) => Promise<T>, reservation?: SlotReservation): Promise<T> {
    const lease = reservation?.take() ?? (await this.acquire());
    try {
      return await fn(lease);
    } finally {
      lease.release();
    }
  }

  /** Sets aside up to `count` free slots (as many as are free) for a batch about to be received or checked. */
  reserve(count: number): SlotReservation {
    let left = Math.max(0, Math.min(count, this.free));
    this.reservedCount += left;
    return {
      take: () => {
        if (left === 0) return undefined;
        left -= 1;
        this.reservedCount -= 1;
        return this.lease();
      },
      release: () => {
        if (left === 0) return;
        this.reservedCount -= left;
        left = 0;
        this.changed();
      },
    };
  }

  /** Slot-milliseconds held since the slots were made, up to `now`: how busy they have been. */
  busyMs(now: number): number {
    let busy = this.releasedBusyMs;
    for (const holder of this.holders) busy += Math.max(0, now - holder.start);
    return busy;
  }

  /** Resolves at the next release of a slot (or of a reservation's unused ones). */
  released(): Promise<void> {
    return new Promise((resolve) => this.watchers.push(resolve));
  }

  private lease(): SlotLease {
    const start = this.now();
    const holder = { expectedEnd: Number.POSITIVE_INFINITY, start };
    this.holders.add(holder);
    let done = false;
    return {
      expectsEnd: (epochMs) => {
        holder.expectedEnd = epochMs;
      },
      release: () => {
        if (done) return;
        done = true;
        this.holders.delete(holder);
        this.releasedBusyMs += Math.max(0, this.now() - holder.start);
        this.changed();
      },
    };
  }

  /** A slot came free: the first waiter takes it, and the watchers hear of it. */
  private changed(): void {
    if (this.free > 0) this.waiters.shift()?.(this.lease());
    for (const watcher of this.watchers.splice(0)) watcher();
  }
}
