import { randomBytes } from 'node:crypto';
import type { Clock } from '../clock';
import type { QueueConfig, TaskworkerConfig } from '../config/app-config';
import { describe } from '../errors';
import { MAX_BATCH_ENTRIES, MAX_VISIBILITY_SECONDS } from '../layout/sqs-limits';
import { heldSeconds } from '../policy/archive-fences';
import { attributeUsage, type UsagePort } from '../policy/cost-attribution';
import { expiresAt } from '../policy/job-rules';
import { isEmptyDelta, taskStatsKey } from '../policy/stat-sums';
import { MINUTE_RETENTION_SECONDS, minutesOfBatch } from '../policy/throughput';
import type { Logger, QueueClient, QueueUrls, ReceivedMessage, SendEntry, VisibilityEntry } from '../ports';
import { callWithEntryRetries } from '../retry-entries';
import type { TaskRegistry } from '../tasks/task';
import type { ArchiveFence, ArchiveTake } from '../track/job-record';
import type { StatsStore } from '../track/stats-store';
import { type ArchiveRecord, archiveEntry } from '../wire/archive-record';
import type { SettleHold } from './hold';
import { type BatchReport, type JobReport, statsOfBatch } from './report';

/** What settling a batch touches: its queues (and the archive's), the clock and the log; no table. */
export interface SettlePorts {
  readonly queues: QueueClient;
  readonly urls: QueueUrls;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Counts, for a doorbell's batch, the requests its trigger makes (the account pays them too). */
  readonly usage?: Pick<UsagePort, 'addRequests'>;
}

/** What counting a settled batch in the stats touches: the stats table and nothing else. */
export interface StatsPorts {
  readonly config: TaskworkerConfig;
  readonly registry: TaskRegistry;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly tracking?: { readonly stats?: StatsStore };
  /** What the dispatcher's clients counted for this batch and outside batches, attributed to its tasks (lib/policy/cost-attribution.ts). */
  readonly usage?: Pick<UsagePort, 'take'>;
}

/**
 * The job-record write that must land before a message is settled. Resolves false when the
 * attempt's token no longer holds the job: then the message is left alone for the newer attempt.
 */
export type RecordWrite = () => Promise<boolean>;

/**
 * An archive's record write on a tracked queue, fenced so that one message is sent to the archive
 * once (lib/policy/archive-fences.ts). `take` writes the record with the fence open (or takes a
 * lapsed one over) the moment the archive is decided, before the send; `close` closes it once the
 * archive holds the message, before the message is deleted. `stale`: the attempt's token no longer
 * holds the job (a newer attempt ends it).
 *
 * Where a dispatcher can die, and what the next copy of the message finds:
 * - before the take lands: nothing written; the copy is decided afresh.
 * - between the take and the send: the fence open, the archive without the message, the message
 *   not deleted. Its copy comes back and finds the fence held (handed back until the lease ends,
 *   {@link BatchState.settleFences}), then lapsed: it takes the fence over and sends. Nothing lost.
 * - between the send and the close: the archive holds it, the fence open. The copy takes the lapsed
 *   fence over and sends again: the one point where a message is archived twice (both entries carry
 *   its message id), as when a live holder outlives its lease.
 * - between the close and the delete: the copy finds the fence closed (`sent`) and is only deleted.
 */
export interface FencedArchive {
  readonly take: () => Promise<ArchiveTake | 'stale'>;
  /** The archive holds the message: the fence closes (later copies are only deleted). */
  readonly close: () => Promise<boolean>;
  /** The send failed: the fence's lease ends now, so the message's next delivery takes it over at once. */
  readonly lapse: () => Promise<boolean>;
}

/** An archive's record write: a plain one (after its send), or a fenced one built on the fence its decision takes. */
export type ArchiveWrite = RecordWrite | { readonly fenced: (fence: ArchiveFence) => FencedArchive };

/**
 * What happens to one message, decided while its batch runs, carried out in the settle.
 * `requeue`: a fresh copy goes to the queue (after `delaySeconds`), then the message is deleted —
 * how a tracked job's message leaves before SQS's redrive would move it to the DLQ.
 */
