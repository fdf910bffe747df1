import { parseArgs } from 'node:util';
import { resolveConfig } from '../lib/config/app-config';
import type { ScheduleConfig } from '../lib/config/schedule-config';
import { checkCrontabs, eventBridgeExpression, nextFireTimes } from '../lib/policy/cron-expressions';
import { loadConfigModule } from '../lib/tasks/build';
import { createRegistry } from '../lib/tasks/registry';
import { loadTaskDefinitions } from './publish';
import { findConfigFile, integerOption, table } from './shared';

export const SCHEDULES_USAGE = `taskworker schedules [--next N] [--config FILE] [--json]
  Lists the config's recurring tasks: what each publishes where, its expression locally (crontab)
  and in AWS (EventBridge Scheduler), and its next N fire times (default 3).`;

export interface ScheduleListing {
  readonly name: string;
  readonly task: string;
  readonly queue: string;
  readonly cron?: string;
  readonly rate?: string;
  readonly timezone: string;
  readonly eventBridge: string;
  /** ISO-8601 UTC; empty for a rate (it counts from when the schedule starts: creation in AWS, start of `taskworker dev`). */
  readonly next: readonly string[];
}

export async function schedulesCommand(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: { config: { type: 'string' }, json: { type: 'boolean', default: false }, next: { type: 'string' } },
    strict: true,
  });
  const configFile = findConfigFile(values.config);
  const config = resolveConfig(await loadConfigModule(configFile));
  // The same checks as start and synth: tasks exist, payloads validate.
  const registry = createRegistry(await loadTaskDefinitions(configFile), config);
  checkCrontabs(config);
  const count = integerOption('--next', values.next, 3, 1, 100);
  const now = new Date();
  const listings = config.schedules.map((s): ScheduleListing => listing(s, registry.get(s.task)?.queue ?? '', now, count));
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
      ['schedule', 'task', 'queue', 'when', 'AWS (EventBridge Scheduler)', 'next (UTC)'],
      listings.map((l) => [
        l.name,
        l.task,
        l.queue,
        l.cron ? `${l.cron} ${l.timezone}` : `every ${l.rate}`,
        l.cron ? `${l.eventBridge} ${l.timezone}` : l.eventBridge,
        l.next.length > 0 ? l.next.join(', ') : 'counted from when it starts',
      ]),
    )}\n`,
  );
}

function listing(s: ScheduleConfig, taskQueue: string, now: Date, count: number): ScheduleListing {
  return {
    name: s.name,
    task: s.task,
    queue: s.queue ?? taskQueue,
    ...(s.cron ? { cron: s.cron } : {}),
    ...(s.rate ? { rate: `${s.rate.value} ${s.rate.unit}${s.rate.value === 1 ? '' : 's'}` } : {}),
    timezone: s.timezone,
    eventBridge: eventBridgeExpression(s),
    next: s.cron ? nextFireTimes(s, now, count).map((d) => d.toISOString().replace('.000Z', 'Z')) : [],
  };
}
