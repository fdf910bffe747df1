import { parseArgs } from 'node:util';
import { resolveConfig, type TaskworkerConfig } from '../lib/config/app-config';
import type { ScheduleConfig, ScheduleOverlap } from '../lib/config/schedule-config';
import { operatorContext } from '../lib/operate/operator-context';
import { backfillSchedule } from '../lib/operate/schedule-backfill';
import { checkCrontabs, eventBridgeExpression, nextFireTimes } from '../lib/policy/cron-expressions';
import { loadConfigModule } from '../lib/tasks/build';
import { createRegistry } from '../lib/tasks/registry';
import { timeOption } from './bulk-command';
import { operatorTarget } from './operator';
import { loadTaskDefinitions } from './publish';
import { findConfigFile, integerOption, table, UsageError, useLocalEndpointsIfRunning } from './shared';

export const SCHEDULES_USAGE = `taskworker schedules [--next N] [--version V] [--config FILE] [--json]
  Lists the config's recurring tasks: what each publishes where, its expression locally (crontab)
  and in AWS (EventBridge Scheduler), its overlap and catch-up, and its next N fire times (default 3);
  with --version, what that version saw of each: its last tick, ticks skipped, missed, caught up.
taskworker schedules backfill NAME --from TIME --to TIME [--dry-run] [--version V] [--config FILE] [--json]
  Sends schedule NAME's ticks in [--from, --to) to its queue, as the jobs their real ticks are (a
  tick that ran does not run again); TIME is ISO-8601 with a zone, or 90m, 2h, 7d ago.`;

export interface ScheduleListing {
  readonly name: string;
  readonly task: string;
  readonly queue: string;
  readonly cron?: string;
  readonly rate?: string;
  readonly timezone: string;
  readonly eventBridge: string;
  /** As the dispatcher applies it: the schedule's own, else 'skip' on a `full` tracked queue, 'allow' on another. */
  readonly overlap: ScheduleOverlap;
  readonly catchUpSeconds: number;
  /** ISO-8601 UTC; empty for a rate (it counts from when the schedule starts: creation in AWS, start of `taskworker dev`). */
  readonly next: readonly string[];
  /** With `--version`: what that version's dispatchers saw of its ticks (none yet: zeros, no last tick). */
  readonly ticks?: {
    readonly lastTick?: string;
    readonly skipped: number;
    readonly missed: number;
    readonly caughtUp: number;
  };
}

export async function schedulesCommand(argv: string[]): Promise<void> {
  if (argv[0] === 'backfill') return backfillCommand(argv.slice(1));
  const { values } = parseArgs({
    args: argv,
    options: {
      config: { type: 'string' },
      json: { type: 'boolean', default: false },
      next: { type: 'string' },
      version: { type: 'string' },
    },
    strict: true,
  });
  const configFile = findConfigFile(values.config);
  const config = resolveConfig(await loadConfigModule(configFile));
  // The same checks as start and synth: tasks exist, payloads validate.
  const registry = createRegistry(await loadTaskDefinitions(configFile), config);
  checkCrontabs(config);
  const count = integerOption('--next', values.next, 3, 1, 100);
  const now = new Date();
  const ticks = values.version === undefined ? undefined : await versionTicks(config, values.version);
  const listings = config.schedules.map((s, i): ScheduleListing => {
    const queue = s.queue ?? registry.get(s.task)?.queue ?? '';
    const full = config.queues.find((q) => q.name === queue)?.tracking === 'full';
    return { ...listing(s, queue, full, now, count), ...(ticks ? { ticks: ticks[i] } : {}) };
  });
  if (values.json) {
    process.stdout.write(`${JSON.stringify(listings, null, 2)}\n`);
    return;
  }
  if (listings.length === 0) {
    process.stdout.write(`no schedules in ${configFile}\n`);
    return;
  }
  process.stdout.write(
    `${table(
      ['schedule', 'task', 'queue', 'when', 'AWS (EventBridge Scheduler)', 'overlap', 'catch-up', 'next (UTC)'],
      listings.map((l) => [
        l.name,
        l.task,
        l.queue,
        l.cron ? `${l.cron} ${l.timezone}` : `every ${l.rate}`,
        l.cron ? `${l.eventBridge} ${l.timezone}` : l.eventBridge,
        l.overlap,
        l.catchUpSeconds > 0 ? `${l.catchUpSeconds} s` : 'none',
        l.next.length > 0 ? l.next.join(', ') : 'counted from when it starts',
      ]),
    )}\n`,
  );
  if (!ticks) return;
  process.stdout.write(
    `\nin version ${values.version}:\n${table(
      ['schedule', 'last tick (UTC)', 'skipped (overlap)', 'missed', 'caught up'],
      listings.map((l) => [l.name, l.ticks?.lastTick ?? 'none yet', l.ticks?.skipped ?? 0, l.ticks?.missed ?? 0, l.ticks?.caughtUp ?? 0]),
    )}\n`,
  );
}

