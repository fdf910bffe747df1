/**
 * `taskworker workers` and the dashboard's workers page: the dispatcher invocations working now and
 * those that vanished, each with the jobs it holds — its last beat's pointers confirmed against the
 * jobs' records now (state, `leaseOwner`): a live worker lists the jobs it still holds, a vanished
 * one every job it held and what became of it.
 */
import type { Clock } from '../clock';
import type { JobReader } from '../track/job-stores';
import { jobFate, shownWorker, type WorkerItem, type WorkerRegistry, workerStatus } from '../track/worker-registry';
import type { WorkersView, WorkerView } from './answers';

export type { WorkersView, WorkerView } from './answers';

/** The registry's live and vanished workers and their jobs as the jobs table has them now. */
export async function listWorkers(ctx: {
  readonly workers: WorkerRegistry;
  readonly jobs: JobReader;
  readonly clock: Clock;
}): Promise<WorkersView> {
  const now = ctx.clock.now();
  const items = (await ctx.workers.list()).filter((w) => shownWorker(w, now));
  const ids = [...new Set(items.flatMap((w) => w.jobs))];
  const records = new Map((ids.length > 0 ? await ctx.jobs.getMany(ids) : []).map((r) => [r.jobId, r]));
  const views = items.map((w): WorkerView => view(w, now, (id) => records.get(id)));
  views.sort((a, b) => (a.status === b.status ? b.startedAt - a.startedAt : a.status === 'live' ? -1 : 1));
  return {
    now,
    live: views.filter((w) => w.status === 'live').length,
    vanished: views.filter((w) => w.status === 'vanished').length,
    workers: views,
  };
}

function view(w: WorkerItem, now: number, record: (id: string) => Parameters<typeof jobFate>[1]): WorkerView {
  const status = workerStatus(w, now) === 'live' ? 'live' : 'vanished';
  const fates = w.jobs.map((id) => jobFate(id, record(id), w.workerId));
  return {
    id: w.id,
    workerId: w.workerId,
    role: w.role,
    place: w.place,
    status,
    startedAt: w.startedAt,
    deadline: w.deadline,
    heardAt: w.heardAt,
    ...(w.weights ? { weights: w.weights, ...(w.weightsAt !== undefined ? { weightsAt: w.weightsAt } : {}) } : {}),
    ...(w.usage ? { usage: w.usage } : {}),
    jobs: status === 'live' ? fates.filter((f) => f.heldByWorker) : fates,
    moreJobs: Math.max(0, (w.held ?? w.jobs.length) - w.jobs.length),
  };
}

/**
 * What a worker's selector weighed, in one line (the text view and the dashboard say the same): the
 * shares of its last selection and how long ago it was; for a doorbell invocation, that it selects
 * no queue; undefined for one that has not selected yet (or whose selector tells no weights).
 */
export function workerWeights(w: Pick<WorkerView, 'role' | 'weights' | 'weightsAt'>, now: number): string | undefined {
  if (w.weights) {
    const when = w.weightsAt === undefined ? '' : ` (${ago(now - w.weightsAt)} ago)`;
    const shares = Object.entries(w.weights).map(([q, s]) => `${q} ${Math.round(s * 100)}%`);
    return `weights at its last selection${when}: ${shares.join(', ')}`;
  }
  return w.role === 'doorbell' ? "weights: none, it selects no queue (a doorbell runs the batch its queue's trigger gave it)" : undefined;
}

/** Its memory and CPU at its last beat, in one line (the text view and the dashboard say the same); undefined without them. */
export function workerUsage(w: Pick<WorkerView, 'usage'>): string | undefined {
  const u = w.usage;
  return u ? `memory ${u.rssMb} MB of ${u.limitMb} MB (rssLimitMb), CPU ${u.cpuPercent}% of a core since its previous beat` : undefined;
}

/** Seconds ago or ahead, for the text view. */
const ago = (ms: number) => `${Math.round(ms / 1000)} s`;

/** The text of `taskworker workers`. */
export function renderWorkers(view: WorkersView): string {
  if (view.workers.length === 0) return 'no dispatcher invocation is working now (none vanished in the last hour)';
  const lines = [`${view.live} working, ${view.vanished} vanished`];
  for (const w of view.workers) {
    const where = [
      w.place.function,
      w.place.requestId && `request ${w.place.requestId}`,
      w.place.container && `container ${w.place.container}`,
    ]
      .filter(Boolean)
      .join(', ');
    lines.push('');
    lines.push(`${w.status === 'live' ? 'working ' : 'VANISHED'} ${w.workerId} (${w.role}) ${where}`);
    lines.push(
      `  since ${new Date(w.startedAt).toISOString()}, deadline ${new Date(w.deadline).toISOString()}, last heard ${ago(view.now - w.heardAt)} ago`,
    );
    const weighs = workerWeights(w, view.now);
    if (weighs) lines.push(`  ${weighs}`);
    const usage = workerUsage(w);
    if (usage) lines.push(`  ${usage}`);
    if (w.jobs.length === 0 && w.moreJobs === 0) lines.push(w.status === 'live' ? '  holds no job' : '  held no job');
    for (const j of w.jobs) lines.push(`  ${j.jobId}${j.task ? ` ${j.task}` : ''}: ${j.fate}`);
    if (w.moreJobs > 0) lines.push(`  … and ${w.moreJobs} more job(s) (not carried by its beat)`);
  }
  return lines.join('\n');
}