export type Decision =
  | { readonly kind: 'leave'; readonly message: ReceivedMessage; readonly record?: never }
  | { readonly kind: 'delete'; readonly message: ReceivedMessage; readonly record?: RecordWrite }
  | { readonly kind: 'visibility'; readonly message: ReceivedMessage; readonly seconds: number; readonly record?: RecordWrite }
  | { readonly kind: 'requeue'; readonly message: ReceivedMessage; readonly copy: SendEntry; readonly record?: RecordWrite }
  /**
   * An event for several subscribers on this queue (or for jobs waiting for it): one job message each
   * is sent, `record` resumes the waiting jobs, then the event's message is deleted.
   */
  | { readonly kind: 'split'; readonly message: ReceivedMessage; readonly copies: readonly SendEntry[]; readonly record?: RecordWrite }
  /** With `fence` (tracked queues) the record is written as the fence is taken; with `record` (untracked ends) after the send. */
  | {
      readonly kind: 'archive';
      readonly message: ReceivedMessage;
      readonly archive: ArchiveRecord;
      readonly record?: RecordWrite;
      readonly fence?: FencedArchive;
      /**
       * How a copy whose fence another live dispatcher holds is handed back for `seconds`: by its
       * visibility, or near its redrive limit by a fresh copy (a job's fence keeps its id; without
       * this, a rejection's, which a fresh copy's new message id would lose, is handed back by its visibility).
       */
      readonly heldBack?: (seconds: number) => Decision;
    };

/** SendMessageBatch takes at most 10 entries. */
const SEND_BATCH_ENTRIES = MAX_BATCH_ENTRIES;

/** How a record write ended: landed, refused because a newer attempt holds the job, or failed. */
type RecordResult = 'written' | 'stale' | { readonly failed: unknown };

const writeRecord = (record: RecordWrite): Promise<RecordResult> =>
  record().then(
    (landed): RecordResult => (landed ? 'written' : 'stale'),
    (error: unknown): RecordResult => ({ failed: error }),
  );

/** How taking an archive's fence ended: its answer, or a failure (the jobs table did not answer). */
type FenceResult = ArchiveTake | 'stale' | { readonly failed: unknown };

const takeFence = (fence: FencedArchive): Promise<FenceResult> => fence.take().catch((error: unknown): FenceResult => ({ failed: error }));

/**
 * One batch's bookkeeping: what was decided for each message, and what makes a decision durable
 * before the batch settles. A decision's job record is written the moment it is decided (on a
 * tracked queue an archive's too, with its fence open, {@link FencedArchive}; an untracked end's
 * after its archive send, in the settle), so a task that ended is known to have ended even if the
 * process dies before its batch settles: its message coming back finds the job finished and does
 * not run the body again. And every decided message is held invisible until the settle
 * ({@link SettleHold}), so no other dispatcher receives it meanwhile — unless the batch began late
 * in its messages' visibility (a doorbell's cold start): then a copy may reach another dispatcher,
 * and the fence keeps it from the archive a second time.
 */
export class BatchState {
  readonly decisions: Decision[] = [];
  readonly reports = new Map<string, JobReport>();
  /** Kept results (JSON) of the batch's successes, by message id, for the hooks. */
  readonly results = new Map<string, string>();
  /** Record writes started when their outcome was decided, by message id. */
  private readonly written = new Map<string, Promise<RecordResult>>();
  /** Archive fences taken when their archive was decided, by message id. */
  private readonly fencing = new Map<string, Promise<FenceResult>>();
  /** Where a message's visibility stands when a heartbeat moved it. */
  private readonly visibleUntil = new Map<string, number>();

  /**
   * @param hold keeps decided messages invisible until the settle (none: they are left to their visibility)
   * @param receivedVisibleUntil when the batch's messages become visible again, as received
   * @param settledBy when the batch is settled at the latest (its invocation's deadline and settle
   *   margin): the end of the archive fences it takes, past which another dispatcher takes one over
   */
  constructor(
    private readonly hold?: SettleHold,
    private readonly receivedVisibleUntil = Number.POSITIVE_INFINITY,
    private readonly settledBy = receivedVisibleUntil,
  ) {}

  decide(decision: Decision, report: JobReport): void {
    const id = decision.message.messageId;
    this.decisions.push(decision);
    this.reports.set(id, report);
    if (decision.record && decision.kind !== 'archive') this.written.set(id, writeRecord(decision.record));
    // Taken at once, not in the settle: a copy of the message another dispatcher receives while this
    // batch runs finds the fence held (or the job ended) instead of archiving it, or running it, again.
    if (decision.kind === 'archive' && decision.fence) this.fencing.set(id, takeFence(decision.fence));
    // One left to come back is not kept invisible meanwhile: it was held from its receive.
    if (decision.kind === 'leave') this.hold?.letGo(id);
    else this.hold?.keep(decision.message, this.visibleUntil.get(id) ?? this.receivedVisibleUntil);
  }

