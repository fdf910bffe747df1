import type { QueueConfig } from '../config/app-config';
import { taskNeedMs } from '../deadlines';
import { describe } from '../errors';
import type { QueueClient, QueueUrls, ReceivedMessage } from '../ports';
import type { Probes } from '../select/selector-types';
import { addBatch, type BatchReport, type DispatcherSummary, emptySummary } from '../settle/report';
import { CONTROLS_REFRESH_MS, effectiveQueues } from '../track/operator-controls';
import { processBatch } from './batch';
import type { DispatcherDeps, RunOptions } from './dispatcher-deps';
import { AHEAD_PER_SLOT, TaskSlots } from './slots';

/** Pause after a failed receive or selection, so an outage does not become a hot loop. */
const ERROR_PAUSE_MS = 1000;
/** Pause after a selection that found nothing without long-polling (long poll 0, or too little time for one). */
const IDLE_PAUSE_MS = 200;
/** Below this share of its slots in use over its idle allowance, an invocation that may scale in ends. */
const LIGHT_USE = 0.1;
/** Below this much usable time the loop ends: there is no room for a receive and a settle. */
const MIN_USABLE_MS = 1000;
/**
 * A receive takes, beyond the free slots, the messages that will start within this long: those of
 * the slots whose tasks are expected to end by then (going by what each task has taken to run
 * here). Short tasks are received many to a request, and no message waits in the dispatcher much
 * longer than this while work of a higher queue may be waiting in SQS.
 */
export const PREFETCH_HORIZON_MS = 500;

/**
 * Within this long of the last moment a queue's longest task may start (so that it ends before the
 * invocation settles), a receive from it takes only what starts at once — the free slots — and no
 * prefetch: a message left waiting for a slot past that moment (a running task outlasting what its
 * runs had taken) is released unrun, back in SQS while every selector has just seen the queue
 * served, and waits there for the next look (the selectors benchmark's low-priority maximum at
 * steady 0.7 was such releases: 23.3 s, now 10.7 s).
 */
export const PREFETCH_CUTOFF_MS = 5_000;
/**
 * A doorbell invocation whose given batch still runs after this long takes more from its queue into
 * its free slots: its trigger runs at most two invocations at once, and a quick job must not wait
 * behind two slow ones for one of them to end.
 */
export const DOORBELL_FILL_AFTER_MS = 500;
/** How long a doorbell's own receives long-poll: it ends at most this long after its given batches. */
const DOORBELL_POLL_SECONDS = 1;

/** The receive-or-attributes probes selectors use, bound to a queue client. */
export function queueProbes(queues: QueueClient, urls: QueueUrls): Probes<ReceivedMessage> {
  return {
    async receive(queue, maxMessages) {
      const messages = await queues.receive(urls.queues[queue.name] as string, {
        maxMessages: Math.max(1, Math.min(queue.batchSize, maxMessages ?? queue.batchSize)),
        waitSeconds: 0,
        visibilityTimeoutSeconds: queue.visibilityTimeoutSeconds,
      });
      return { empty: messages.length === 0, messages };
    },
    async attributes(queue) {
      const depth = await queues.depth(urls.queues[queue.name] as string);
      return { empty: depth.visible === 0, messages: [] };
    },
  };
}

/**
 * The dispatcher loop: select a queue, receive up to `iterations` batches from it, run each
 * batch's tasks under their time limits, settle each batch when its tasks end, repeat until the
 * deadline. It does not wait for a batch's slowest task before receiving more: while any of the
 * `dispatcher.concurrency` task slots is free and no received message is waiting for one, it
 * receives the next batch, and every batch in flight shares the slots. One bad message or one
 * failed call never stops the loop.
 */
