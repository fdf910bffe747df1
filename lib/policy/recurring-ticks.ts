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
 * The message body one tick sends (envelope v1): the job id is `schedule:<name>:<scheduled time>`,
 * so two deliveries of one tick are one job. `scheduledTime` is the tick's time, or in the stack
 * {@link SCHEDULED_TIME_KEYWORD}, which EventBridge Scheduler fills in.
 */
export function tickBody(schedule: ScheduleConfig, scheduledTime: string): string {
  return JSON.stringify({
    v: 1,
    task: schedule.task,
    payload: schedule.payload,
    id: `schedule:${schedule.name}:${scheduledTime}`,
    appData: { schedule: schedule.name, scheduledTime },
  });
}
