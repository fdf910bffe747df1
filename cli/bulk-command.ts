/** `taskworker jobs bulk`: cancel, replay or delete many jobs by filter, with a dry run, a rate, progress and a log. */
import {
  BULK_ACTIONS,
  type BulkAction,
  type BulkFilter,
  type BulkResult,
  CANCELLABLE_STATES,
  operatorName,
  runBulk,
} from '../lib/operate/bulk';
import type { OperatorContext } from '../lib/operate/operator-context';
import { utcDay } from '../lib/policy/stat-sums';
import type { JobState } from '../lib/track/job-record';
import { ARCHIVE_REASONS, type ArchiveReason } from '../lib/wire/archive-reasons';
import { progressBar } from './render';
import { dateOption, integerOption, UsageError } from './shared';

export const BULK_USAGE =
  'usage: taskworker jobs bulk cancel|replay|delete [--task T] [--queue Q] [--state S] [--tag T] [--key K] [--reason R] ' +
  '[--since TIME] [--until TIME] [--limit N] [--rate N] [--dry-run] [--json] | taskworker jobs bulk log [--day YYYY-MM-DD]';

export interface BulkValues {
  readonly task?: string | undefined;
  readonly queue?: string | undefined;
  readonly state?: string | undefined;
  readonly tag?: string | undefined;
  readonly key?: string | undefined;
  readonly reason?: string | undefined;
  readonly since?: string | undefined;
  readonly until?: string | undefined;
  readonly limit?: string | undefined;
  readonly rate?: string | undefined;
  readonly 'dry-run'?: boolean | undefined;
  readonly day?: string | undefined;
}

/** `90m`, `2h`, `7d` ago, or an ISO-8601 time with its zone. */
export function timeOption(name: string, text: string, now: number): number {
  const ago = /^(\d+)(m|h|d)$/.exec(text.trim());
  if (ago) return now - Number(ago[1]) * { m: 60_000, h: 3_600_000, d: 86_400_000 }[ago[2] as 'm' | 'h' | 'd'];
  try {
    return dateOption(name, text).getTime();
  } catch {
    throw new UsageError(`${name} ${text}: expected a time ago (90m, 2h, 7d) or an ISO-8601 time with a zone, e.g. 2027-01-01T09:00:00Z`);
  }
}

/** The filter the options give, checked (the action's own rules are checked by runBulk). */
export function bulkFilter(values: BulkValues, now: number): BulkFilter {
  if (values.reason !== undefined && !(ARCHIVE_REASONS as readonly string[]).includes(values.reason))
    throw new UsageError(`--reason ${values.reason}: expected one of ${ARCHIVE_REASONS.join(', ')}`);
  if (values.state !== undefined && !(CANCELLABLE_STATES as readonly string[]).includes(values.state))
    throw new UsageError(`--state ${values.state}: expected one of ${CANCELLABLE_STATES.join(', ')}`);
  return {
    ...(values.task !== undefined ? { task: values.task } : {}),
    ...(values.queue !== undefined ? { queue: values.queue } : {}),
    ...(values.state !== undefined ? { state: values.state as JobState } : {}),
    ...(values.tag !== undefined ? { tag: values.tag } : {}),
    ...(values.key !== undefined ? { key: values.key } : {}),
    ...(values.reason !== undefined ? { reason: values.reason as ArchiveReason } : {}),
    ...(values.since !== undefined ? { since: timeOption('--since', values.since, now) } : {}),
    ...(values.until !== undefined ? { until: timeOption('--until', values.until, now) } : {}),
  };
}

/** Runs `jobs bulk SUB …`; prints the result (or the day's log) and returns the exit code. */
export async function bulkCommand(ctx: OperatorContext, words: readonly string[], values: BulkValues, json: boolean): Promise<number> {
  const [sub, ...extra] = words;
  if (extra.length > 0) throw new UsageError(BULK_USAGE);
  const now = ctx.clock.now();
  if (sub === 'log') {
    const day = values.day ?? utcDay(now);
    if (!/^\d{4}-\d{2}-\d{2}$/.test(day)) throw new UsageError(`--day ${day}: expected YYYY-MM-DD`);
    const entries = ctx.operations ? await ctx.operations.day(day) : [];
    const text = () =>
      entries.length === 0
        ? `no bulk operations logged on ${day}`
        : entries
            .map(
              (e) =>
                `${new Date(e.at).toISOString()}  ${e.who}  ${e.action}  ${JSON.stringify(e.filter)}  matched ${e.matched}, done ${e.done}` +
                `${e.skipped > 0 ? `, skipped ${e.skipped}` : ''}${e.ratePerSecond !== undefined ? ` at ≤ ${e.ratePerSecond}/s` : ''} in ${e.seconds} s`,
            )
            .join('\n');
    process.stdout.write(`${json ? JSON.stringify(entries, null, 2) : text()}\n`);
    return 0;
  }
  if (!BULK_ACTIONS.includes(sub as BulkAction)) throw new UsageError(BULK_USAGE);
  const action = sub as BulkAction;
  const filter = bulkFilter(values, now);
  const rate = values.rate === undefined ? undefined : Number(values.rate);
  if (rate !== undefined && !(rate > 0 && rate <= 10_000))
    throw new UsageError(`--rate ${values.rate}: expected actions a second, above 0 and at most 10000`);
  const limit = values.limit === undefined ? undefined : integerOption('--limit', values.limit, 0, 1, 1_000_000);
  const tty = process.stderr.isTTY === true;
  const result = await runBulk(ctx, action, filter, {
    dryRun: values['dry-run'] === true,
    who: operatorName(),
    ...(rate !== undefined ? { ratePerSecond: rate } : {}),
    ...(limit !== undefined ? { limit } : {}),
    onProgress: (done, of) => {
      if (tty) process.stderr.write(`\r${action} ${progressBar(done, Math.max(of ?? done, done))}`);
      else if (done % 100 === 0) process.stderr.write(`${action}: ${done} done\n`);
    },
  });
  if (tty && !result.dryRun) process.stderr.write('\n');
  process.stdout.write(`${json ? JSON.stringify(result, null, 2) : renderBulk(result)}\n`);
  return 0;
}

const PAST: Record<BulkAction, string> = { cancel: 'cancelled', replay: 'replayed', delete: 'deleted from the archive' };

export function renderBulk(r: BulkResult): string {
  const what = r.action === 'cancel' ? 'job(s)' : 'archived message(s)';
  const head = r.dryRun
    ? `dry run: ${r.action} would act on ${r.matched}${r.capped ? '+' : ''} ${what} (nothing changed)`
    : `${PAST[r.action]} ${r.done} of ${r.matched}${r.capped ? '+' : ''} ${what} in ${Math.round((r.endedAt - r.startedAt) / 100) / 10} s`;
  const sample = r.sample.map(
    (s) => `  ${s.id}  ${s.task ?? ''}  ${s.queue ?? ''}  ${s.what ?? ''}${s.at !== undefined ? `  ${new Date(s.at).toISOString()}` : ''}`,
  );
  return [
    head,
    ...(r.dryRun && sample.length > 0 ? [`the first ${sample.length}:`, ...sample] : []),
    ...r.skipped.slice(0, 20).map((s) => `skipped ${s.id}: ${s.why}`),
    ...(r.skipped.length > 20 ? [`… ${r.skipped.length - 20} more skipped`] : []),
    ...(r.capped ? ['more match than --limit: run it again for the rest (what was done is no longer selected)'] : []),
  ].join('\n');
}
