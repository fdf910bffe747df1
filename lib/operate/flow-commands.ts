/**
 * The operator's side of jobs that wait for other jobs: what a job waits for and what waits for it
 * (with their states), the flow a job belongs to, its tag's jobs page by page, and cancelling a
 * waiting job — alone, or with every job that waits for it — so that its dependents learn it.
 * Everything is read from the jobs table by id (BatchGetItem) or from its tag index, never by a scan,
 * and every walk stops at a bound: a fan-in of 100,000 members is counted from its first members, not listed.
 */

import type { QueueConfig } from '../config/app-config';
import { dependencyIds, edgesOf } from '../policy/dependency-rules';
import { cancelCannotStop } from '../policy/job-rules';
import { silentLogger } from '../ports';
import { type FlowDeps, propagate } from '../settle/dependents';
import type { CancelResult, JobRecord } from '../track/job-record';
import type { FlowStore, JobReader } from '../track/job-stores';
import { MAX_TAG_LENGTH, TAG_PATTERN } from '../wire/envelope';
import type { FlowCancelResult, FlowView, JobRelations, RelatedJob, RelatedJobs, RelatedState } from './answers';
import { BadCursorError } from './job-pages';
import type { OperatorContext } from './operator-context';

/** How many related jobs a view reads on one side (and a flow walk in all). */
export const RELATED_READ_LIMIT = 1_000;
/** How many related jobs a view names one by one; the rest are counted. */
export const RELATED_LISTED = 20;
/** The most jobs `cancel --flow` walks. */
export const FLOW_CANCEL_LIMIT = 10_000;

/** The ports propagation needs, from an operator context. */
export function flowDepsOf(ctx: Pick<OperatorContext, 'jobs' | 'queues' | 'urls' | 'clock'>): FlowDeps {
  return { jobs: ctx.jobs, queues: ctx.queues, urls: ctx.urls, clock: ctx.clock, logger: silentLogger };
}

const related = (id: string, record: JobRecord | undefined): RelatedJob =>
  record
    ? { jobId: id, state: record.state, ...(record.task ? { task: record.task } : {}), ...(record.reason ? { reason: record.reason } : {}) }
    : { jobId: id, state: 'unknown' };

function countStates(jobs: readonly { readonly state: RelatedState }[]): Partial<Record<RelatedState, number>> {
  const counts: Partial<Record<RelatedState, number>> = {};
  for (const j of jobs) counts[j.state] = (counts[j.state] ?? 0) + 1;
  return counts;
}

async function readRelated(jobs: JobReader, ids: readonly string[], readLimit: number, listed: number): Promise<RelatedJobs> {
  const wanted = ids.slice(0, readLimit);
  const records = new Map((await jobs.getMany(wanted)).map((r) => [r.jobId, r]));
  const read = wanted.map((id) => related(id, records.get(id)));
  return { total: ids.length, read: read.length, counts: countStates(read), jobs: read.slice(0, listed) };
}

/**
 * What `record` waits for (its `dependsOn`, or its fan-in's members) and what waits for it, with
 * their states: the first `listed` by name, the states of the first `readLimit` counted. Empty when
 * the job is in no flow.
 */
export async function jobRelations(
  jobs: FlowStore,
  record: JobRecord,
  options: { readonly readLimit?: number; readonly listed?: number } = {},
): Promise<JobRelations> {
  const readLimit = options.readLimit ?? RELATED_READ_LIMIT;
  const listed = options.listed ?? RELATED_LISTED;
  const upstream = dependencyIds(record);
  const downstream = [...new Set(edgesOf(record).map((e) => e.id))];
  const [dependencies, count, dependents] = await Promise.all([
    upstream.length > 0 ? readRelated(jobs, upstream, readLimit, listed) : undefined,
    upstream.length > 0 ? jobs.dependencyCount(record.jobId) : undefined,
    downstream.length > 0 ? readRelated(jobs, downstream, readLimit, listed) : undefined,
  ]);
  return {
    ...(dependencies && count
      ? {
          dependencies: {
            ...dependencies,
            complete: count.complete,
            ...(count.firstFailure !== undefined ? { firstFailure: count.firstFailure } : {}),
          },
        }
      : {}),
    ...(dependents ? { dependents } : {}),
  };
}

