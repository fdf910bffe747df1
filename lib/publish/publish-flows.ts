/** Flows as a publisher sends them: a chain's and a chord's items, and every dependency checked before a send. */
import { randomUUID } from 'node:crypto';
import { DependencyError, PublishOptionError } from '../errors';
import { closesCycle } from '../settle/dependents';
import { JOB_ID_PATTERN, MAX_AWAITS, memberId } from '../wire/envelope';
import { GENERATED_ID, type Prepared } from './prepare';
import type { PublishContext } from './publish-context';
import type { PublishItem } from './publish-options';

/** A chain's items: each step waits for the one before (its id generated where none is given). */
export function chainItems(steps: readonly PublishItem[]): PublishItem[] {
  let previous: string | undefined;
  return steps.map((step) => {
    const id = step.options?.id ?? randomUUID();
    const generated = step.options?.id === undefined ? { [GENERATED_ID]: true } : {};
    const dependsOn = [...(step.options?.dependsOn ?? []), ...(previous !== undefined ? [previous] : [])];
    previous = id;
    return { ...step, options: { ...step.options, id, ...generated, ...(dependsOn.length > 0 ? { dependsOn } : {}) } };
  });
}

/** A chord's items: the callback first, awaiting its members, then the members, named `<callback id>.<i>`. */
export function chordItems(members: readonly PublishItem[], callback: PublishItem): PublishItem[] {
  const id = callback.options?.id ?? randomUUID();
  if (typeof id !== 'string' || !JOB_ID_PATTERN.test(id) || id.length + 1 + String(Math.max(0, members.length - 1)).length > 128) {
    throw new PublishOptionError('id', id, `a job id short enough for its members' ids (${id}.<i>, at most 128 characters)`);
  }
  if (members.length > MAX_AWAITS) throw new PublishOptionError('members', members.length, `at most ${MAX_AWAITS} members`);
  const size = members.length;
  const head: PublishItem = { ...callback, options: { ...callback.options, id, ...(size > 0 ? { awaits: size } : {}) } };
  const items: PublishItem[] = members.map((m, index) => ({
    ...m,
    options: { ...m.options, id: memberId(id, index), memberOf: { id, size } },
  }));
  return [head, ...items];
}

/**
 * Every dependency must be a job this version knows: published earlier (it has a record) or
 * earlier in this batch; and no job of the batch may wait, through others, for itself.
 */
export async function checkDependencies(ctx: PublishContext, prepared: readonly Prepared[]): Promise<void> {
  const inBatch = new Map(prepared.map((p) => [p.jobId, p]));
  for (const p of prepared) {
    for (const dep of p.dependsOn) {
      const other = inBatch.get(dep);
      if (other && other.index > p.index)
        throw new DependencyError(dep, `it is published after ${JSON.stringify(p.jobId)} in this batch; publish dependencies first`);
    }
  }
  const outside = [...new Set(prepared.flatMap((p) => p.dependsOn).filter((d) => !inBatch.has(d)))];
  if (outside.length === 0) return;
  const jobs = ctx.jobStore();
  const records = new Map((await jobs.getMany(outside)).map((r) => [r.jobId, r]));
  for (const dep of outside) {
    const published = ctx.recent.get(dep);
    if (!records.has(dep) && published) {
      // Published by this publisher, not yet taken by a dispatcher: its `queued` record now makes it known.
      await jobs.recordQueued(published, published.publishedAt);
    }
    const queueName = records.get(dep)?.queue ?? published?.queue;
    if (queueName === undefined) throw new DependencyError(dep, 'no such job in this version (publish it first, to a queue tracked full)');
    const queue = ctx.config.queues.find((q) => q.name === queueName);
    if (queue && queue.tracking !== 'full')
      throw new DependencyError(dep, `its queue ${JSON.stringify(queue.name)} is tracked '${queue.tracking}', not 'full'`);
  }
  // Only a job whose id another could have named before it existed can close a cycle: one
  // published with an id its caller chose (a generated one is new to every record).
  for (const p of prepared.filter((x) => x.explicitId)) {
    const cycle = await closesCycle(
      ctx.jobStore(),
      p.jobId,
      p.dependsOn.filter((d) => !inBatch.has(d)),
    );
    if (cycle !== undefined)
      throw new DependencyError(cycle, `it waits, through its own dependencies, for ${JSON.stringify(p.jobId)} (a cycle)`);
  }
}