export async function runDispatcher(deps: DispatcherDeps, options: RunOptions): Promise<DispatcherSummary> {
  const { clock, logger, selector } = deps;
  const loop = new DispatchLoop(deps, options);
  const { summary, slots, given } = loop;
  // Batches someone else received (the doorbell's trigger) are run whatever the time left: the
  // batch itself releases what cannot finish in time. While they run, the invocation takes more
  // from their queue into its free slots (a quick job is not left waiting behind the trigger's slow
  // ones while the trigger is at its concurrency), and it ends when they are settled.
  const givenSignal = loop.startGiven();
  /** A doorbell takes from its queue only once its given work has run a while: a quick batch just ends. */
  const fillFrom = clock.now() + DOORBELL_FILL_AFTER_MS;
  while (loop.working() && !loop.stopped() && loop.usableMs() >= MIN_USABLE_MS) {
    if (given.length > 0 && clock.now() < fillFrom) {
      await clock.sleep(fillFrom - clock.now(), givenSignal);
      continue;
    }
    await loop.waitForRoom();
    if (!loop.working() || loop.stopped() || loop.usableMs() < MIN_USABLE_MS) break;
    if (loop.idle()) {
      logger.info('little or no work for a while; ending the invocation early (scaling in)', { idleMs: clock.now() - loop.lastWorkAt });
      summary.endedIdle = true;
      break;
    }
    const candidates = loop.candidates();
    if (candidates === 'wait-for-change') {
      // Nothing of its queue fits the time left: the doorbell runs what it was given, and ends.
      await loop.nextChange();
      continue;
    }
    if (candidates === 'none-fits') break;
    if (candidates === 'all-paused') {
      // Every queue that fits is paused: nothing is received until one is resumed.
      await clock.sleep(Math.min(CONTROLS_REFRESH_MS, Math.max(0, loop.usableMs())), options.signal);
      continue;
    }
    let selection: Awaited<ReturnType<typeof selector.select>>;
    try {
      selection = await selector.select(candidates, { freeSlots: slots.free, slots: slots.size, startableOf: (q) => loop.startableOf(q) });
    } catch (error) {
      await clock.sleep(loop.failed('queue selection failed', error), options.signal);
      continue;
    }
    summary.selections += 1;
    const queue = selection.queue;
    let batch: readonly ReceivedMessage[] = selection.messages;
    let longPolled = false;
    let receivedAny = batch.length > 0;
    if (batch.length > 0) observe(deps, summary, queue, batch);
    const receives = Math.max(1, Math.min(queue.iterations, selection.receives ?? queue.iterations));
    // What the selection already received is run (or released) even if a stop came meanwhile:
    // dropped, it would stay invisible for its visibility timeout and burn a receive.
    for (let i = 0; i < receives && (!loop.stopped() || (i === 0 && batch.length > 0)); i++) {
      if (i > 0) {
        if (!loop.fits(queue)) break;
        await loop.waitForRoom();
        if (!loop.working() || loop.stopped() || !loop.fits(queue)) break;
      }
      if (i > 0 || batch.length === 0) {
        const waitSeconds = loop.pollSeconds(i === 0 ? selection.waitSeconds : queue.longPollSeconds);
        if (waitSeconds < 0) break;
        longPolled ||= waitSeconds > 0;
        try {
          batch = await deps.queues.receive(
            deps.urls.queues[queue.name] as string,
            { maxMessages: loop.receiveSize(queue), waitSeconds, visibilityTimeoutSeconds: queue.visibilityTimeoutSeconds },
            options.signal,
          );
        } catch (error) {
          if (loop.stopped() || !loop.working()) break;
          await clock.sleep(loop.failed('receive failed', error, { queue: queue.name }), options.signal);
          break;
        }
        observe(deps, summary, queue, batch);
        receivedAny ||= batch.length > 0;
      }
      if (batch.length === 0) break;
      if (loop.pausedNow(queue)) {
        // Paused while the receive waited (a long poll): the batch goes back to the queue unrun.
        await handBack(deps, queue, batch);
        break;
      }
      loop.lastWorkAt = clock.now();
      loop.start(queue, batch);
    }
    if (!receivedAny && !longPolled) await clock.sleep(Math.min(IDLE_PAUSE_MS, Math.max(0, loop.usableMs())), options.signal);
  }
  while (loop.inFlight.size > 0) await Promise.all(loop.inFlight);
  loop.end();
  return summary;
}

type GivenBatch = NonNullable<RunOptions['given']>[number];

/**
 * One run of the loop: its task slots and the batches in flight on them, when it last had work, the
 * waits that wake it, the batches it was given (a doorbell's), and the steps {@link runDispatcher}
 * takes on them that do not wait.
 */
