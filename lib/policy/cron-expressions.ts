/**
 * Crontab schedules, by cron-parser: their next fire times in a time zone, and their EventBridge
 * Scheduler form. Kept apart from the config (lib/policy/recurring-ticks.ts) so only what runs,
 * lists or deploys schedules loads the parser.
 */
import { CronExpressionParser } from 'cron-parser';
import { RATE_MS, type ScheduleConfig } from '../config/schedule-config';
import { ConfigError } from '../errors';

const DAY_NAMES = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'] as const;

/** Checks every schedule's crontab fields (at `taskworker dev` start, at synth, in `taskworker schedules`), naming the field. */
export function checkCrontabs(config: { readonly schedules: readonly ScheduleConfig[] }): void {
  config.schedules.forEach((schedule, i) => {
    checkCron(schedule, `schedules[${i}].cron`);
  });
}

/** Checks a crontab schedule's fields in both renderings (the local one and the one the stack deploys); the field is named in the error. */
export function checkCron(schedule: ScheduleConfig, field: string): void {
  if (schedule.cron !== undefined) eventBridgeExpression(schedule, field);
}

/** The schedule expression EventBridge Scheduler takes: `cron(m h dom mon dow year)` or `rate(N units)`. */
export function eventBridgeExpression(schedule: ScheduleConfig, field = 'cron'): string {
  if (schedule.rate) {
    const { value, unit } = schedule.rate;
    return `rate(${value} ${unit}${value === 1 ? '' : 's'})`;
  }
  const text = schedule.cron as string;
  if (text.split(/\s+/).length !== 5) throw new ConfigError(field, text, 'five fields: minute hour day-of-month month day-of-week');
  let parsed: ReturnType<typeof CronExpressionParser.parse>;
  try {
    parsed = CronExpressionParser.parse(text, { tz: schedule.timezone, strict: false });
  } catch (error) {
    throw new ConfigError(field, text, `a valid crontab (${error instanceof Error ? error.message : String(error)})`);
  }
  const { fields } = parsed;
  const list = (values: readonly (number | string)[], wildcard: boolean) => (wildcard ? '*' : values.join(','));
  const minute = list(fields.minute.values, fields.minute.isWildcard);
  const hour = list(fields.hour.values, fields.hour.isWildcard);
  const month = list(fields.month.values, fields.month.isWildcard);
  const domAny = fields.dayOfMonth.isWildcard;
  const dowAny = fields.dayOfWeek.isWildcard || new Set(fields.dayOfWeek.values.map((d) => Number(d) % 7)).size === 7;
  if (!domAny && !dowAny) {
    // Crontab fires when either matches; EventBridge takes one of the two.
    throw new ConfigError(field, text, 'a day of the month or a day of the week, not both (EventBridge cannot say "either")');
  }
  const dom = domAny ? (dowAny ? '*' : '?') : fields.dayOfMonth.values.join(',');
  const dow = dowAny ? '?' : [...new Set(fields.dayOfWeek.values.map((d) => DAY_NAMES[Number(d) % 7]))].join(',');
  const expression = `cron(${minute} ${hour} ${dom} ${month} ${dow} *)`;
  if (expression.length > 256)
    throw new ConfigError(field, text, 'a crontab whose EventBridge form fits 256 characters (use ranges or steps)');
  return expression;
}

/**
 * The next `count` fire times after `from`: for `rate`, counted from `since` (when the schedule
 * started). A crontab in a time zone follows EventBridge Scheduler's documented daylight-saving
 * rules, so `taskworker dev`, catch-up and backfill fire when the stack would: a wall time the
 * spring change skips does not fire (cron-parser would move it an hour on), and a wall time the
 * autumn change repeats fires once, at its first occurrence.
 */
export function nextFireTimes(schedule: ScheduleConfig, from: Date, count: number, since: Date = from): Date[] {
  const times: Date[] = [];
  for (const time of fireTimes(schedule, from, since)) {
    if (times.length === count) break;
    times.push(time);
  }
  return times;
}

/** The fire times after `from`, lazily (see {@link nextFireTimes}). */
export function* fireTimes(schedule: ScheduleConfig, from: Date, since: Date = from): Generator<Date, never> {
  if (schedule.rate) {
    const every = schedule.rate.value * RATE_MS[schedule.rate.unit];
    const elapsed = Math.max(0, from.getTime() - since.getTime());
    for (let at = since.getTime() + (Math.floor(elapsed / every) + 1) * every; ; at += every) yield new Date(at);
  }
  const parsed = CronExpressionParser.parse(schedule.cron as string, { tz: schedule.timezone, currentDate: from, strict: false });
  if (FIXED_ZONES.has(schedule.timezone)) {
    for (;;) yield parsed.next().toDate();
  }
  const wall = wallClock(schedule.timezone);
  const minutes = new Set(parsed.fields.minute.values.map(Number));
  const hours = new Set(parsed.fields.hour.values.map(Number));
  for (;;) {
    const next = parsed.next().toDate();
    const at = wall(next);
    if (!minutes.has(at.minute) || !hours.has(at.hour)) continue;
    if (DST_SHIFTS_MS.some((shift) => wall(new Date(next.getTime() - shift)).text === at.text)) continue;
    yield next;
  }
}

/**
 * The fire times in `[from, to)`, oldest first, at most `max` of them, and how many more the span
 * holds past those (counted up to {@link MAX_COUNTED}). For `rate`, counted from `since`.
 */
export function fireTimesBetween(
  schedule: ScheduleConfig,
  from: Date,
  to: Date,
  max: number,
  since: Date = from,
): { readonly times: Date[]; readonly beyond: number } {
  const times: Date[] = [];
  let beyond = 0;
  for (const next of fireTimes(schedule, new Date(from.getTime() - 1), since)) {
    if (next.getTime() >= to.getTime() || times.length + beyond >= max + MAX_COUNTED) break;
    if (times.length < max) times.push(next);
    else beyond++;
  }
  return { times, beyond };
}

/** How many fire times past the first `max` {@link fireTimesBetween} counts before it stops. */
export const MAX_COUNTED = 20_000;

/** Zones with no daylight saving, whose fire times need no wall-clock check. */
const FIXED_ZONES: ReadonlySet<string> = new Set(['UTC', 'Etc/UTC', 'GMT', 'Etc/GMT']);

/** The offsets a daylight-saving change moves clocks by: an hour, or half an hour (Lord Howe Island). */
const DST_SHIFTS_MS = [3_600_000, 1_800_000];

/** A time's wall clock in a zone: its hour, minute, and all its fields as text. */
function wallClock(timeZone: string): (time: Date) => { readonly hour: number; readonly minute: number; readonly text: string } {
  const format = new Intl.DateTimeFormat('en-US', {
    timeZone,
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
  });
  return (time) => {
    const parts = Object.fromEntries(format.formatToParts(time).map((p) => [p.type, p.value]));
    return { hour: Number(parts.hour), minute: Number(parts.minute), text: format.format(time) };
  };
}
