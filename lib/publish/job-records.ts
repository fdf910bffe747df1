/** The job records a publish writes around its send, and the jobs a publisher remembers having sent. */
import { markedRecorded } from '../wire/recorded';
import { type Prepared, refOf } from './prepare';
import type { PublishContext } from './publish-context';

/** Jobs a publisher remembers having sent, to be named as dependencies before a dispatcher records them. */
const RECENT_JOBS = 10_000;

/**
 * Written after the send: a dispatcher that claims first makes the conditional put a no-op, and
 * a failed send leaves no orphan record. A failed write costs the record, never the job.
 *
 * A job published to run later (any delay, to a queue tracked `full`) always gets its `scheduled`
 * record here, `announced` with its due time: one write per delayed publish, so `jobs show`,
 * `jobs list --state scheduled` and `jobs cancel` see it before its message is delivered. An
 * immediate one gets its `queued` record only with `recordQueued`. Jobs that wait were recorded
 * before the send ({@link recordAhead}).
 */
export async function recordSent(
  ctx: PublishContext,
  prepared: readonly Prepared[],
  sent: readonly { index: number }[],
  now: number,
): Promise<void> {
  const byIndex = new Map(prepared.map((p) => [p.index, p]));
  const tracked = sent
    .map((s) => byIndex.get(s.index))
    // A debounced job is recorded when it runs: its payload is the last publish's, not known yet.
    .filter((p): p is Prepared => p !== undefined && p.queue.tracking === 'full' && p.dependsOn.length === 0 && !p.awaits && !p.debounce);
  const delayed = tracked.filter((p) => p.delayed);
  // A job that holds its key is recorded whether or not `recordQueued` is on: a publisher that
  // finds the key held reads the holder's record to tell a live job from one that never was.
  const immediate = tracked.filter((p) => !p.delayed && (ctx.jobs !== undefined || p.unique !== undefined));
  if (delayed.length === 0 && immediate.length === 0) return;
  const jobs = ctx.jobs !== undefined && delayed.length === 0 && immediate.every((p) => !p.unique) ? ctx.jobs : ctx.jobStore();
  const results = await Promise.allSettled(
    [...delayed, ...immediate].map(async (p) => {
      if (p.delayed) await jobs.recordScheduled({ ...refOf(p, ctx.version, now), runAt: p.runAt as number }, now);
      else await jobs.recordQueued(refOf(p, ctx.version, now), now);
      if (p.tags.length > 0) await jobs.tagJob(p.jobId, p.tags, now);
    }),
  );
  const failure = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failure && !ctx.warnedAboutTracking) {
    ctx.warnedAboutTracking = true;
    process.emitWarning(
      `taskworker: could not record published jobs (${String(failure.reason)}); the jobs were published`,
      'TaskworkerTrackingWarning',
    );
  }
}

/**
 * The jobs this publisher sent lately (a bounded window), so one published a moment ago can be named
 * as a dependency before any dispatcher has recorded it.
 */
export function remember(ctx: PublishContext, prepared: readonly Prepared[], sent: readonly { index: number }[], now: number): void {
  const byIndex = new Map(prepared.map((p) => [p.index, p]));
  for (const { index } of sent) {
    const p = byIndex.get(index);
    if (p?.queue.tracking !== 'full') continue;
    ctx.recent.delete(p.jobId);
    ctx.recent.set(p.jobId, refOf(p, ctx.version, now));
    if (ctx.recent.size > RECENT_JOBS) ctx.recent.delete(ctx.recent.keys().next().value as string);
  }
}

/**
 * Before anything is sent: a job that waits gets its `waiting` record, and a dependency published
 * in this batch its `queued` one, so a dependent published now or later finds it known at once,
 * whichever message a dispatcher takes first (the dispatcher completes the registration when the
 * message arrives). Unlike `recordQueued`, a failed write fails the publish.
 */
export async function recordAhead(ctx: PublishContext, prepared: readonly Prepared[], now: number): Promise<void> {
  const needed = prepared.filter((p) => p.dependsOn.length > 0 || p.awaits || prepared.some((q) => q.dependsOn.includes(p.jobId)));
  if (needed.length === 0) return;
  const jobs = ctx.jobStore();
  await Promise.all(
    needed.map(async (p) => {
      const job = refOf(p, ctx.version, now);
      if (p.tags.length > 0) await jobs.tagJob(p.jobId, p.tags, now);
      if (p.dependsOn.length === 0 && !p.awaits) {
        if (p.delayed) await jobs.recordScheduled({ ...job, runAt: p.runAt as number }, now);
        else await jobs.recordQueued(job, now);
        return;
      }
      const envelope = JSON.parse(p.entry.body) as { onDependencyFailure?: 'fail' | 'ignore'; tags?: string[] };
      await jobs.wait({
        ...job,
        body: p.entry.body,
        ...(p.entry.attributes ? { attributes: p.entry.attributes } : {}),
        dependsOn: p.dependsOn,
        ...(p.awaits ? { awaits: p.awaits } : {}),
        onDependencyFailure: envelope.onDependencyFailure ?? 'fail',
        ...(envelope.tags ? { tags: envelope.tags } : {}),
        workerId: 'publisher',
        now,
      });
    }),
  );
}

/**
 * The jobs to send, those that have their record by the time a dispatcher may take them marked so
 * (lib/wire/recorded.ts): a dependency of a job in this publish ({@link recordAhead}), and a job
 * {@link recordSent} records (delayed, holding a unique key, or every one with `recordQueued`).
 * Their claim then expects the record rather than first trying the write that creates one.
 */
export function markRecorded(ctx: PublishContext, prepared: readonly Prepared[]): Prepared[] {
  const dependencies = new Set(prepared.flatMap((p) => p.dependsOn));
  return prepared.map((p) => {
    const recorded =
      p.queue.tracking === 'full' &&
      (dependencies.has(p.jobId) || (!p.debounce && (p.delayed || p.unique !== undefined || ctx.jobs !== undefined)));
    return recorded ? { ...p, entry: { ...p.entry, attributes: markedRecorded(p.entry.attributes) } } : p;
  });
}
