/**
 * Per-key concurrency (a task's `limits: { concurrency, per: 'key' }`): a job received while its key
 * has `concurrency` jobs running is parked in the jobs table (`waiting-key`), in its key's line, and
 * its message deleted — it is not received again and again while the key is full, so the queue's
 * other keys are served meanwhile. When a batch that held slots of the key gives them back, as many
 * jobs of the line are sent, oldest publish first. The line is the tag index: each parked job is
 * tagged `~line <task> <key>` at its publish time, and its tag goes as it leaves the line. A parked
 * job also has a due time, the latest it waits should no job of its key end first (a wake lost to
 * a crash, or to the index not showing it yet): the sweep sends it then, and over the limit it parks
 * again, at the front of its line. One job per key keeps watch in its queue ({@link parkInLine}), so
 * a line whose slots' holder died moves on within a turn.
 */
import type { QueueConfig } from '../config/app-config';
import type { Limits } from '../config/limit-config';
import { taskNeedMs } from '../deadlines';
import { describe } from '../errors';
import { bodyBytes } from '../layout/sqs-limits';
import { MAX_PARKED_BODY_BYTES, MAX_SCHEDULE_SECONDS } from '../policy/due-times';
import { isDue, isParked } from '../policy/job-rules';
import { conflictError, decideArchive } from '../settle/decisions';
import { sendParked } from '../settle/parked-sends';
import { ref } from '../settle/records';
import type { BatchState } from '../settle/settle';
import type { TaskDefinition } from '../tasks/task';
import type { LimitStore } from '../track/fleet-limits';
import type { JobRecord, JobState, ParkRequest } from '../track/job-record';
import type { JobStore } from '../track/job-stores';
import { envelopeWithout, pinEnvelope } from '../wire/envelope';
import type { DispatcherDeps, Planned } from './dispatcher-deps';

/** The tag of a task's key's line (no publisher's tag has a space: TAG_PATTERN). */
export const keyLineTag = (task: string, key: string | undefined) => `~line ${task} ${key ?? ''}`;

/** A line's watch comes back this long after its key's present holders' leases end, to find them lapsed. */
const WATCH_SLACK_MS = 1_000;

/** How many jobs past the ones it wakes a line's move looks at. */
const LOOK_PAST = 8;

/** States in which a job in the line may still park again: its tag stays (the next park finds it kept). */
const MAY_PARK_AGAIN: readonly JobState[] = ['waiting-key', 'queued'];

/** A per-key limit's line as the batch sees it: where its slots and count live, and the task. */
export interface KeyLine {
  /** The limit's item key (lib/track/fleet-limits.ts `keyLimitKey`). */
  readonly limitKey: string;
  readonly def: TaskDefinition;
  readonly key: string | undefined;
  readonly limits: Limits;
}

type LineDeps = Pick<DispatcherDeps, 'clock' | 'logger' | 'queues' | 'urls' | 'workerId' | 'config' | 'tracking'>;

/** A job over its key's concurrency that is not parked: handed back to its queue, to come back in `waitMs`. */
export interface HandedBack {
  readonly p: Planned;
  readonly waitMs?: number;
}

/**
 * Parks the batch's jobs that found their key full (all of one line), in message order; resolves
 * with the ones it did not park, for the caller to hand back as any limited job: the line's watch
 * (below), and those it could not park (a retrying job, a body too large, the table not
 * answering). The latest a parked job waits grows with its place in the line: `⌈place /
 * concurrency⌉` turns (a task's time limit and the settle margin).
 *
 * One job per key keeps watch, in its queue rather than parked: handed back until the key's
 * present holders must have ended (one turn), it comes back then, takes a slot if one is free and,
 * ending, moves the line. A holder whose process died releases nothing and wakes nobody — its
 * slots lapse — so without the watch its line would wait for its jobs' due times.
 */