/** The ids a job is linked to: what it waits for and what waits for it. */
const neighbours = (record: JobRecord) => [...dependencyIds(record), ...edgesOf(record).map((e) => e.id)];

/**
 * The flow `jobId` belongs to: every job linked to it through dependencies, either way and
 * transitively (a diamond's other branch, a fan-in's other members), breadth first from the job,
 * read up to `limit` jobs. Undefined when the job has no record.
 */
export async function flowOf(jobs: FlowStore, jobId: string, limit = RELATED_READ_LIMIT): Promise<FlowView | undefined> {
  const root = await jobs.get(jobId);
  if (!root) return undefined;
  const found: Array<RelatedJob & { depth: number }> = [{ ...related(jobId, root), depth: 0 }];
  const read = new Map<string, JobRecord>([[jobId, root]]);
  const seen = new Set([jobId]);
  let frontier = [root];
  let complete = true;
  for (let depth = 1; frontier.length > 0; depth++) {
    const ids: string[] = [];
    for (const record of frontier) {
      for (const id of neighbours(record)) {
        if (seen.has(id)) continue;
        seen.add(id);
        ids.push(id);
      }
    }
    const room = limit - found.length;
    if (ids.length > room) complete = false;
    const wanted = ids.slice(0, Math.max(0, room));
    const records = new Map((await jobs.getMany(wanted)).map((r) => [r.jobId, r]));
    for (const id of wanted) found.push({ ...related(id, records.get(id)), depth });
    for (const [id, record] of records) read.set(id, record);
    frontier = wanted.map((id) => records.get(id)).filter((r): r is JobRecord => r !== undefined);
    if (found.length >= limit) {
      if (frontier.some((r) => neighbours(r).some((id) => !seen.has(id)))) complete = false;
      break;
    }
  }
  return { root: jobId, jobs: found, counts: countStates(found), complete, edges: flowEdges(read, new Set(found.map((j) => j.jobId))) };
}

/** The links among `shown` jobs, each once: from what a record waits for and from what waits for it. */
function flowEdges(records: ReadonlyMap<string, JobRecord>, shown: ReadonlySet<string>): Array<readonly [string, string]> {
  const edges = new Map<string, readonly [string, string]>();
  const add = (from: string, to: string) => {
    if (shown.has(from) && shown.has(to) && from !== to) edges.set(`${from}\u0000${to}`, [from, to]);
  };
  for (const [id, record] of records) {
    for (const dependency of dependencyIds(record)) add(dependency, id);
    for (const dependent of edgesOf(record)) add(id, dependent.id);
  }
  return [...edges.values()];
}

/**
 * Cancels a queued, retrying, parked or waiting job, and counts it, failed, into the jobs waiting for it: those that
 * `fail` with a dependency are archived `dependency-failed`, those that `ignore` it run once their
 * other dependencies end. Asked again for a job already cancelled, it counts it again (idempotent):
 * an earlier call interrupted after the cancel and before the count is finished this way. A running
 * job is asked to stop (`requested`): its dispatcher ends it `cancelled` and counts it the same way.
 */
export async function cancelJob(
  deps: FlowDeps,
  jobId: string,
  /** The version's queues: a queued or retrying job of one that is not tracked `full` cannot be stopped ({@link cancelCannotStop}). */
  queues: readonly Pick<QueueConfig, 'name' | 'tracking'>[],
): Promise<CancelResult> {
  if (queues.some((q) => q.tracking !== 'full')) {
    const record = await deps.jobs.get(jobId);
    if (record && cancelCannotStop(record, queues)) return { outcome: 'not-scheduled', record };
  }
  const result = await deps.jobs.cancel(jobId, deps.clock.now());
  if (result.outcome !== 'unknown' && result.record.state === 'cancelled') {
    await propagate(deps, jobId, true, edgesOf(result.record));
  }
  return result;
}

/**
 * Cancels `jobId` and every job that waits for it, transitively (walking each record's dependents):
 * each parked or waiting one is cancelled; the others (queued, running, ended) are reported as not
 * cancelled. All are cancelled before any is counted into its dependents, so no job of the flow is
 * archived or released on the way. A dependent not yet registered on its dependency (its message
 * not yet taken by a dispatcher) is not found; it learns of the cancel when it registers.
 */