class DispatchLoop {
  readonly summary: DispatcherSummary;
  readonly slots: TaskSlots;
  readonly inFlight = new Set<Promise<void>>();
  /** When a batch was last received or settled: how long the invocation has been without work. */
  lastWorkAt: number;
  readonly given: readonly GivenBatch[];
  private readonly givenQueues: QueueConfig[];
  /** The queues it may receive from: a doorbell's own, else all of them. */
  private readonly ownQueues: readonly QueueConfig[];
  /** Given batches (the doorbell's) not yet settled: while any runs, a doorbell fills its free slots from its queue. */
  private givenInFlight = 0;
  /** Wakes a doorbell waiting to fill (or for room) when its given batches are settled. */
  private readonly givenDone = new AbortController();
  private readonly margin: number;
  private readonly longestTaskMs: Map<string, number>;
  private readonly maxBatches: number;
  /**
   * Wakes the loop waiting for room: a stop, or a batch settled. Each wait makes a fresh promise
   * (racing the long-lived ones would add a reaction to them on every pass of a long invocation).
   */
  private wake = () => {};
  // The stop signal outlives invocations (a warm container's): the listener must go with this one.
  private readonly onAbort = () => this.wake();
  private readonly startedAt: number;
  /** (time, busy slot-ms) at each pass, for the slots' use over the last idle allowance. */
  private readonly busySamples: Array<{ readonly at: number; readonly busyMs: number }> = [];

  constructor(
    private readonly deps: DispatcherDeps,
    private readonly options: RunOptions,
  ) {
    const { config, clock } = deps;
    this.margin = config.dispatcher.settleMarginMs;
    this.summary = emptySummary();
    this.longestTaskMs = longestTaskByQueue(deps);
    this.slots = new TaskSlots(config.dispatcher.concurrency, () => clock.now());
    this.maxBatches = deps.maxBatchesInFlight ?? Number.POSITIVE_INFINITY;
    this.lastWorkAt = clock.now();
    options.signal?.addEventListener('abort', this.onAbort, { once: true });
    this.startedAt = clock.now();
    this.given = options.given ?? [];
    this.givenQueues = [...new Set(this.given.map((b) => b.queue))];
    this.ownQueues = this.given.length > 0 ? this.givenQueues : deps.config.queues;
  }

  /** Starts the given batches and tells the selector where work waits; the signal that ends a doorbell's wait to fill. */
  startGiven(): AbortSignal {
    for (const batch of this.given) this.start(batch.queue, batch.messages, batch.settled);
    const { options } = this;
    if (options.waitingIn && options.waitingIn.length > 0) this.deps.selector.expect?.(options.waitingIn);
    return options.signal ? AbortSignal.any([options.signal, this.givenDone.signal]) : this.givenDone.signal;
  }

  /** After the last batch has settled. */
  end(): void {
    this.givenDone.abort();
    this.options.signal?.removeEventListener('abort', this.onAbort);
  }

  stopped(): boolean {
    return this.options.signal?.aborted === true;
  }

  usableMs(): number {
    return this.options.deadline - this.margin - this.deps.clock.now();
  }

  /** Whether the longest task of `queue` fits the time left. */
  fits(queue: QueueConfig): boolean {
    return (this.longestTaskMs.get(queue.name) ?? 0) <= this.usableMs();
  }

  /** A doorbell works while its given batches run; any other invocation until it stops. */
  working(): boolean {
    return this.given.length === 0 || this.givenInFlight > 0;
  }

  /** Runs a received batch on the slots it sets aside now; settled, it wakes the loop. */
  start(queue: QueueConfig, batch: readonly ReceivedMessage[], settled?: (report: BatchReport) => void): void {
    const { deps, summary } = this;
    // Its messages' places are reserved now, before the batch's own checks await: the next receive
    // counts them spoken for.
    const reservation = this.slots.reserve(batch.length);
    // A given batch is the trigger's: it deletes what the invocation does not report as kept.
    const given = settled !== undefined;
    if (given) this.givenInFlight += 1;
    const done: Promise<void> = processBatch(deps, queue, batch, this.options, this.slots, { triggerDeletes: given }, reservation)
      .then(
        (report) => {
          addBatch(summary, report);
          settled?.(report);
          try {
            deps.observer?.onBatch(report);
          } catch (error) {
            deps.logger.warn('batch observer failed', { error: describe(error) });
          }
        },
        (error: unknown) => {
          summary.errors += 1;
          deps.logger.error('batch processing failed', { queue: queue.name, error: describe(error) });
        },
      )
      .then(() => {
        this.inFlight.delete(done);
        if (given) this.givenInFlight -= 1;
        if (given && this.givenInFlight === 0) this.givenDone.abort();
        this.lastWorkAt = this.deps.clock.now();
        this.wake();
      });
    this.inFlight.add(done);
  }