export async function parkInLine(
  deps: LineDeps,
  queue: QueueConfig,
  line: KeyLine,
  over: readonly Planned[],
  state: BatchState,
): Promise<HandedBack[]> {
  const jobs = deps.tracking?.jobs;
  const limits = deps.tracking?.limits;
  const concurrency = line.limits.concurrency;
  if (!jobs || !limits || concurrency === undefined || queue.tracking !== 'full' || over.length === 0) return over.map((p) => ({ p }));
  const now = deps.clock.now();
  const turnMs = turnOf(deps, line);
  const watchMs = turnMs + WATCH_SLACK_MS;
  const watching = await limits.watchLine(line.limitKey, now, now + watchMs).catch(() => false);
  const [watch, ...rest] = over;
  const toPark = watching ? rest : over;
  const handedBack: HandedBack[] = watching && watch ? [{ p: watch, waitMs: watchMs }] : [];
  if (toPark.length === 0) return handedBack;
  let last: number;
  try {
    last = await limits.parked(line.limitKey, toPark.length);
  } catch (error) {
    deps.logger.error('a key line could not be joined; its jobs are handed back', { key: line.limitKey, error: describe(error) });
    return [...handedBack, ...toPark.map((p) => ({ p }))];
  }
  const unparked: Planned[] = [];
  const tag = keyLineTag(line.def.name, line.key);
  await Promise.all(
    toPark.map(async (p, i) => {
      const place = last - toPark.length + 1 + i;
      const runAt = Math.min(now + Math.ceil(Math.max(1, place) / concurrency) * turnMs, now + MAX_SCHEDULE_SECONDS * 1000);
      const at = { tag, place: p.job.publishedAt, runAt, body: pinEnvelope(p.message.body, p.job), as: { overKeyLimit: concurrency } };
      if ((await parkJobInLine(deps, queue, state, p, at)) === 'unparked') unparked.push(p);
    }),
  );
  if (unparked.length > 0) await limits.parked(line.limitKey, -unparked.length).catch(() => undefined);
  // No look at the key's room now: its free slots may be the ones the jobs already woken are on their
  // way to, and waking more would park them again. A batch of the key that ended between this batch's
  // reservation and its parks (its look at the line missed them) is made up for by the watch.
  return [...handedBack, ...toPark.filter((p) => unparked.includes(p)).map((p) => ({ p }))];
}

/**
 * Tags a job in its key's line at `place` and parks it there with its body (`waiting-key`, its message
 * deleted), the batch's decision for its message made; `unparked` when it is to be handed back
 * instead: a body larger than a DynamoDB item holds, the table not answering, or the copy a wake or
 * the sweep sent arriving before its sender marked it handed over (it comes back in a moment, to
 * park then, or run).
 */
export async function parkJobInLine(
  deps: Pick<DispatcherDeps, 'clock' | 'logger' | 'workerId' | 'tracking' | 'config' | 'queues' | 'urls'>,
  queue: QueueConfig,
  state: BatchState,
  p: Planned,
  at: {
    readonly tag: string;
    readonly place: number;
    readonly runAt: number;
    readonly body: string;
    readonly as: Pick<ParkRequest, 'overKeyLimit' | 'waitsForTurn'>;
  },
): Promise<'decided' | 'unparked'> {
  const jobs = deps.tracking?.jobs;
  // Larger than a DynamoDB item holds: it waits in its queue.
  if (!jobs || bodyBytes(at.body) > MAX_PARKED_BODY_BYTES) return 'unparked';
  const now = deps.clock.now();
  try {
    // The tag first: a park without its tag would wait for its due time, a tag without its park is passed over.
    await jobs.tagJob(p.job.id, [at.tag], at.place);
    const parked = await jobs.park({
      ...ref(deps, queue, p.job),
      runAt: at.runAt,
      body: at.body,
      ...(Object.keys(p.message.attributes).length > 0 ? { attributes: p.message.attributes } : {}),
      workerId: deps.workerId,
      now,
      ...at.as,
    });
    const report = { messageId: p.message.messageId, jobId: p.job.id, task: p.def.name, attempt: 0 };
    if (parked.outcome === 'parked') {
      // Not `limited`: a batch of parked jobs is no held head — the queue's next messages are other keys'.
      state.decide({ kind: 'delete', message: p.message }, { ...report, outcome: 'deferred', parked: 'key' });
    } else if (parked.outcome === 'conflict') {
      decideArchive(deps, queue, state, p.message, p.job, 'id-conflict', conflictError(p.job, parked.record));
    } else if (isParked(parked.record) && !isDue(parked.record, now)) {
      // Another copy of its message parked it: this one is not needed.
      state.decide({ kind: 'delete', message: p.message }, { ...report, outcome: 'duplicate' });
    } else return 'unparked';
    return 'decided';
  } catch (error) {
    deps.logger.error("a job could not be parked in its key's line; it is handed back", { jobId: p.job.id, error: describe(error) });
    return 'unparked';
  }
}

