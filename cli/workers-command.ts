import { parseArgs } from 'node:util';
import { operatorContext } from '../lib/operate/operator';
import { listWorkers, renderWorkers } from '../lib/operate/workers';
import { operatorTarget } from './operator';
import { UsageError } from './shared';

export const WORKERS_USAGE = `taskworker workers [--version V] [--json]
  The dispatcher invocations working now (Lambda: function and request id; taskworker dev: the
  container), since when, their deadline, their selector's weights, the jobs each holds (checked
  against the jobs table) and when each was last heard from; one not heard from for 45 s is shown
  VANISHED with the jobs it held and what became of them. Takes --config FILE.`;

/** Runs `taskworker workers`. */
export async function workersCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: { version: { type: 'string' }, config: { type: 'string' }, json: { type: 'boolean', default: false } },
    allowPositionals: true,
    strict: true,
  });
  if (positionals.length > 0)
    throw new UsageError(`workers: unexpected ${JSON.stringify(positionals[0])} (usage: taskworker workers [--json])`);
  const { config, version } = await operatorTarget(values);
  const ctx = await operatorContext({ config, version });
  if (!ctx.workers) throw new UsageError('workers: this version has no stats table to list workers from');
  const view = await listWorkers({ workers: ctx.workers, jobs: ctx.jobs, clock: ctx.clock });
  process.stdout.write(`${values.json ? JSON.stringify(view, null, 2) : renderWorkers(view)}\n`);
  return 0;
}
