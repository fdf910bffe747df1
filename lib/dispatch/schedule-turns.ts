/**
 * A schedule's policies for its ticks, decided at the claim (lib/dispatch/claim.ts) of a `full`
 * tracked queue's job that is one of the config's ticks (lib/policy/recurring-ticks.ts `tickOf`):
 *
 * - **Catch-up.** Every tick EventBridge Scheduler sends raises the schedule's latest tick in the
 *   jobs table (`~ schedule <name>`). A tick that finds ticks missing before it (the version's
 *   schedules were disabled, or not delivered) sends those within `catchUp` before it to the queue
 *   once each, as the very jobs their real ticks would have been (same ids), and counts the older
 *   ones missed. Sent before the latest tick is raised, so a dispatcher lost between the two leaves
 *   the next delivery to send them again, deduplicated by id.
 * - **Overlap.** The schedule's run is a hold in the jobs table beside its `unique` holds (the same
 *   conditional write and the same liveness: the holder's record is queued, running or retrying,
 *   or it took the hold moments ago). A tick that finds another tick's live run is skipped
 *   (recorded `deduplicated` pointing at it) under `skip`; under `buffer-one` the first such tick
 *   holds the buffer and waits, handed back to its queue until the run ends, and later ones are
 *   skipped. An owed tick (caught up or backfilled) is never skipped: it waits its turn.
 */
import type { QueueConfig } from '../config/app-config';
import type { ScheduleOverlap } from '../config/schedule-config';
import { fireTimesBetween, MAX_COUNTED } from '../policy/cron-expressions';
import { scheduledTimeText, type Tick } from '../policy/recurring-ticks';
import { sendOwed } from '../settle/owed-ticks';
import { holdUniqueKey } from '../settle/unique-holds';
import { LIVE_STATES } from '../track/job-record';
import type { JobStore } from '../track/job-stores';
import type { DispatcherDeps } from './dispatcher-deps';

/** The hold of a schedule's run: a pseudo task no task's name can be (none starts with `:`). */
const RUN_HOLD = ':schedule';
/** The hold of the one tick `buffer-one` keeps waiting. */
const BUFFER_HOLD = ':schedule-buffer';
/** A hold's window: the longest a `unique` key is held. Liveness, not the window, ends a run's hold. */
const HOLD_SECONDS = 30 * 86_400;
/**
 * The most a waiting tick stays away before it asks again: well under the grace a hold with no job
 * record keeps (lib/policy/unique-rules.ts), which the buffered tick, not yet claimed, relies on.
 */
const MAX_WAIT_SECONDS = 60;
const MIN_WAIT_SECONDS = 5;
/** How far past now a tick's time may be and still count as sent at its time (clocks differ a little). */
const FUTURE_SLACK_MS = 5 * 60_000;
/** The most missed ticks one recovery sends; the rest of the window is counted missed. */
export const MAX_CAUGHT_UP = 1_000;

/** What a tick does: run now, be skipped (recorded pointing at `runner`), or come back in `seconds`. */
export type Turn =
  | { readonly kind: 'run' }
  | { readonly kind: 'skip'; readonly runner: string }
  | { readonly kind: 'wait'; readonly runner: string; readonly seconds: number };

/** The overlap a schedule has on a `full` tracked queue: its own, else `skip`. */
export function overlapOf(tick: Tick): ScheduleOverlap {
  return tick.schedule.overlap ?? 'skip';
}

/** Whose turn it is: this tick's, or the live run's it is skipped for or waits behind. */
export async function scheduleTurn(jobs: JobStore, tick: Tick, jobId: string, now: number): Promise<Turn> {
  const overlap = overlapOf(tick);
  if (overlap === 'allow') return { kind: 'run' };
  const name = tick.schedule.name;
  const rule = { forSeconds: HOLD_SECONDS, while: LIVE_STATES };
  const take = (task: string) => holdUniqueKey(jobs, { task, key: name, jobId, publishedAt: now }, rule, now);
  const run = await take(RUN_HOLD);
  if (run.outcome === 'holds') {
    // A buffered tick whose turn came gives the buffer up for the next one (a no-op for any other).
    if (overlap === 'buffer-one') await jobs.releaseKey(BUFFER_HOLD, name, jobId);
    return { kind: 'run' };
  }
  // The longer a tick has waited, the less often it asks.
  const seconds = Math.min(MAX_WAIT_SECONDS, Math.max(MIN_WAIT_SECONDS, Math.ceil((now - tick.at) / 4_000)));
  if (tick.owed) return { kind: 'wait', runner: run.holder, seconds };
  if (overlap === 'buffer-one') {
    const buffer = await take(BUFFER_HOLD);
    // Skipped for the buffered tick, which runs after the live one.
    return buffer.outcome === 'holds' ? { kind: 'wait', runner: run.holder, seconds } : { kind: 'skip', runner: buffer.holder };
  }
  return { kind: 'skip', runner: run.holder };
}

/** What a tick's catch-up did: ticks sent (owed), and ticks counted missed (past the window). */
export interface CatchUp {
  readonly caughtUp: number;
  readonly missed: number;
}

/**
 * Sends the ticks missed before this real tick that fall within the schedule's `catchUp` before it,
 * counts the older ones missed, and raises the schedule's latest tick to this one. Throws when the
 * table or the queue does not answer (the claim hands the message back; the next delivery does it
 * again, the sent ticks deduplicated by id).
 */
export async function catchUpBefore(
  deps: Pick<DispatcherDeps, 'queues' | 'urls' | 'clock' | 'logger'>,
  jobs: JobStore,
  queue: QueueConfig,
  tick: Tick,
  now: number,
): Promise<CatchUp> {
  const { schedule } = tick;
  if (tick.at > now + FUTURE_SLACK_MS) {
    // Not a tick EventBridge Scheduler sent (it sends at the tick's time): it must not move the schedule's clock.
    deps.logger.warn('a tick from the future leaves the schedule’s latest tick as it is', { schedule: schedule.name, at: tick.at });
    return { caughtUp: 0, missed: 0 };
  }
  const last = (await jobs.scheduleTicks(schedule.name))?.lastTick;
  if (last !== undefined && last >= tick.at) return { caughtUp: 0, missed: 0 };
  let owed: Date[] = [];
  let missed = 0;
  if (last !== undefined) {
    // A rate counts from a tick: the last one seen is one.
    const since = new Date(last);
    const windowStart = Math.max(last + 1, tick.at - schedule.catchUpSeconds * 1000);
    const older = fireTimesBetween(schedule, new Date(last + 1), new Date(Math.min(windowStart, tick.at)), 0, since);
    const within = fireTimesBetween(schedule, new Date(windowStart), new Date(tick.at), MAX_CAUGHT_UP, since);
    owed = schedule.catchUpSeconds > 0 ? within.times : [];
    missed = older.beyond + within.beyond + (schedule.catchUpSeconds > 0 ? 0 : within.times.length);
    if (older.beyond >= MAX_COUNTED)
      deps.logger.warn('missed ticks counted up to the bound', { schedule: schedule.name, bound: MAX_COUNTED });
  }
  if (owed.length > 0) await sendOwed(deps, deps.urls.queues[queue.name] as string, schedule, owed, 'catch-up');
  await jobs.noteTick(schedule.name, tick.at, { missed, caughtUp: owed.length }, now);
  if (owed.length > 0 || missed > 0) {
    deps.logger.warn('ticks missed before this one', {
      schedule: schedule.name,
      tick: scheduledTimeText(new Date(tick.at)),
      caughtUp: owed.length,
      missed,
    });
  }
  return { caughtUp: owed.length, missed };
}
