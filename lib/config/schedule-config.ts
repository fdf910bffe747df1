/**
 * Recurring tasks as the config declares them (`schedules`), validated. How a tick is sent is
 * lib/policy/recurring-ticks.ts's; cron fields are checked by lib/policy/cron-expressions.ts where schedules run.
 */
import { ConfigError } from '../errors';
import { type Duration, durationSeconds } from './durations';

export interface ScheduleInput {
  /** Unique within the app: letters, digits, `.`, `_`, `-` (≤ 64). Part of every tick's job id. */
  readonly name: string;
  /** The registered task each tick publishes. */
  readonly task: string;
  /** The payload of every tick. @defaultValue null */
  readonly payload?: unknown;
  /** Five-field crontab, e.g. `0 6 * * 1-5` (06:00 on weekdays). Give `cron` or `rate`. */
  readonly cron?: string;
  /** Fixed rate, e.g. `5 minutes`, `1 hour`, `2 days`. Give `cron` or `rate`. */
  readonly rate?: string;
  /** IANA time zone `cron` is read in, e.g. `Europe/Berlin` (daylight saving included). @defaultValue 'UTC' */
  readonly timezone?: string;
  /** Queue to publish to. @defaultValue the task's own queue */
  readonly queue?: string;
  /**
   * A tick that comes while the schedule's previous run is still live (queued, running, retrying):
   * `skip` records it `deduplicated` pointing at that run, never run; `buffer-one` keeps one such
   * tick waiting and runs it when the run ends (further ones are skipped); `allow` runs it beside.
   * Needs the queue tracked `full` (the jobs table sees the runs). @defaultValue 'skip' on a `full`
   * tracked queue, else 'allow'
   */
  readonly overlap?: ScheduleOverlap;
  /**
   * How far back ticks missed while the version's schedules were disabled or not delivered are run
   * once each when ticks resume (`'1h'`, seconds; at most 7 days); older ones are counted missed.
   * Needs the queue tracked `full`. @defaultValue none: missed ticks are counted, not run
   */
  readonly catchUp?: Duration;
}

export type ScheduleOverlap = 'skip' | 'buffer-one' | 'allow';
export const SCHEDULE_OVERLAPS: readonly ScheduleOverlap[] = ['skip', 'buffer-one', 'allow'];
/** The longest `catchUp`: a week of missed ticks. */
export const MAX_CATCH_UP_SECONDS = 7 * 86_400;

export interface ScheduleConfig {
  readonly name: string;
  readonly task: string;
  readonly payload: unknown;
  readonly cron?: string;
  readonly rate?: { readonly value: number; readonly unit: RateUnit };
  readonly timezone: string;
  readonly queue?: string;
  /** Absent: the default (`skip` where the queue is tracked `full`, else `allow`), decided with the tasks. */
  readonly overlap?: ScheduleOverlap;
  /** Seconds; 0 when missed ticks are only counted. */
  readonly catchUpSeconds: number;
}

type RateUnit = 'minute' | 'hour' | 'day';
export const RATE_MS: Record<RateUnit, number> = { minute: 60_000, hour: 3_600_000, day: 86_400_000 };
const SCHEDULE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const RATE = /^\s*(\d+)\s+(minute|minutes|hour|hours|day|days)\s*$/;
/** Validates `schedules` (the field named in every error); task names are checked against the tasks at start and synth. */
export function resolveSchedules(input: unknown, queueNames: readonly string[]): ScheduleConfig[] {
  if (input === undefined) return [];
  if (!Array.isArray(input)) throw new ConfigError('schedules', input, 'an array of { name, task, cron | rate, ... }');
  const seen = new Set<string>();
  return input.map((raw: unknown, i) => {
    const path = `schedules[${i}]`;
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new ConfigError(path, raw, 'an object');
    const s = raw as Record<string, unknown>;
    if (typeof s.name !== 'string' || !SCHEDULE_NAME.test(s.name)) {
      throw new ConfigError(`${path}.name`, s.name, 'letters, digits, ".", "_" or "-", starting with a letter or digit, ≤ 64 chars');
    }
    if (seen.has(s.name)) throw new ConfigError(`${path}.name`, s.name, 'a name not used by another schedule');
    seen.add(s.name);
    if (typeof s.task !== 'string' || s.task === '') throw new ConfigError(`${path}.task`, s.task, 'a task name');
    const timezone = s.timezone === undefined ? 'UTC' : s.timezone;
    if (typeof timezone !== 'string' || !isTimeZone(timezone)) {
      throw new ConfigError(`${path}.timezone`, s.timezone, 'an IANA time zone such as "UTC" or "Europe/Berlin"');
    }
    if ((s.cron === undefined) === (s.rate === undefined)) throw new ConfigError(path, raw, 'exactly one of cron or rate');
    if (s.queue !== undefined && !queueNames.includes(s.queue as string)) {
      throw new ConfigError(`${path}.queue`, s.queue, `one of the configured queues (${queueNames.join(', ')})`);
    }
    if (s.overlap !== undefined && !SCHEDULE_OVERLAPS.includes(s.overlap as ScheduleOverlap)) {
      throw new ConfigError(`${path}.overlap`, s.overlap, SCHEDULE_OVERLAPS.map((o) => `'${o}'`).join(', '));
    }
    // A resolved config is a valid input too: its catch-up is already `catchUpSeconds`.
    const catchUpSeconds = s.catchUpSeconds !== undefined ? s.catchUpSeconds : s.catchUp === undefined ? 0 : durationSeconds(s.catchUp);
    if (
      typeof catchUpSeconds !== 'number' ||
      !Number.isFinite(catchUpSeconds) ||
      catchUpSeconds < 0 ||
      catchUpSeconds > MAX_CATCH_UP_SECONDS
    ) {
      throw new ConfigError(`${path}.catchUp`, s.catchUp ?? s.catchUpSeconds, "a span up to 7 days: seconds, or '30m', '1h', '2d'");
    }
    const base = {
      name: s.name,
      task: s.task,
      payload: s.payload ?? null,
      timezone,
      ...(s.queue !== undefined ? { queue: s.queue as string } : {}),
      ...(s.overlap !== undefined ? { overlap: s.overlap as ScheduleOverlap } : {}),
      catchUpSeconds,
    };
    if (s.cron !== undefined) {
      const cron = typeof s.cron === 'string' ? s.cron.trim() : s.cron;
      if (typeof cron !== 'string') throw new ConfigError(`${path}.cron`, s.cron, 'a five-field crontab such as "0 6 * * 1-5"');
      if (cron.split(/\s+/).length !== 5) {
        throw new ConfigError(`${path}.cron`, cron, 'five fields: minute hour day-of-month month day-of-week');
      }
      // The fields' values are checked where schedules run or deploy (checkCron, with the tasks).
      return { ...base, cron };
    }
    // A resolved config is a valid input too: its rate is already `{ value, unit }`.
    const rate = s.rate as { value?: unknown; unit?: unknown } | string;
    const text = typeof rate === 'object' && rate !== null ? `${String(rate.value)} ${String(rate.unit)}` : rate;
    const match = typeof text === 'string' ? RATE.exec(text) : null;
    const value = Number(match?.[1]);
    if (!match || !Number.isInteger(value) || value < 1) {
      throw new ConfigError(`${path}.rate`, s.rate, 'a rate such as "5 minutes", "1 hour" or "2 days"');
    }
    return { ...base, rate: { value, unit: (match[2] as string).replace(/s$/, '') as RateUnit } };
  });
}

function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}
