/**
 * Recurring tasks: `schedules` in the config. In AWS each entry is an EventBridge Scheduler
 * schedule that sends the task's envelope to its queue; in `taskworker dev` a local timer sends the
 * same envelope. Either way the job id is derived from the schedule's name and the tick's scheduled
 * time, so a tick delivered twice is one job (the claim stops the second copy).
 *
 * `cron` is the five-field crontab everyone knows (minute hour day-of-month month day-of-week),
 * parsed by cron-parser (lib/policy/cron-expressions.ts, loaded only where schedules are run, listed or
 * deployed, so a publisher does not carry it); it is rendered into EventBridge's six-field form for
 * the stack. `rate` is EventBridge's own `N minutes|hours|days`.
 */
import type { ScheduleConfig } from '../config/schedule-config';

/** What EventBridge Scheduler puts in place of this keyword when it sends a tick: its scheduled time, e.g. 2027-01-01T06:00:00Z. */
export const SCHEDULED_TIME_KEYWORD = '<aws.scheduler.scheduled-time>';

/** A tick's scheduled time as EventBridge Scheduler writes it (UTC, whole seconds): `2027-01-01T06:00:00Z`. */
export function scheduledTimeText(time: Date): string {
  return new Date(Math.floor(time.getTime() / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

/**
 * Why a tick runs though EventBridge Scheduler did not send it now: `catch-up`, a tick missed while
 * the schedules were off, sent on recovery; `backfill`, one an operator asked for
 * (`taskworker schedules backfill`). Such a tick is owed: it is never skipped for overlap, it waits
 * its turn.
 */
export type OwedTick = 'catch-up' | 'backfill';

/**
 * The message body one tick sends (envelope v1): the job id is `schedule:<name>:<scheduled time>`,
 * so two deliveries of one tick are one job, and a caught-up or backfilled tick is the same job as
 * the real one of that time. `scheduledTime` is the tick's time, or in the stack
 * {@link SCHEDULED_TIME_KEYWORD}, which EventBridge Scheduler fills in.
 */
export function tickBody(schedule: ScheduleConfig, scheduledTime: string, owed?: OwedTick): string {
  return JSON.stringify({
    v: 1,
    task: schedule.task,
    payload: schedule.payload,
    id: tickJobId(schedule.name, scheduledTime),
    appData: { schedule: schedule.name, scheduledTime, ...(owed ? { owed } : {}) },
  });
}

export function tickJobId(schedule: string, scheduledTime: string): string {
  return `schedule:${schedule}:${scheduledTime}`;
}

/** A received job that is one of the config's schedule ticks. */
export interface Tick {
  readonly schedule: ScheduleConfig;
  /** Epoch ms of its scheduled time. */
  readonly at: number;
  readonly owed?: OwedTick;
}

/**
 * The tick a job is, or undefined: its id, its `appData` and its task must all be a configured
 * schedule's tick (a publisher that only borrows the id or the appData gets no schedule policy).
 */
export function tickOf(
  job: { readonly id: string; readonly task: string; readonly appData?: unknown },
  schedules: readonly ScheduleConfig[],
): Tick | undefined {
  if (!job.id.startsWith('schedule:') || typeof job.appData !== 'object' || job.appData === null) return undefined;
  const data = job.appData as { schedule?: unknown; scheduledTime?: unknown; owed?: unknown };
  const schedule = schedules.find((s) => s.name === data.schedule);
  if (!schedule || schedule.task !== job.task || typeof data.scheduledTime !== 'string') return undefined;
  if (job.id !== tickJobId(schedule.name, data.scheduledTime)) return undefined;
  const at = Date.parse(data.scheduledTime);
  if (!Number.isFinite(at)) return undefined;
  const owed = data.owed === 'catch-up' || data.owed === 'backfill' ? data.owed : undefined;
  return { schedule, at, ...(owed ? { owed } : {}) };
}