  /** Keeps the batch's messages invisible, as received, while it works out what each is (see {@link SettleHold}). */
  holdReceived(messages: readonly ReceivedMessage[]): void {
    for (const message of messages) this.hold?.keep(message, this.receivedVisibleUntil);
  }

  /**
   * A message about to be claimed and run: the hold lets it go (the run's heartbeat keeps it from
   * its start). Returns where its visibility stands, epoch ms: as received unless the hold moved it.
   */
  handOver(messageId: string): number {
    const until = this.hold?.letGo(messageId) ?? this.visibleUntil.get(messageId) ?? this.receivedVisibleUntil;
    this.visibleUntil.set(messageId, until);
    return until;
  }

  /** A fence for one archive this batch decides: a holder no other decision shares, until the batch is settled. */
  archiveFence(workerId: string): ArchiveFence {
    return { holder: `${workerId} ${randomBytes(6).toString('base64url')}`, until: this.settledBy };
  }

  /**
   * Carries out what each fenced archive's take found, before anything is sent: `taken` stays an
   * archive (sent, then its fence closed, then deleted); `sent` — the archive holds the message
   * already — is only deleted (a duplicate); `held` — another live dispatcher sends it — is handed
   * back until its lease ends, to be decided again (a job's copy near its redrive limit by a fresh
   * copy, as any hand-back, so SQS does not move it to the DLQ; a rejection's never, as its fence is
   * its message id, which a fresh copy would not keep); `stale` is left to the newer attempt; a take
   * that failed is left to come back.
   */
  async settleFences(deps: Pick<SettlePorts, 'clock' | 'logger'>): Promise<void> {
    for (const [id, taking] of this.fencing) {
      const result = await taking;
      const index = this.decisions.findIndex((d) => d.message.messageId === id);
      const decision = this.decisions[index];
      if (!decision || (result !== 'stale' && 'outcome' in result && result.outcome === 'taken')) continue;
      const { message } = decision;
      if (result === 'stale') {
        this.decisions[index] = { kind: 'leave', message };
        this.mark(id, { outcome: 'stale' });
        deps.logger.warn('archive not sent: a newer attempt holds the job', { messageId: id });
      } else if ('failed' in result) {
        this.decisions[index] = { kind: 'leave', message };
        this.mark(id, { unsettled: true, unrecorded: true });
        deps.logger.error('archive fence not taken; the message is left to come back', { messageId: id, error: describe(result.failed) });
      } else if (result.outcome === 'sent') {
        this.decisions[index] = { kind: 'delete', message };
        this.mark(id, { outcome: 'duplicate' });
      } else if (result.outcome === 'held') {
        const seconds = heldSeconds(result.until, deps.clock.now(), MAX_VISIBILITY_SECONDS);
        const back: Decision =
          decision.kind === 'archive' && decision.heldBack ? decision.heldBack(seconds) : { kind: 'visibility', message, seconds };
        this.decisions[index] = back;
        this.mark(id, { outcome: 'deferred', ...(back.kind === 'requeue' ? { requeued: true } : {}) });
      }
    }
  }

  /** A heartbeat moved the message's visibility to `until`. */
  movedVisibility(messageId: string, until: number): void {
    this.visibleUntil.set(messageId, until);
  }

  /** The decision's record write: the one started when it was decided, or started now (an unfenced archive's, after its send). */
  recordOf(decision: Decision): Promise<RecordResult> | undefined {
    return this.written.get(decision.message.messageId) ?? (decision.record ? writeRecord(decision.record) : undefined);
  }

  /** Stops holding the batch's messages; returns an extension still under way, to wait for before settling. */
  release(): Promise<void> | undefined {
    return this.hold?.release();
  }

  mark(messageId: string, patch: Partial<JobReport>): void {
    const report = this.reports.get(messageId);
    if (report) this.reports.set(messageId, { ...report, ...patch });
  }
}

export interface SettleOptions {
  /**
   * The messages came from Lambda's SQS trigger, which deletes every message its invocation does
   * not report as a batch item failure: the settle leaves the deletes to it (one request a batch
   * fewer), and what it keeps is reported (lib/invocation/doorbell.ts).
   */
  readonly triggerDeletes?: boolean;
}

/**
 * Settles a batch, one call per outcome list, in an order that never loses a message: what each
 * archive's fence found first (only an archive whose fence this batch took is sent); archive
 * sends (and requeued copies, and a split event's jobs) next; then the job records (written when
 * each outcome was decided, an unfenced archive's now: a completion must land before its message
 * is deleted, so a crash in between leaves a duplicate the claim stops, never a lost or re-run
 * job) and the sent archives' fences closed; then one delete and one visibility change. A message
 * whose archive send failed is not deleted (its fence lapses for the next copy to take); one whose
 * completion was rejected (stale token) is left to the newer attempt; one whose record write
 * failed is left to come back.
 */
