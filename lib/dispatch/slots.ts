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
 * How many received messages a slot may have pending (claiming, or claimed and waiting for it) when
 * no slot is free: enough for the claims of the next batch to overlap the runs before them, few
 * enough that the jobs table is not flooded with claims for work that waits (and a stop hands back
 * few claims).
 */
export const AHEAD_PER_SLOT = 2;

/**
 * One received message's place in the slots, from its receive until its body needs a slot: while
 * it holds its ticket it is spoken for (the loop receives no more for it), but it holds no slot — its
 * claim is made meanwhile, so the claims of the next messages overlap the runs before them.
 */
export interface SlotTicket {
  /** The slot for its body: the next one free, in the order tickets ask (a slot free now: at once). */
  take(): Promise<SlotLease>;
  /** Gives the place up unused (it ended, or was handed back, before its body started); nothing once taken. */
  drop(): void;
}

/**
 * The places of a batch just received, before its own checks (dependencies, schedules, limits)
 * decide which of its messages run: each that runs takes a ticket, the rest go back.
 */
export interface SlotReservation {
  /** One message's ticket; undefined when the batch's places are all given out. */
  ticket(): SlotTicket | undefined;
  /** Gives back the places no ticket took. */
  release(): void;
}

/**
 * The dispatcher's task slots (`dispatcher.concurrency`), shared by every batch in flight: a slot is
 * held while a body runs. Waiters are served in arrival order, so bodies start in the order their
 * messages were ready, across batches. The loop receives no more messages than will start within a
 * moment ({@link startableWithin}), and gives each a ticket as it receives it ({@link reserve}): a
 * received message never waits long in the dispatcher behind running tasks while a higher queue's
 * work waits in SQS, and its claim does not hold a slot.
 *
 * @example
 * ```ts
 * const slots = new TaskSlots(10);
 * await slots.run(async () => { await work(); });
 * ```
 */
export class TaskSlots {
  private readonly holders = new Set<{ expectedEnd: number; readonly start: number }>();
  /** When each ticket out was given (a message between its receive and its body: its claim is the dispatcher's work too). */
  private readonly tickets = new Set<{ readonly start: number }>();
  /** Slot-milliseconds held by leases already released, and by tickets already taken or dropped. */
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

  /** Places reserved for received messages that no ticket took yet. */
  private reservedCount = 0;

  /** Messages received and not yet running or waiting for a slot: tickets out, and places not given out yet. */
  private get spokenFor(): number {
    return this.tickets.size + this.reservedCount;
  }

  /** Messages received and not running: spoken for (claiming), or waiting for a slot. */
  get pending(): number {
    return this.spokenFor + this.waiters.length;
  }

  /** Slots no body holds. */
  private get unheld(): number {
    return this.size - this.holders.size;
  }

  /** Slots no body holds and no received message is about to take. */
  get free(): number {
    return Math.max(0, this.unheld - this.spokenFor);
  }

  /** Callers waiting for a slot. */
  get waiting(): number {
    return this.waiters.length;
  }

  /** True when a slot is free and nobody is waiting for one: more work can start at once. */
  get hasRoom(): boolean {
    return this.free > 0 && this.waiters.length === 0;
  }

  /** Waits for a slot (a received message's ticket does not stand in its way: it asks through {@link SlotTicket.take}). */
  acquire(): Promise<SlotLease> {
    if (this.unheld > 0 && this.waiters.length === 0) return Promise.resolve(this.lease());
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /**
   * How many messages received now would start within `horizonMs`, less those already received
   * and not running: each slot free by then starts one, and when a message is expected to hold its
   * slot `runMs`, as many more as fit in the rest of the horizon one after another (a slot gets
   * through ten 50 ms tasks in 500 ms, and a slot running an 8 s task none). Without `runMs`, one a
   * slot.
   */
  startableWithin(horizonMs: number, now: number, runMs?: number): number {
    const until = now + horizonMs;
    const startsBy = (freeAt: number) => {
      if (freeAt > until) return 0;
      if (runMs === undefined) return 1;
      // A run of 0 ms (a clock that did not move) would count without end: a slot starts at most one a millisecond.
      return 1 + Math.floor((until - Math.max(now, freeAt)) / Math.max(1, runMs));
    };
    let starts = this.unheld * startsBy(now);
    for (const holder of this.holders) starts += startsBy(holder.expectedEnd);
    return Math.max(0, starts - this.pending);
  }

  /** Runs `fn` holding a slot (see {@link acquire}); the slot is released however `fn` ends. */
  async run<T>(fn: (lease: SlotLease) => Promise<T>): Promise<T> {
    const lease = await this.acquire();
    try {
      return await fn(lease);
    } finally {
      lease.release();
    }
  }

  /** Reserves places for the `count` messages of a batch just received (or about to be checked). */
  reserve(count: number): SlotReservation {
    let left = Math.max(0, count);
    this.reservedCount += left;
    return {
      ticket: () => {
        if (left === 0) return undefined;
        left -= 1;
        this.reservedCount -= 1;
        return this.ticket();
      },
      release: () => {
        if (left === 0) return;
        this.reservedCount -= left;
        left = 0;
        this.changed();
      },
    };
  }

  /** Slot-milliseconds held (and tickets out) since the slots were made, up to `now`: how busy they have been. */
  busyMs(now: number): number {
    let busy = this.releasedBusyMs;
    for (const holder of this.holders) busy += Math.max(0, now - holder.start);
    for (const ticket of this.tickets) busy += Math.max(0, now - ticket.start);
    return busy;
  }

  /** Resolves at the next release of a slot (or of a reservation's unused ones). */
  released(): Promise<void> {
    return new Promise((resolve) => this.watchers.push(resolve));
  }

  private ticket(): SlotTicket {
    const ticket = { start: this.now() };
    this.tickets.add(ticket);
    let out = true;
    const giveUp = () => {
      if (!out) return false;
      out = false;
      this.tickets.delete(ticket);
      this.releasedBusyMs += Math.max(0, this.now() - ticket.start);
      return true;
    };
    return {
      take: () => {
        if (!giveUp()) return Promise.reject(new Error('a slot ticket is taken once'));
        return this.acquire();
      },
      drop: () => {
        if (giveUp()) this.changed();
      },
    };
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

  /** A slot came free (or a place): the first waiter takes a slot no body holds, and the watchers hear of it. */
  private changed(): void {
    if (this.unheld > 0) this.waiters.shift()?.(this.lease());
    for (const watcher of this.watchers.splice(0)) watcher();
  }
}
