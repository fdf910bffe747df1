/**
 * The order of an `ordered` task's keys: each key's jobs are numbered at publish (the key's counter,
 * one write per batch of a key) and run one at a time, lowest number first. The key's item says
 * which number may run (`next`); a job numbered above it is parked (`waiting-key`) in the key's line
 * — the tag index, tagged `~order <task> <key>` at its number — and sent when its turn comes.
 *
 * Whoever ends a job of the key (its completion, or a later copy's claim finding it ended) moves the
 * line: past every ended job (and a number no job has held for a grace: a publisher that died
 * between numbering and sending), then sends the job whose turn it is if it is parked. A move lost
 * to a crash is made by the next job of the key to arrive (the parked ones come back by their due
 * times), so the line never waits on a dead dispatcher for longer than that.
 */
import { taskNeedMs } from '../deadlines';
import { describe } from '../errors';
import { MAX_SCHEDULE_SECONDS } from '../policy/due-times';
import { orderItemKey } from '../policy/job-rules';
import type { OrderWindow, TaskRegistry } from '../tasks/task';
import type { JobRecord, JobState } from '../track/job-record';
import type { KeyOrder, LineEntry } from '../track/job-stores';
import { envelopeWithout } from '../wire/envelope';
import type { FlowDeps } from './dependents';
import { sendParked } from './parked-sends';

/** The tag of an ordered task's key's line (no publisher's tag has a space: TAG_PATTERN). */
export const orderTag = (task: string, key: string | undefined) => `~order ${task} ${key ?? ''}`;

/**
 * How long a key's `next` may have no job in its line before it is skipped: a publisher numbers
 * its jobs, sends them, then tags them, so a number with no tag this long after it was first found
 * missing belongs to a publish that died, or a job whose publisher died after sending it and that
 * still waits in its queue (it runs when it arrives, after the jobs numbered above it).
 */
export const GAP_GRACE_MS = 60_000;

/**
 * The latest a job `place` numbers after its key's turn waits parked should no move send it: a
 * gap's grace, or as many turns as stand before it (a turn: the most one job of the task holds its
 * key — its time limit, the kill grace and the settle margin), so a long line does not come back
 * through its queue again and again while it moves.
 */
export function turnDueAt(now: number, place: number, turnMs: number): number {
  return Math.min(now + Math.max(GAP_GRACE_MS, Math.min(place, 10_000) * turnMs), now + MAX_SCHEDULE_SECONDS * 1000);
}

/** The most one job of a task holds its key's turn: its time limit and kill grace, and the settle margin. */
export function turnMsOf(timeLimitSeconds: number, dispatcher: { readonly killGraceMs: number; readonly settleMarginMs: number }): number {
  return taskNeedMs(timeLimitSeconds, dispatcher.killGraceMs) + dispatcher.settleMarginMs;
}

/** Entries of the line read at a time: one query's page (the turn is at its front once the ended have left). */
const PAGE = 8;

/** The most numbers one move passes (ended jobs and gaps); the next job to end or arrive moves the rest. */
const MOST_MOVES = 100;

/** An ended job of the key lets the next one run (an archived one only under `onFailure: 'continue'`). */
export function letsNextRun(record: Pick<JobRecord, 'state'> | undefined, rule: OrderWindow): boolean {
  if (!record) return false;
  if (record.state === 'archived') return rule.onFailure === 'continue';
  return record.state === 'succeeded' || record.state === 'cancelled' || record.state === 'deduplicated';
}

/** The key item's name, for logs. */
const named = (task: string, key: string | undefined) => orderItemKey(task, key ?? '');

/**
 * Moves the key's line (see the module's comment) and resolves with its order after the move.
 * `ended`: the number of a job that has just ended for good (its completion), moved past without a
 * look at its record. Never throws: a move that fails is made by the next one.
 */
export async function moveOrder(
  deps: FlowDeps,
  task: string,
  key: string | undefined,
  rule: OrderWindow,
  ended?: number,
): Promise<KeyOrder | undefined> {
  const { jobs } = deps;
  const k = key ?? '';
  const tag = orderTag(task, key);
  try {
    let order = await jobs.keyOrder(task, k);
    if (ended !== undefined && ended === order.next && (await jobs.advanceOrder(task, k, ended, deps.clock.now())))
      order = { ...order, next: ended + 1 };
    let entries: LineEntry[] = [];
    for (let moves = 0; moves < MOST_MOVES; moves++) {
      if (!entries.some((e) => e.at >= order.next)) entries = await jobs.lineEntries(tag, PAGE);
      // Tags below the turn are left behind (a job that ended, a publisher's tag landing after its
      // job ended, a number's late job): they go, so the line's first page is its front.
      const behind = entries.filter((e) => e.at < order.next);
      if (behind.length > 0) await Promise.all(behind.map((e) => jobs.untagJob(e.jobId, [tag])));
      entries = entries.filter((e) => e.at >= order.next);
      const turn = entries.find((e) => e.at === order.next);
      const record = turn ? await jobs.get(turn.jobId) : undefined;
      const now = deps.clock.now();
      if (turn && !letsNextRun(record, rule)) {
        if (record?.state === 'waiting-key') await sendTurn(deps, record, order.next);
        return order;
      }
      if (!turn) {
        // Nothing numbered this yet, or the job whose number it is has no tag: after a grace, a gap.
        if (order.next > order.last) return order;
        const since = await jobs.noteGap(task, k, order.next, now);
        if (since === undefined || now - since < GAP_GRACE_MS) return order;
        deps.logger.warn('an ordered key skipped a number no job arrived with', { key: named(task, key), skipped: order.next });
      }
      if (!(await jobs.advanceOrder(task, k, order.next, now))) return await jobs.keyOrder(task, k);
      order = { ...order, next: order.next + 1, movedAt: now };
    }
    return order;
  } catch (error) {
    deps.logger.warn('an ordered key was not moved; its next job or arrival moves it', { key: named(task, key), error: describe(error) });
    return undefined;
  }
}

/** Sends the parked job whose turn it is: brought forward (one conditional write: of two movers, one sends it), then sent. */
async function sendTurn(deps: FlowDeps, record: JobRecord, at: number): Promise<void> {
  const parked = await deps.jobs.parkedJob(record.jobId);
  if (!parked) return;
  const now = deps.clock.now();
  const due = { ...parked, runAt: now, body: envelopeWithout(parked.body, 'runAt') };
  if (!(await deps.jobs.bringForward(parked, due.body, now, `its turn came (#${at} of its key)`))) return;
  await sendParked(deps, [due], now);
}

/** Where a job's end finds its task's `ordered` rule. */
export interface OrderedEndPorts extends FlowDeps {
  readonly registry?: Pick<TaskRegistry, 'get'>;
}

/**
 * A job that ended for good (`state`): when its task is ordered, its key's line moves past it and
 * the next job is sent if it waits parked. Also run for a later copy of an ended job (the
 * dispatcher that ended it may have died before it moved the line). Never throws.
 */
export async function moveAfterEnd(
  deps: OrderedEndPorts,
  job: { readonly task: string; readonly key?: string; readonly seq?: number },
  state: JobState,
): Promise<void> {
  const rule = deps.registry?.get(job.task)?.ordered;
  if (!rule || job.seq === undefined || !letsNextRun({ state }, rule)) return;
  await moveOrder(deps, job.task, job.key, rule, job.seq);
}
