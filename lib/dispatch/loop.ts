import type { QueueConfig } from '../config';
import { startWithinMs, taskNeedMs } from '../deadlines';
import { describe } from '../errors';
import type { QueueClient, QueueUrls, ReceivedMessage } from '../ports';
import type { Probes } from '../select/types';
import { addBatch, type BatchReport, type DispatcherSummary, emptySummary } from '../settle/report';
import { CONTROLS_REFRESH_MS, effectiveQueues } from '../track/controls';
import { processBatch } from './batch';
import { TaskSlots } from './slots';
import type { DispatcherDeps, RunOptions } from './types';

/** Pause after a failed receive or selection, so an outage does not become a hot loop. */
const ERROR_PAUSE_MS = 1000;
/** Pause after a selection that found nothing without long-polling (long poll 0, or too little time for one). */
const IDLE_PAUSE_MS = 200;
/** Below this share of its slots in use over its idle allowance, an invocation that may scale in ends. */
const LIGHT_USE = 0.1;
/** Below this much usable time the loop ends: there is no room for a receive and a settle. */
const MIN_USABLE_MS = 1000;

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
  const start = (queue: QueueConfig, batch: readonly ReceivedMessage[], settled?: (report: BatchReport) => void) => {
    // A given batch is the trigger's: it deletes what the invocation does not report as kept.
    const done: Promise<void> = processBatch(deps, queue, batch, options, slots, { triggerDeletes: settled !== undefined })
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
        lastWorkAt = clock.now();
        wake();
      });
    inFlight.add(done);
  };
  /**
   * Room to receive a full batch from each of `queues` now: a slot free, nobody waiting for one,
   * and the messages that would wait for a slot would all start before their visibility lapses
   * (going by the hard ends of the tasks holding the slots).
   */
  const roomFor = (queues: readonly QueueConfig[]) => {
    if (!slots.hasRoom || inFlight.size >= maxBatches) return false;
    const now = clock.now();
    return queues.every((q) => slots.freeBy(Math.min(q.batchSize, slots.size), now) <= now + startWithinMs(q.visibilityTimeoutSeconds));
  };
  const waitForRoom = async (queues: readonly QueueConfig[]) => {
    while (!stopped() && !roomFor(queues)) {
      const woken = new Promise<void>((resolve) => {
        wake = resolve;
      });
      await Promise.race([slots.released(), woken]);
    }
  };

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

  // Batches someone else received (the doorbell's trigger) are this invocation's whole work,
  // whatever the time left: the batch itself releases what cannot finish in time.
  const given = options.given ?? [];
  for (const batch of given) start(batch.queue, batch.messages, batch.settled);
  if (options.waitingIn && options.waitingIn.length > 0) selector.expect?.(options.waitingIn);

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

  while (given.length === 0 && !stopped() && usableMs() >= MIN_USABLE_MS) {
    await waitForRoom(fitting());
    if (stopped() || usableMs() < MIN_USABLE_MS) break;
    if (idle()) {
      logger.info('little or no work for a while; ending the invocation early (scaling in)', { idleMs: clock.now() - lastWorkAt });
      summary.endedIdle = true;
      break;
    }
    const fit = fitting();
    if (fit.length === 0) {
      logger.info('time left is too short for any queue; ending the invocation early', { usableMs: usableMs() });
      break;
    }
    // Operator controls (lib/track/controls.ts): paused queues are left out, priorities and SLAs
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
      selection = await selector.select(candidates, { freeSlots: slots.free, slots: slots.size });
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
        await waitForRoom([queue]);
        if (stopped() || !fits()) break;
      }
      if (i > 0 || batch.length === 0) {
        const waitSeconds = Math.min(
          i === 0 ? selection.waitSeconds : queue.longPollSeconds,
          Math.floor(usableMs() / 1000),
          idleAllowanceSeconds(),
        );
        if (waitSeconds < 0) break;
        longPolled ||= waitSeconds > 0;
        try {
          batch = await deps.queues.receive(
            deps.urls.queues[queue.name] as string,
            { maxMessages: queue.batchSize, waitSeconds, visibilityTimeoutSeconds: queue.visibilityTimeoutSeconds },
            options.signal,
          );
        } catch (error) {
          if (stopped()) break;
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