export async function cancelFlow(
  deps: FlowDeps,
  jobId: string,
  queues: readonly Pick<QueueConfig, 'name' | 'tracking'>[],
  limit = FLOW_CANCEL_LIMIT,
): Promise<FlowCancelResult> {
  const root = await deps.jobs.get(jobId);
  if (!root) return { root: jobId, cancelled: [], notCancelled: [], unknown: true, complete: true };
  const records: JobRecord[] = [root];
  const seen = new Set([jobId]);
  let frontier = [root];
  let complete = true;
  while (frontier.length > 0) {
    const ids = frontier.flatMap((r) => edgesOf(r).map((e) => e.id)).filter((id) => !seen.has(id) && seen.add(id));
    const room = limit - records.length;
    if (ids.length > room) complete = false;
    frontier = await deps.jobs.getMany(ids.slice(0, Math.max(0, room)));
    records.push(...frontier);
  }
  const cancelled: JobRecord[] = [];
  const notCancelled: Array<{ jobId: string; state: JobRecord['state'] }> = [];
  for (const record of records) {
    // A running member is left to `jobs cancel ID`: a flow's cancel stops what has not started
    // (and can be stopped: not a queued member of a queue whose dispatchers do not claim).
    if (record.state === 'running' || cancelCannotStop(record, queues)) {
      notCancelled.push({ jobId: record.jobId, state: record.state });
      continue;
    }
    const result = await deps.jobs.cancel(record.jobId, deps.clock.now());
    if (result.outcome === 'cancelled') cancelled.push(result.record);
    else if (result.outcome === 'not-scheduled') notCancelled.push({ jobId: record.jobId, state: result.record.state });
  }
  for (const record of cancelled) await propagate(deps, record.jobId, true, edgesOf(record));
  return { root: jobId, cancelled: cancelled.map((r) => r.jobId), notCancelled, unknown: false, complete };
}

// ---------------------------------------------------------------- jobs by tag

/** A tag as the envelope allows it: what is wrong with it, or undefined. */
export function tagProblem(tag: string): string | undefined {
  return TAG_PATTERN.test(tag) ? undefined : `expected 1..${MAX_TAG_LENGTH} printable ASCII characters, no spaces`;
}

export interface TaggedPage {
  readonly jobs: readonly JobRecord[];
  /** Where the next (older) page starts; absent on the last page. */
  readonly next?: string;
}

/** What a tag page cursor carries: the oldest publish time shown, and the jobs shown with exactly that time. */
interface TagMark {
  readonly at: number;
  readonly ids: readonly string[];
}

function readTagCursor(cursor: string): TagMark {
  try {
    const mark = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as TagMark;
    if (Number.isFinite(mark.at) && Array.isArray(mark.ids) && mark.ids.every((id) => typeof id === 'string')) return mark;
  } catch {
    // reported below
  }
  throw new BadCursorError(cursor);
}

/**
 * One page of a tag's jobs, newest first, in every state, from the tag index (no scan). Jobs
 * published in the same millisecond (a batch) share their tag time: a page ends at a time and the
 * next starts at that same time minus the jobs already shown, so none is skipped or shown twice.
 */
export async function listTaggedPage(jobs: FlowStore, tag: string, limit: number, cursor?: string): Promise<TaggedPage> {
  const mark = cursor === undefined ? undefined : readTagCursor(cursor);
  const shown = new Set(mark?.ids ?? []);
  const found = await jobs.jobsByTag(tag, limit + shown.size + 1, mark ? mark.at + 1 : undefined);
  const fresh = found.filter((job) => !shown.has(job.jobId));
  const page = fresh.slice(0, limit);
  const last = page.at(-1);
  if (fresh.length <= limit || last?.publishedAt === undefined) return { jobs: page };
  const at = last.publishedAt;
  const sameTime = page.filter((job) => job.publishedAt === at).map((job) => job.jobId);
  const ids = at === mark?.at ? [...shown, ...sameTime] : sameTime;
  return { jobs: page, next: Buffer.from(JSON.stringify({ at, ids } satisfies TagMark)).toString('base64url') };
}