  /**
   * Room to receive now: nobody waiting for a slot, and a slot free (no body holds it, no received
   * message is about to take it) — or else, every one of its queues whose tasks have run here would
   * start a whole batch received now within the prefetch horizon ({@link startableOf}), and the
   * slots have fewer than {@link AHEAD_PER_SLOT} messages each pending with it. A receive takes
   * what would start within the horizon ({@link receiveSize}): a message received never waits long in
   * the dispatcher behind running tasks while a higher queue's work waits in SQS. So quick tasks'
   * messages are received while the ones before them still claim (the claims overlap the runs), and
   * with a slow queue among them only into free slots. (A queue whose tasks have not run here yet
   * is left out: what waits for a slot then waits behind quick tasks.)
   */
  private roomFor(): boolean {
    const { slots } = this;
    if (slots.waiting > 0 || this.inFlight.size >= this.maxBatches) return false;
    if (slots.free > 0) return true;
    // Ahead of the free slots, only whole batches (a receive costs the same for 1 message as for 10),
    // and no more than AHEAD_PER_SLOT messages a slot pending.
    const known = this.ownQueues.filter((queue) => this.deps.runTimes?.expectedOfQueue(queue.name) !== undefined);
    return (
      known.length > 0 &&
      known.every((queue) => this.startableOf(queue) >= queue.batchSize && slots.pending + queue.batchSize <= AHEAD_PER_SLOT * slots.size)
    );
  }

  async waitForRoom(): Promise<void> {
    while (!this.stopped() && !this.roomFor()) await this.nextChange();
    // And a worker ready to start what is received: a cold container's threads (or one replacing a
    // thread stopped at its limit) are still loading the tasks bundle, and a message received now
    // would wait in the dispatcher for them, invisible to every other.
    if (!this.stopped() && this.deps.executor.ready) await this.deps.executor.ready(this.options.deadline - this.margin);
  }

  /** Resolves at the next slot released, batch settled or stop. */
  async nextChange(): Promise<void> {
    // Each wait makes a fresh promise (racing the long-lived ones would add a reaction to them on every pass).
    const woken = new Promise<void>((resolve) => {
      this.wake = resolve;
    });
    await Promise.race([this.slots.released(), woken]);
  }

  /**
   * How many of `queue`'s messages received now would start within the prefetch horizon: per slot
   * free by then, as many as its run times here fit (one a slot before its first run); only the free
   * slots near the last moment its tasks may start ({@link PREFETCH_CUTOFF_MS}).
   */
  startableOf(queue: QueueConfig): number {
    const runTimes = this.deps.runTimes;
    const lastStartInMs = this.usableMs() - (this.longestTaskMs.get(queue.name) ?? 0);
    if (!runTimes || lastStartInMs < PREFETCH_CUTOFF_MS) return this.slots.free;
    return this.slots.startableWithin(PREFETCH_HORIZON_MS, this.deps.clock.now(), runTimes.expectedOfQueue(queue.name));
  }

  /** How many to receive from `queue` now: what its batch holds, at most what would start within the horizon. */
  receiveSize(queue: QueueConfig): number {
    return Math.max(1, Math.min(queue.batchSize, this.startableOf(queue)));
  }

  private lightlyUsed(windowMs: number, now: number): boolean {
    const { busySamples, slots } = this;
    busySamples.push({ at: now, busyMs: slots.busyMs(now) });
    while (busySamples.length > 1 && (busySamples[1] as { at: number }).at <= now - windowMs) busySamples.shift();
    const first = busySamples[0] as { at: number; busyMs: number };
    if (now - this.startedAt < windowMs || first.at > now - windowMs) return false;
    const used = ((busySamples.at(-1) as { busyMs: number }).busyMs - first.busyMs) / (slots.size * (now - first.at));
    return used < LIGHT_USE;
  }

  /**
   * Whether the invocation may end for lack of work: nothing for its idle allowance, or so little
   * that its slots were less than {@link LIGHT_USE} busy over it. The doorbells, turned back on
   * when it ends, carry light work as Lambda's trigger would; a backlog brings the fleet back.
   */
  idle(): boolean {
    const exit = this.options.idleExit;
    if (!exit) return false;
    const now = this.deps.clock.now();
    if (now < exit.notBefore) return false;
    const light = this.lightlyUsed(exit.afterMs, now);
    return (this.inFlight.size === 0 && now - this.lastWorkAt >= exit.afterMs) || light;
  }

