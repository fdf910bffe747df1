/**
 * `taskworker schedules backfill NAME --from --to`: a schedule's ticks over a span, sent to its
 * queue as the jobs their real ticks are (the same ids, so a tick that ran is not run again, and a
 * real tick that comes later is one job with its backfilled copy), marked owed (`backfill`), so
 * the schedule's overlap makes them wait their turn and never skips them.
 */
import { TaskworkerError } from '../errors';
import { fireTimesBetween } from '../policy/cron-expressions';
import { scheduledTimeText, tickJobId } from '../policy/recurring-ticks';
import { sendOwed } from '../settle/owed-ticks';
import type { OperatorContext } from './operator-context';

/** The most ticks one backfill sends: a year of hourly ticks, a week of minutely ones. */
export const MAX_BACKFILL_TICKS = 10_000;

/** A backfill asked for something it cannot do; `field` names the option. */
export class BackfillRequestError extends TaskworkerError {
  readonly field: string;
  constructor(field: string, value: unknown, expected: string) {
    super(`${field} ${JSON.stringify(value)}: expected ${expected}`);
    this.name = 'BackfillRequestError';
    this.field = field;
  }
}

export interface BackfillResult {
  readonly schedule: string;
  readonly queue: string;
  /** ISO-8601 UTC, the span's start (included) and end (excluded). */
  readonly from: string;
  readonly to: string;
  readonly dryRun: boolean;
  /** Ticks in the span. */
  readonly ticks: number;
  /** Of those, ticks whose job is already recorded (they ran, were skipped, or wait): sent anyway, they do nothing again. */
  readonly recorded: number;
  /** Ticks sent (0 on a dry run). */
  readonly sent: number;
  /** The first few ticks' times. */
  readonly sample: readonly string[];
}

const SAMPLE = 5;

/**
 * Backfills schedule `name` over `[from, to)` on queue `queue` (the schedule's, as the caller
 * resolved it with the tasks). A rate's ticks are counted from `from`.
 */
export async function backfillSchedule(
  ctx: Pick<OperatorContext, 'config' | 'queues' | 'urls' | 'jobs' | 'clock'>,
  request: { readonly name: string; readonly queue: string; readonly from: number; readonly to: number; readonly dryRun: boolean },
): Promise<BackfillResult> {
  const schedule = ctx.config.schedules.find((s) => s.name === request.name);
  if (!schedule) {
    const names = ctx.config.schedules.map((s) => s.name);
    throw new BackfillRequestError(
      'schedule',
      request.name,
      names.length > 0 ? `one of ${names.join(', ')}` : 'a schedule (the config has none)',
    );
  }
  const url = ctx.urls.queues[request.queue];
  if (!url) throw new BackfillRequestError('queue', request.queue, `a queue of version (${Object.keys(ctx.urls.queues).join(', ')})`);
  if (!(request.from < request.to)) throw new BackfillRequestError('--to', new Date(request.to).toISOString(), 'a time after --from');
  if (request.to > ctx.clock.now()) {
    throw new BackfillRequestError(
      '--to',
      new Date(request.to).toISOString(),
      'a time not in the future (future ticks come from the schedule)',
    );
  }
  const { times, beyond } = fireTimesBetween(schedule, new Date(request.from), new Date(request.to), MAX_BACKFILL_TICKS);
  if (beyond > 0) {
    throw new BackfillRequestError(
      '--from',
      new Date(request.from).toISOString(),
      `a span of at most ${MAX_BACKFILL_TICKS} ticks (this one has more)`,
    );
  }
  const ids = times.map((t) => tickJobId(schedule.name, scheduledTimeText(t)));
  let recorded = 0;
  for (let i = 0; i < ids.length; i += 100) recorded += (await ctx.jobs.getMany(ids.slice(i, i + 100))).length;
  if (!request.dryRun) await sendOwed(ctx, url, schedule, times, 'backfill');
  return {
    schedule: schedule.name,
    queue: request.queue,
    from: new Date(request.from).toISOString(),
    to: new Date(request.to).toISOString(),
    dryRun: request.dryRun,
    ticks: times.length,
    recorded,
    sent: request.dryRun ? 0 : times.length,
    sample: times.slice(0, SAMPLE).map(scheduledTimeText),
  };
}