export async function settle(deps: SettlePorts, queue: QueueConfig, state: BatchState, options: SettleOptions = {}): Promise<number> {
  const url = deps.urls.queues[queue.name] as string;
  let retries = 0;
  const notSent = new Set<string>();
  // Entry ids are message ids, except a split event's copies: each is mapped to its event's message.
  const splitCopies = new Map(
    state.decisions.flatMap((d) => (d.kind === 'split' ? d.copies.map((c): [string, string] => [c.id, d.message.messageId]) : [])),
  );
  const messageOf = (entryId: string) => splitCopies.get(entryId) ?? entryId;
  // Fenced archives: only those whose fence this batch holds are sent.
  await state.settleFences(deps);
  const send = async (what: string, target: string, entries: readonly SendEntry[]) => {
    for (let i = 0; i < entries.length; i += SEND_BATCH_ENTRIES) {
      const sent = await callWithEntryRetries(
        entries.slice(i, i + SEND_BATCH_ENTRIES),
        (e) => deps.queues.sendBatch(target, e),
        deps.clock,
      );
      retries += sent.retries;
      for (const f of sent.failed) {
        notSent.add(messageOf(f.id));
        state.mark(messageOf(f.id), { unsettled: true });
      }
      logFailures(deps, what, queue, sent.failed);
    }
  };
  await send(
    'archive send',
    deps.urls.archive,
    state.decisions.flatMap((d) => (d.kind === 'archive' ? [archiveEntry(d.message.messageId, d.message.body, d.archive)] : [])),
  );
  // A fenced archive whose send failed stays (its message is not deleted), and its lease ends now:
  // the message's next delivery takes the fence over at once instead of waiting out this invocation.
  await Promise.all(
    state.decisions.flatMap((d) =>
      d.kind === 'archive' && d.fence && notSent.has(d.message.messageId) ? [lapseFence(deps, d.message.messageId, d.fence)] : [],
    ),
  );
  await send(
    'requeue send',
    url,
    state.decisions.flatMap((d) => (d.kind === 'requeue' ? [d.copy] : d.kind === 'split' ? d.copies : [])),
  );

  const proceeding = state.decisions.filter((d) => !notSent.has(d.message.messageId));
  const held = new Set<string>();
  await Promise.all(
    proceeding.map(async (d) => {
      // The archive holds it: its fence is closed before its message is deleted. A close that
      // failed leaves the fence to lapse: the message is deleted all the same (nothing is lost),
      // and only a copy still in another's hands could then send it again.
      if (d.kind === 'archive' && d.fence) await closeFence(deps, d.message.messageId, d.fence);
      const writing = state.recordOf(d);
      if (!writing) return;
      const result = await writing;
      if (result === 'written') return;
      held.add(d.message.messageId);
      if (result === 'stale') {
        state.mark(d.message.messageId, { outcome: 'stale' });
        deps.logger.warn('outcome rejected: a newer attempt holds the job', { messageId: d.message.messageId });
        return;
      }
      // Settling the message without its record would leave the job non-terminal for good (a
      // `running` record nothing ever ends). Left alone, the message comes back as after a crash
      // at this point: the claim takes the job over once its lease lapses and finishes it (the
      // task may run again; its fenced effects do not apply twice).
      state.mark(d.message.messageId, { unsettled: true, unrecorded: true });
      deps.logger.error('job record write failed; the message is left to come back', {
        messageId: d.message.messageId,
        error: describe(result.failed),
      });
    }),
  );
  const settling = proceeding.filter((d) => !held.has(d.message.messageId));
  // From here the settle's own deletes and visibility changes decide where each message stands.
  const extending = state.release();
  if (extending) await extending;

  const deletes = settling
    .filter((d) => d.kind === 'delete' || d.kind === 'archive' || d.kind === 'requeue' || d.kind === 'split')
    .map((d) => ({ id: d.message.messageId, receiptHandle: d.message.receiptHandle }));
  if (deletes.length > 0 && !options.triggerDeletes) {
    const deleted = await callWithEntryRetries(deletes, (e) => deps.queues.deleteBatch(url, e), deps.clock);
    retries += deleted.retries;
    for (const f of deleted.failed) state.mark(f.id, { unsettled: true });
    logFailures(deps, 'delete', queue, deleted.failed);
  }
  // A doorbell's batch was received by its SQS trigger, which deletes what is not reported kept: its
  // receive and its deletes (counted as batch deletes, ten to a request) are this batch's cost.
  if (options.triggerDeletes) deps.usage?.addRequests(1 + Math.ceil(deletes.length / MAX_BATCH_ENTRIES));
  const changes: VisibilityEntry[] = settling
    .filter((d): d is Extract<Decision, { kind: 'visibility' }> => d.kind === 'visibility')
    .map((d) => ({ id: d.message.messageId, receiptHandle: d.message.receiptHandle, visibilityTimeoutSeconds: d.seconds }));
  if (changes.length > 0) {
    const changed = await callWithEntryRetries(changes, (e) => deps.queues.changeVisibilityBatch(url, e), deps.clock);
    retries += changed.retries;
    for (const f of changed.failed) state.mark(f.id, { unsettled: true });
    logFailures(deps, 'visibility change', queue, changed.failed);
  }
  return retries;
}