  /**
   * The queues a round selects from: those whose tasks fit the time left (a doorbell's own only),
   * under the operator controls (lib/track/operator-controls.ts): paused queues are left out,
   * priorities and SLAs set at run time replace the config's. The round uses the last read; a read
   * due (every 2 s) runs beside it, never awaited here, so the loop's timing is what it was without
   * controls. Else why there are none: a doorbell waits for its given batches, any other
   * invocation ends, and every queue that fits may be paused.
   */
  candidates(): QueueConfig[] | 'wait-for-change' | 'none-fits' | 'all-paused' {
    const fitting = this.deps.config.queues.filter((q) => (this.longestTaskMs.get(q.name) ?? 0) <= this.usableMs());
    const fit = this.given.length > 0 ? fitting.filter((q) => this.givenQueues.includes(q)) : fitting;
    if (fit.length === 0) {
      if (this.given.length > 0) return 'wait-for-change';
      this.deps.logger.info('time left is too short for any queue; ending the invocation early', { usableMs: this.usableMs() });
      return 'none-fits';
    }
    const controls = this.deps.controls;
    if (controls?.due()) void controls.get();
    const candidates = controls ? effectiveQueues(fit, controls.last, this.deps.clock.now()) : fit;
    return candidates.length === 0 ? 'all-paused' : candidates;
  }

  /** Whether `queue` was paused while a receive waited (a read of the controls due runs beside it). */
  pausedNow(queue: QueueConfig): boolean {
    const controls = this.deps.controls;
    if (controls?.due()) void controls.get();
    return controls?.last.queues[queue.name]?.pausedAt !== undefined;
  }

  /**
   * How long a receive may long-poll, at most `wanted` seconds: never past the time left, nor the
   * invocation's idle allowance (an invocation that may end when idle ends when the poll comes back
   * empty, instead of waiting on a queue it is about to leave). A doorbell's own polls are short: it
   * ends soon after its given batches, and a receive cut short by an abort could leave messages SQS
   * had already handed it invisible.
   */
  pollSeconds(wanted: number): number {
    return Math.min(
      wanted,
      Math.floor(this.usableMs() / 1000),
      this.idleAllowanceSeconds(),
      this.given.length > 0 ? DOORBELL_POLL_SECONDS : Number.POSITIVE_INFINITY,
    );
  }

  private idleAllowanceSeconds(): number {
    const exit = this.options.idleExit;
    if (!exit) return Number.POSITIVE_INFINITY;
    // While batches run, their end restarts the idle clock: poll no longer than a whole allowance.
    if (this.inFlight.size > 0) return Math.ceil(exit.afterMs / 1000);
    return Math.max(0, Math.ceil((Math.max(exit.notBefore, this.lastWorkAt + exit.afterMs) - this.deps.clock.now()) / 1000));
  }

  /** Counts and logs a failed call; the pause before the loop tries again, so an outage does not become a hot loop. */
  failed(what: string, error: unknown, context: Record<string, unknown> = {}): number {
    this.summary.errors += 1;
    this.deps.logger.error(what, { ...context, error: describe(error) });
    return Math.min(ERROR_PAUSE_MS, Math.max(0, this.usableMs()));
  }
}

/** Makes a paused queue's batch visible again at once, unrun (a failure leaves it to its visibility timeout). */
async function handBack(deps: DispatcherDeps, queue: QueueConfig, batch: readonly ReceivedMessage[]): Promise<void> {
  try {
    await deps.queues.changeVisibilityBatch(
      deps.urls.queues[queue.name] as string,
      batch.map((m) => ({ id: m.messageId, receiptHandle: m.receiptHandle, visibilityTimeoutSeconds: 0 })),
    );
  } catch (error) {
    deps.logger.warn('could not hand back a paused queue’s batch; it returns when its visibility lapses', {
      queue: queue.name,
      error: describe(error),
    });
  }
}

/**
 * Per queue, the time its longest registered task needs (limit + kill grace). A queue is only
 * received from while that fits the time left, so messages are not taken just to be released
 * (each release adds a receive, and enough of them move a message to the DLQ).
 */
function longestTaskByQueue(deps: Pick<DispatcherDeps, 'registry' | 'config'>): Map<string, number> {
  const longest = new Map<string, number>();
  for (const def of deps.registry.values()) {
    const need = taskNeedMs(def.timeLimitSeconds, deps.config.dispatcher.killGraceMs);
    longest.set(def.queue, Math.max(longest.get(def.queue) ?? 0, need));
  }
  return longest;
}

function observe(
  deps: Pick<DispatcherDeps, 'clock' | 'selector'>,
  summary: DispatcherSummary,
  queue: QueueConfig,
  batch: readonly ReceivedMessage[],
): void {
  summary.receives += 1;
  if (batch.length === 0) summary.emptyReceives += 1;
  const now = deps.clock.now();
  const oldest = batch.reduce((min, m) => Math.min(min, m.sentTimestamp), now);
  deps.selector.observe?.({ queue: queue.name, received: batch.length, oldestAgeMs: now - oldest });
}
