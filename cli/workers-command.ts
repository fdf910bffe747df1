import { listWorkers, renderWorkers } from '../lib/operate/worker-views';
import { viewTarget } from './operator';
import { UsageError } from './shared';

export const WORKERS_USAGE = `taskworker workers [--version V] [--json]
  The dispatcher invocations working now (Lambda: function and request id; taskworker dev: the
  container), since when, their deadline, their selector's weights at its last selection (a
  doorbell invocation selects none: it runs its trigger's batch), the jobs each holds (checked
  against the jobs table) and when each was last heard from; one not heard from for 45 s is shown
  VANISHED with the jobs it held and what became of them. Takes --config FILE.`;

/** Runs `taskworker workers`. */
export async function workersCommand(argv: string[]): Promise<number> {
  const { json, ctx } = await viewTarget('workers', argv);
  if (!ctx.workers) throw new UsageError('workers: this version has no stats table to list workers from');
  const view = await listWorkers({ workers: ctx.workers, jobs: ctx.jobs, clock: ctx.clock });
  process.stdout.write(`${json ? JSON.stringify(view, null, 2) : renderWorkers(view)}\n`);
  return 0;
}