/**
 * Sends up to `free` jobs of the line, oldest publish first: each brought forward (one conditional
 * write: of two dispatchers waking one job, one does), its tag taken off, then sent by the sweep's
 * own path (a crash before the send leaves it parked and due, for the next sweep). Jobs found in
 * the line that have left it for good (running, ended) lose their tag. Never throws.
 */
export async function wakeLine(deps: LineDeps, line: KeyLine, free: number, counted: number): Promise<number> {
  const jobs = deps.tracking?.jobs;
  const limits = deps.tracking?.limits;
  if (!jobs || !limits || free <= 0) return 0;
  const tag = keyLineTag(line.def.name, line.key);
  let woken = 0;
  try {
    // More than it wakes: another dispatcher may be waking the first ones at the same time, and the
    // line's front may hold jobs on their way to their queue.
    const waiting = await jobs.oldestByTag(tag, free + LOOK_PAST);
    for (const record of waiting) {
      if (woken >= free) break;
      if (await wakeOne(deps, record, tag)) woken += 1;
    }
    if (woken > 0) await limits.parked(line.limitKey, -woken);
    // Nobody in the line: what the count says is drift (a job that left it another way); it starts again from 0.
    else if (waiting.length === 0 && counted > 0) await limits.clearParked(line.limitKey, counted);
  } catch (error) {
    deps.logger.warn('a key line was not moved; its jobs come back by their due time', { key: line.limitKey, error: describe(error) });
  }
  return woken;
}

async function wakeOne(deps: LineDeps, record: JobRecord, tag: string): Promise<boolean> {
  const jobs = deps.tracking?.jobs as JobStore;
  if (record.state !== 'waiting-key') {
    if (!MAY_PARK_AGAIN.includes(record.state)) await jobs.untagJob(record.jobId, [tag]);
    return false;
  }
  const parked = await jobs.parkedJob(record.jobId);
  const now = deps.clock.now();
  if (!parked) return false;
  const due = { ...parked, runAt: now, body: envelopeWithout(parked.body, 'runAt') };
  if (!(await jobs.bringForward(parked, due.body, now, 'its key had a free slot'))) return false;
  // Off the line before it is sent: once sent it may park again (tagged afresh), and that tag must stay.
  await jobs.untagJob(record.jobId, [tag]);
  await sendParked({ jobs, queues: deps.queues, urls: deps.urls, clock: deps.clock, logger: deps.logger }, [due], now);
  return true;
}

/** The longest a slot of the key is held from a reservation: its holder's task time and the settle margin. */
function turnOf(deps: Pick<LineDeps, 'config'>, line: KeyLine): number {
  return taskNeedMs(line.def.timeLimitSeconds, deps.config.dispatcher.killGraceMs) + deps.config.dispatcher.settleMarginMs;
}

/** Gives back a batch's slots of a key and moves the key's line by as many. Never throws. */
export async function releaseKeySlots(deps: LineDeps, store: LimitStore, line: KeyLine, holder: string, slots: number): Promise<void> {
  let counted = 0;
  try {
    counted = await store.release(line.limitKey, holder, deps.clock.now());
  } catch (error) {
    deps.logger.warn('limit slots not released; they come back when their lease ends', { key: line.limitKey, error: describe(error) });
    return;
  }
  // Looked at even when the count says the line is empty: the count is a hint, a query costs half a read unit.
  await wakeLine(deps, line, slots, counted);
}
