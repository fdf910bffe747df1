import type { QueueConfig } from '../config/app-config';
import { taskNeedMs } from '../deadlines';
import { describe } from '../errors';
import type { QueueClient, QueueUrls, ReceivedMessage } from '../ports';
import type { Probes } from '../select/selector-types';
import { addBatch, type BatchReport, type DispatcherSummary, emptySummary } from '../settle/report';
import { CONTROLS_REFRESH_MS, effectiveQueues } from '../track/operator-controls';
import { processBatch } from './batch';
import type { DispatcherDeps, RunOptions } from './dispatcher-deps';
import { TaskSlots } from './slots';

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
  const { config, clock, logger, selector } = deps;
  const margin = config.dispatcher.settleMarginMs;
  const summary = emptySummary();
  const stopped = () => options.signal?.aborted === true;
  const usableMs = () => options.deadline - margin - clock.now();

  const longestTaskMs = longestTaskByQueue(deps);
  const fitting = () => config.queues.filter((q) => (longestTaskMs.get(q.name) ?? 0) <= usableMs());

  const slots = new TaskSlots(config.dispatcher.concurrency, () => clock.now());
  const maxBatches = deps.maxBatchesInFlight ?? Number.POSITIVE_INFINITY;
  const inFlight = new Set<Promise<void>>();
  /** When a batch was last received or settled: how long the invocation has been without work. */
  let lastWorkAt = clock.now();
  /**
   * Wakes the loop waiting for room: a stop, or a batch settled. Each wait makes a fresh promise
   * (racing the long-lived ones would add a reaction to them on every pass of a long invocation).
   */
  let wake = () => {};
  // The stop signal outlives invocations (a warm container's): the listener must go with this one.
  const onAbort = () => wake();
  options.signal?.addEventListener('abort', onAbort, { once: true });
  /** Given batches (the doorbell's) not yet settled: while any runs, a doorbell fills its free slots from its queue. */
  let givenInFlight = 0;
  const start = (queue: QueueConfig, batch: readonly ReceivedMessage[], settled?: (report: BatchReport) => void) => {
    // The slots for its messages are set aside now, before the batch's own checks await: the next
    // receive counts them taken.
    const reservation = slots.reserve(batch.length);
    // A given batch is the trigger's: it deletes what the invocation does not report as kept.
    const given = settled !== undefined;
    if (given) givenInFlight += 1;
    const done: Promise<void> = processBatch(deps, queue, batch, options, slots, { triggerDeletes: given }, reservation)
      .then(
        (report) => {
          addBatch(summary, report);
          settled?.(report);
          try {
            deps.observer?.onBatch(report);
          } catch (error) {
            logger.warn('batch observer failed', { error: describe(error) });
          }
        },
        (error: unknown) => {
          summary.errors += 1;
          logger.error('batch processing failed', { queue: queue.name, error: describe(error) });
        },
      )
      .then(() => {
        inFlight.delete(done);
        if (given) givenInFlight -= 1;
        if (given && givenInFlight === 0) givenDone.abort();
        lastWorkAt = clock.now();
        wake();
      });
    inFlight.add(done);
  };
  /**
   * Room to receive now: a slot free (not held, not set aside for a batch just received) and nobody
   * waiting for one. A receive takes what would start within the prefetch horizon (see
   * {@link receiveSize}): a message received never waits long in the dispatcher behind running
   * tasks while a higher queue's work waits in SQS.
   */
  const roomFor = () => slots.hasRoom && inFlight.size < maxBatches;
  const waitForRoom = async () => {
    while (!stopped() && !roomFor()) await nextChange();
    // And a worker ready to start what is received: a cold container's threads (or one replacing a
    // thread stopped at its limit) are still loading the tasks bundle, and a message received now
    // would wait in the dispatcher for them, invisible to every other.
    if (!stopped() && deps.executor.ready) await deps.executor.ready(options.deadline - margin);
  };
  /** Resolves at the next slot released, batch settled or stop. */
  const nextChange = async () => {
    // Each wait makes a fresh promise (racing the long-lived ones would add a reaction to them on every pass).
    const woken = new Promise<void>((resolve) => {
      wake = resolve;
    });
    await Promise.race([slots.released(), woken]);
  };
  /** How many messages received now would start within the prefetch horizon (at least the free slots). */
  const startable = () => (deps.runTimes ? slots.startableWithin(PREFETCH_HORIZON_MS, clock.now()) : slots.free);
  /** How many to receive from `queue` now: what its batch holds, at most what would start within the horizon. */
  const receiveSize = (queue: QueueConfig) => Math.max(1, Math.min(queue.batchSize, startable()));

  const startedAt = clock.now();
  /** (time, busy slot-ms) at each pass, for the slots' use over the last idle allowance. */
  const busySamples: Array<{ readonly at: number; readonly busyMs: number }> = [];
  const lightlyUsed = (windowMs: number, now: number) => {
    busySamples.push({ at: now, busyMs: slots.busyMs(now) });
    while (busySamples.length > 1 && (busySamples[1] as { at: number }).at <= now - windowMs) busySamples.shift();
    const first = busySamples[0] as { at: number; busyMs: number };
    if (now - startedAt < windowMs || first.at > now - windowMs) return false;
    const used = ((busySamples.at(-1) as { busyMs: number }).busyMs - first.busyMs) / (slots.size * (now - first.at));
    return used < LIGHT_USE;
  };
  /**
   * Whether the invocation may end for lack of work: nothing for its idle allowance, or so little
   * that its slots were less than {@link LIGHT_USE} busy over it. The doorbells, turned back on
   * when it ends, carry light work as Lambda's trigger would; a backlog brings the fleet back.
   */
  const idle = () => {
    const exit = options.idleExit;
    if (!exit) return false;
    const now = clock.now();
    if (now < exit.notBefore) return false;
    const light = lightlyUsed(exit.afterMs, now);
    return (inFlight.size === 0 && now - lastWorkAt >= exit.afterMs) || light;
  };

  // Batches someone else received (the doorbell's trigger) are run whatever the time left: the
  // batch itself releases what cannot finish in time. While they run, the invocation takes more
  // from their queue into its free slots (a quick job is not left waiting behind the trigger's slow
  // ones while the trigger is at its concurrency), and it ends when they are settled.
  const given = options.given ?? [];
  const givenQueues = [...new Set(given.map((b) => b.queue))];
  for (const batch of given) start(batch.queue, batch.messages, batch.settled);
  if (options.waitingIn && options.waitingIn.length > 0) selector.expect?.(options.waitingIn);
  const working = () => given.length === 0 || givenInFlight > 0;
  /** Wakes a doorbell waiting to fill (or for room) when its given batches are settled. */
  const givenDone = new AbortController();
  const givenSignal = options.signal ? AbortSignal.any([options.signal, givenDone.signal]) : givenDone.signal;

  /**
   * A long poll never outlasts the invocation's idle allowance: an invocation that may end when
   * idle ends when the poll comes back empty, instead of waiting on a queue it is about to leave.
   */
  const idleAllowanceSeconds = () => {
    const exit = options.idleExit;
    if (!exit) return Number.POSITIVE_INFINITY;
    // While batches run, their end restarts the idle clock: poll no longer than a whole allowance.
    if (inFlight.size > 0) return Math.ceil(exit.afterMs / 1000);
    return Math.max(0, Math.ceil((Math.max(exit.notBefore, lastWorkAt + exit.afterMs) - clock.now()) / 1000));
  };

  const candidatesNow = () => (given.length > 0 ? fitting().filter((q) => givenQueues.includes(q)) : fitting());
  /** A doorbell takes from its queue only once its given work has run a while: a quick batch just ends. */
  const fillFrom = clock.now() + DOORBELL_FILL_AFTER_MS;
  while (working() && !stopped() && usableMs() >= MIN_USABLE_MS) {
    if (given.length > 0 && clock.now() < fillFrom) {
      await clock.sleep(fillFrom - clock.now(), givenSignal);
      continue;
    }
    await waitForRoom();
    if (!working() || stopped() || usableMs() < MIN_USABLE_MS) break;
    if (idle()) {
      logger.info('little or no work for a while; ending the invocation early (scaling in)', { idleMs: clock.now() - lastWorkAt });
      summary.endedIdle = true;
      break;
    }
    const fit = candidatesNow();
    if (fit.length === 0) {
      if (given.length > 0) {
        // Nothing of its queue fits the time left: the doorbell runs what it was given, and ends.
        await nextChange();
        continue;
      }
      logger.info('time left is too short for any queue; ending the invocation early', { usableMs: usableMs() });
      break;
    }
    // Operator controls (lib/track/operator-controls.ts): paused queues are left out, priorities and SLAs
    // set at run time replace the config's. The round uses the last read; a read due (every 2 s)
    // runs beside it, never awaited here, so the loop's timing is what it was without controls.
    const controls = deps.controls;
    if (controls?.due()) void controls.get();
    const candidates = controls ? effectiveQueues(fit, controls.last) : fit;
    if (candidates.length === 0) {
      // Every queue that fits is paused: nothing is received until one is resumed.
      await clock.sleep(Math.min(CONTROLS_REFRESH_MS, Math.max(0, usableMs())), options.signal);
      continue;
    }
    let selection: Awaited<ReturnType<typeof selector.select>>;
    try {
      selection = await selector.select(candidates, { freeSlots: startable(), slots: slots.size });
    } catch (error) {
      summary.errors += 1;
      logger.error('queue selection failed', { error: describe(error) });
      await clock.sleep(Math.min(ERROR_PAUSE_MS, Math.max(0, usableMs())), options.signal);
      continue;
    }
    summary.selections += 1;
    const queue = selection.queue;
    const fits = () => (longestTaskMs.get(queue.name) ?? 0) <= usableMs();
    let batch: readonly ReceivedMessage[] = selection.messages;
    let longPolled = false;
    let receivedAny = batch.length > 0;
    if (batch.length > 0) observe(deps, summary, queue, batch);
    const receives = Math.max(1, Math.min(queue.iterations, selection.receives ?? queue.iterations));
    // What the selection already received is run (or released) even if a stop came meanwhile:
    // dropped, it would stay invisible for its visibility timeout and burn a receive.
    for (let i = 0; i < receives && (!stopped() || (i === 0 && batch.length > 0)); i++) {
      if (i > 0) {
        if (!fits()) break;
        await waitForRoom();
        if (!working() || stopped() || !fits()) break;
      }
      if (i > 0 || batch.length === 0) {
        const waitSeconds = Math.min(
          i === 0 ? selection.waitSeconds : queue.longPollSeconds,
          Math.floor(usableMs() / 1000),
          idleAllowanceSeconds(),
          // A doorbell's own polls are short: it ends soon after its given batches, and a receive
          // cut short by an abort could leave messages SQS had already handed it invisible.
          given.length > 0 ? DOORBELL_POLL_SECONDS : Number.POSITIVE_INFINITY,
        );
        if (waitSeconds < 0) break;
        longPolled ||= waitSeconds > 0;
        try {
          batch = await deps.queues.receive(
            deps.urls.queues[queue.name] as string,
            { maxMessages: receiveSize(queue), waitSeconds, visibilityTimeoutSeconds: queue.visibilityTimeoutSeconds },
            options.signal,
          );
        } catch (error) {
          if (stopped() || !working()) break;
          summary.errors += 1;
          logger.error('receive failed', { queue: queue.name, error: describe(error) });
          await clock.sleep(Math.min(ERROR_PAUSE_MS, Math.max(0, usableMs())), options.signal);
          break;
        }
        observe(deps, summary, queue, batch);
        receivedAny ||= batch.length > 0;
      }
      if (batch.length === 0) break;
      if (controls?.due()) void controls.get();
      if (controls?.last.queues[queue.name]?.pausedAt !== undefined) {
        // Paused while the receive waited (a long poll): the batch goes back to the queue unrun.
        await handBack(deps, queue, batch);
        break;
      }
      lastWorkAt = clock.now();
      start(queue, batch);
    }
    if (!receivedAny && !longPolled) await clock.sleep(Math.min(IDLE_PAUSE_MS, Math.max(0, usableMs())), options.signal);
  }
  while (inFlight.size > 0) await Promise.all(inFlight);
  givenDone.abort();
  options.signal?.removeEventListener('abort', onAbort);
  return summary;
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