/**
 * Adds a settled batch to the stats: its queue's day, and the day of each registered task in it
 * (`task:<name>`; a name a message made up is counted under its queue only). Coalesced by the
 * runtime's StatsBuffer into one `ADD` per key per flush. A failure costs accuracy of the stats, never a job.
 */
export async function recordStats(deps: StatsPorts, report: BatchReport): Promise<void> {
  const stats = deps.tracking?.stats;
  if (!stats) return;
  const now = deps.clock.now();
  const byTask = new Map<string, JobReport[]>();
  for (const job of report.jobs) {
    if (job.task === undefined || !deps.registry.has(job.task) || job.reason === 'malformed' || job.reason === 'unknown-task') continue;
    const jobs = byTask.get(job.task);
    if (jobs) jobs.push(job);
    else byTask.set(job.task, [job]);
  }
  // This batch's own usage and the shared rest since the last take, shared by its registered tasks
  // (no extra write: it rides on each task's day delta). A batch without one leaves it for the next.
  const costs =
    deps.usage && byTask.size > 0
      ? attributeUsage(
          deps.usage.take(),
          deps.config.dispatcher.memoryMb,
          [...byTask].flatMap(([task, jobs]) => jobs.map((j) => ({ task, runMs: j.runMs }))),
        )
      : undefined;
  const deltas = [
    statsOfBatch(report, now),
    ...[...byTask].map(([task, jobs]) => {
      const delta = statsOfBatch({ ...report, queue: taskStatsKey(task), jobs }, now);
      const cost = costs?.get(task);
      return cost ? { ...delta, cost } : delta;
    }),
  ].filter((d) => !isEmptyDelta(d));
  const until = expiresAt(now, deps.config.tracking.statsRetentionDays);
  // The queue's minutes (the overview's throughput), coalesced like the days by the StatsBuffer.
  const minutesUntil = Math.floor(now / 1000) + MINUTE_RETENTION_SECONDS;
  const minutes = stats.addMinute ? [...minutesOfBatch(report, now)] : [];
  await Promise.all([
    ...deltas.map((delta) =>
      stats.add(delta, until).catch((error: unknown) => {
        deps.logger.error('stats write failed', { key: delta.queue, error: describe(error) });
      }),
    ),
    ...minutes.map(([minute, counts]) =>
      (stats.addMinute?.(report.queue, minute, counts, minutesUntil) ?? Promise.resolve()).catch((error: unknown) => {
        deps.logger.error('stats minute write failed', { key: report.queue, minute, error: describe(error) });
      }),
    ),
  ]);
}

async function closeFence(deps: Pick<SettlePorts, 'logger'>, messageId: string, fence: FencedArchive): Promise<void> {
  const closed = await fence.close().catch((error: unknown) => {
    deps.logger.warn('archive fence not closed; it lapses by itself', { messageId, error: describe(error) });
    return true;
  });
  if (!closed) deps.logger.warn('archive fence taken over before it was closed: the message may be archived twice', { messageId });
}

async function lapseFence(deps: Pick<SettlePorts, 'logger'>, messageId: string, fence: FencedArchive): Promise<void> {
  await fence.lapse().catch((error: unknown) => {
    deps.logger.warn('archive fence not lapsed after a failed send; its next copy waits for its lease to end', {
      messageId,
      error: describe(error),
    });
  });
}

function logFailures(
  deps: Pick<SettlePorts, 'logger'>,
  what: string,
  queue: QueueConfig,
  failed: readonly { id: string; code: string; message: string }[],
): void {
  if (failed.length === 0) return;
  deps.logger.error(`${what} failed after retries; the messages will return when their visibility expires`, {
    queue: queue.name,
    failed: failed.map((f) => ({ messageId: f.id, code: f.code, message: f.message })),
  });
}