/** What version `version`'s dispatchers saw of each schedule's ticks (its jobs table), in config order. */
async function versionTicks(config: TaskworkerConfig, version: string): Promise<NonNullable<ScheduleListing['ticks']>[]> {
  useLocalEndpointsIfRunning();
  const ctx = await operatorContext({ config, version });
  return Promise.all(
    config.schedules.map(async (s) => {
      const t = await ctx.jobs.scheduleTicks(s.name);
      return {
        ...(t?.lastTick !== undefined ? { lastTick: new Date(t.lastTick).toISOString() } : {}),
        skipped: t?.skipped ?? 0,
        missed: t?.missed ?? 0,
        caughtUp: t?.caughtUp ?? 0,
      };
    }),
  );
}

function listing(s: ScheduleConfig, queue: string, full: boolean, now: Date, count: number): ScheduleListing {
  return {
    name: s.name,
    task: s.task,
    queue,
    ...(s.cron ? { cron: s.cron } : {}),
    ...(s.rate ? { rate: `${s.rate.value} ${s.rate.unit}${s.rate.value === 1 ? '' : 's'}` } : {}),
    timezone: s.timezone,
    eventBridge: eventBridgeExpression(s),
    overlap: s.overlap ?? (full ? 'skip' : 'allow'),
    catchUpSeconds: s.catchUpSeconds,
    next: s.cron ? nextFireTimes(s, now, count).map((d) => d.toISOString().replace('.000Z', 'Z')) : [],
  };
}

/** `taskworker schedules backfill NAME --from --to`: the dry run's or the run's count and sample. */
async function backfillCommand(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      from: { type: 'string' },
      to: { type: 'string' },
      'dry-run': { type: 'boolean', default: false },
      version: { type: 'string' },
      config: { type: 'string' },
      json: { type: 'boolean', default: false },
    },
    allowPositionals: true,
    strict: true,
  });
  const [name, ...extra] = positionals;
  if (!name || extra.length > 0 || values.from === undefined || values.to === undefined) {
    throw new UsageError('usage: taskworker schedules backfill NAME --from TIME --to TIME [--dry-run] [--version V] [--json]');
  }
  const target = await operatorTarget(values);
  const registry = createRegistry(await loadTaskDefinitions(target.configFile), target.config);
  checkCrontabs(target.config);
  const schedule = target.config.schedules.find((s) => s.name === name);
  const queue = schedule?.queue ?? (schedule ? registry.get(schedule.task)?.queue : undefined) ?? '';
  const ctx = await operatorContext({ config: target.config, version: target.version });
  const now = ctx.clock.now();
  const result = await backfillSchedule(ctx, {
    name,
    queue,
    from: timeOption('--from', values.from, now),
    to: timeOption('--to', values.to, now),
    dryRun: values['dry-run'] === true,
  });
  if (values.json) {
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    return;
  }
  const span = `${result.from} to ${result.to}`;
  const sample = result.sample.length > 0 ? ` (first: ${result.sample.join(', ')}${result.ticks > result.sample.length ? ', …' : ''})` : '';
  const head = result.dryRun
    ? `dry run: schedule ${result.schedule} has ${result.ticks} tick(s) from ${span}${sample}; nothing sent`
    : `sent ${result.sent} tick(s) of schedule ${result.schedule} from ${span} to queue ${result.queue}${sample}`;
  const recorded =
    result.recorded > 0 ? `\n${result.recorded} of them already have a job (they ran, were skipped or wait): they do not run again` : '';
  process.stdout.write(`${head}${recorded}\n`);
}
