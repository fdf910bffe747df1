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

/** The next `count` fire times after `from`: for `rate`, counted from `since` (when the schedule started). */
export function nextFireTimes(schedule: ScheduleConfig, from: Date, count: number, since: Date = from): Date[] {
  if (schedule.rate) {
    const every = schedule.rate.value * RATE_MS[schedule.rate.unit];
    const elapsed = Math.max(0, from.getTime() - since.getTime());
    const first = since.getTime() + (Math.floor(elapsed / every) + 1) * every;
    return Array.from({ length: count }, (_, i) => new Date(first + i * every));
  }
  const parsed = CronExpressionParser.parse(schedule.cron as string, { tz: schedule.timezone, currentDate: from, strict: false });
  return parsed.take(count).map((d) => d.toDate());
}
