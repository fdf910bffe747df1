/**
 * Ticks a schedule owes (lib/policy/recurring-ticks.ts `OwedTick`), sent to its queue as the jobs
 * their real ticks are: by the dispatcher catching up after an outage, and by
 * `taskworker schedules backfill`.
 */

import type { Clock } from '../clock';
import type { ScheduleConfig } from '../config/schedule-config';
import { type OwedTick, scheduledTimeText, tickBody } from '../policy/recurring-ticks';
import type { QueueClient } from '../ports';
import { callWithEntryRetries } from '../retry-entries';

/** Sends the ticks at `times` to the queue at `url`, ten to a batch; throws if any could not be sent. */
export async function sendOwed(
  deps: { readonly queues: QueueClient; readonly clock: Clock },
  url: string,
  schedule: ScheduleConfig,
  times: readonly Date[],
  owed: OwedTick,
): Promise<void> {
  for (let i = 0; i < times.length; i += 10) {
    const entries = times.slice(i, i + 10).map((time, j) => ({ id: String(j), body: tickBody(schedule, scheduledTimeText(time), owed) }));
    const { failed } = await callWithEntryRetries(entries, (e) => deps.queues.sendBatch(url, e), deps.clock);
    if (failed.length > 0) throw new Error(`owed ticks of schedule ${schedule.name} not sent: ${failed.map((f) => f.message).join('; ')}`);
  }
}
