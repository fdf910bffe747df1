import {
  type AttributeValue,
  BatchGetItemCommand,
  ConditionalCheckFailedException,
  type ConsumedCapacity,
  type DynamoDBClient,
  GetItemCommand,
  QueryCommand,
  ScanCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import type { SerializedError } from '../errors';
import { JOBS_BY_QUEUE_STATE_INDEX, JOBS_BY_TAG_INDEX, JOBS_DUE_INDEX } from '../layout/tables';
import type { TaskCost } from '../track/cost';
import { DUE_SLACK_MS, dueShardOf } from '../track/due';
import { COUNT_SHARD_SIZE, shardCount, shardSize } from '../track/flows';
import {
  type AddDependentResult,
  CANCELLATIONS_KEPT_MS,
  type CancelRequests,
  type CancelResult,
  type ClaimRequest,
  type ClaimResult,
  type Completed,
  type Completion,
  type DependencyCount,
  type DependentEdge,
  type DurationStats,
  type HistoryEntry,
  type JobIdentity,
  type JobQuery,
  type JobRecord,
  type JobRef,
  type JobState,
  type JobStore,
  MAX_FILED_REJECTIONS,
  type ParkedJob,
  type ParkRequest,
  type ParkResult,
  type ProgressWrite,
  type QueueDayStats,
  type Rejection,
  type ScheduleRequest,
  STAT_COUNTERS,
  type StatCounter,
  type StatsStore,
  type UnclaimedOutcome,
  type UnclaimedResult,
  type WaitRequest,
  type WaitResult,
} from '../track/model';
import {
  appendHistory,
  expiresAt,
  historyOf,
  INDEXED_STATES,
  indexKey,
  type JobStoreSettings,
  type JobWrite,
  type PriorState,
  permits,
  sameJob,
  TERMINAL_STATES,
  TRANSITIONS,
} from '../track/rules';
import type { MinuteCounts } from '../track/throughput';
import type { ArchiveReason } from '../wire/archive-reasons';
import {
  type CompletionSlot,
  claimExpression,
  claimedRecord,
  claimValues,
  completionExpression,
  PARKED_ONLY,
} from './dynamo-job-expressions';
import { Expression, fromItem } from './dynamo-values';

const isConditionFailure = (error: unknown): error is ConditionalCheckFailedException =>
  error instanceof ConditionalCheckFailedException || (error instanceof Error && error.name === 'ConditionalCheckFailedException');

/** Claims tried when the job changes between a failed condition and the read that classifies it. */
const CLAIM_TRIES = 3;

/** Write units consumed, summed from DynamoDB's own ConsumedCapacity answers. */
export interface CapacityMeter {
  writeUnits: number;
  readUnits: number;
}

/**
 * {@link JobStore} on a DynamoDB table (layout in lib/layout/tables.ts). Every write is one
 * conditional UpdateItem whose condition is the write's row of `TRANSITIONS` (the states it may
 * start from, and the job's identity where it must match); a failed condition returns the old
 * item, so classifying a duplicate or a conflict costs no extra read. A write that appends to a
 * history past `historyLimit` is followed by one that trims it (jobs with that many transitions only).
 */
export class DynamoJobStore implements JobStore {
  /** Its client (the dispatcher meters it: lib/adapters/usage-meter.ts). */
  readonly capacity: CapacityMeter = { writeUnits: 0, readUnits: 0 };

  constructor(
    private readonly tableName: string,
    private readonly settings: JobStoreSettings,
    readonly dynamo: DynamoDBClient,
  ) {}

  private meter(out: { ConsumedCapacity?: ConsumedCapacity | undefined }, kind: 'write' | 'read'): void {
    const units = out.ConsumedCapacity?.CapacityUnits ?? 0;
    if (kind === 'write') this.capacity.writeUnits += units;
    else this.capacity.readUnits += units;
  }

  async recordQueued(job: JobRef, now: number): Promise<boolean> {
    const e = new Expression();
    const outcome = await this.write(job.jobId, e, {
      update: `SET ${assignments(e, {
        ...refFields(job),
        state: 'queued',
        attempt: 0,
        updatedAt: now,
        history: [{ what: 'queued', when: now }],
        expiresAt: expiresAt(now, this.settings.retentionDays),
      })}`,
      condition: transitionCondition(e, 'queue'),
    });
    return outcome.landed;
  }

  async recordScheduled(job: ScheduleRequest, now: number): Promise<boolean> {
    const e = new Expression();
    const outcome = await this.write(job.jobId, e, {
      // No `dueShard`: the message is in SQS, so the sweep has nothing to send.
      update: `SET ${assignments(e, {
        ...refFields(job),
        state: 'scheduled',
        attempt: 0,
        runAt: job.runAt,
        announced: true,
        queueState: indexKey(job.queue, 'scheduled'),
        updatedAt: now,
        history: [{ what: 'scheduled', when: now, detail: `due ${new Date(job.runAt).toISOString()}` }],
        expiresAt: expiresAt(Math.max(now, job.runAt), this.settings.retentionDays),
      })}`,
      condition: transitionCondition(e, 'schedule'),
    });
    return outcome.landed;
  }

  async claim(r: ClaimRequest): Promise<ClaimResult> {
    for (let tries = 1; ; tries++) {
      const fresh = await this.tryClaim(r, 'started');
      if (fresh.outcome === 'changed') {
        // What failed the condition was gone by the time it was read: the job moved on (e.g. from
        // running to retrying) in between. Look again; past a few tries, treat it as held.
        if (tries < CLAIM_TRIES) continue;
        return { outcome: 'leased', record: fresh.record };
      }
      if (fresh.outcome !== 'leased' || (fresh.record.leaseUntil ?? 0) >= r.now) return fresh;
      // The holder's lease lapsed: take the job over (a second request, only on this rare path).
      const takeover = await this.tryClaim(r, 'took-over');
      if (takeover.outcome !== 'changed') return takeover;
      if (tries >= CLAIM_TRIES) return { outcome: 'leased', record: takeover.record };
    }
  }

  /**
   * One conditional claim. `changed`: the condition failed, but the item read afterwards (where the
   * service returned none with the failure) would have passed it: it changed in between.
   */
  private async tryClaim(r: ClaimRequest, what: 'started' | 'took-over'): Promise<ClaimResult | { outcome: 'changed'; record: JobRecord }> {
    const entry: HistoryEntry = { what, when: r.now, worker: r.workerId };
    const built = claimExpression(what, r);
    const values = claimValues(r, entry, r.now + DUE_SLACK_MS, expiresAt(r.now, this.settings.retentionDays));
    // The record as it was comes back (nothing, for a new job): the claim's own writes are known here.
    const outcome = await this.write(r.jobId, { params: () => built.template.params(values) }, built, { returns: 'old' });
    if (outcome.landed) {
      const record = await this.trimHistory(claimedRecord(outcome.old, r, entry));
      return { outcome: 'claimed', token: record.attempt, record: withClaimAttempt(record) };
    }
    const old = outcome.record;
    if (!old) throw new Error(`claim of ${r.jobId} failed its condition, but the job has no record`);
    if (permits('claim', old, r, r.now) === 'conflict') return { outcome: 'conflict', record: old };
    if (!outcome.atCheck && (permits('claim', old, r, r.now) === 'ok' || (what === 'took-over' && (old.leaseUntil ?? 0) < r.now))) {
      return { outcome: 'changed', record: old };
    }
    // The SDK retried this very claim after a lost answer, and its first try had landed: ours.
    if (isOwnClaim(old, r)) return { outcome: 'claimed', token: old.attempt, record: withClaimAttempt(old) };
    return old.state === 'running' ? { outcome: 'leased', record: old } : { outcome: 'finished', record: old };
  }

  async extendLease(jobId: string, token: number, leaseUntil: number, now: number, progress?: ProgressWrite): Promise<boolean> {
    const e = new Expression();
    const fields = { leaseUntil, updatedAt: now, ...(progress ? { progress: progress.json, progressAt: progress.at } : {}) };
    const outcome = await this.write(
      jobId,
      e,
      {
        update: `SET ${assignments(e, fields)}`,
        condition:
          `${transitionCondition(e, 'heartbeat')} AND ${e.name('attempt')} = ${e.value(token)} ` +
          `AND attribute_not_exists(${e.name('cancelRequestedAt')})`,
      },
      { returns: 'none' },
    );
    return outcome.landed;
  }

  async complete(c: Completion, claimed: JobRecord): Promise<Completed> {
    try {
      return await this.completeFenced(c, claimed);
    } catch (error) {
      // Failed after the SDK's retries, yet a try whose answer was lost (a timeout after DynamoDB
      // applied it) may have landed: the record says. Taken as unwritten, the message would come
      // back to a finished job, a duplicate, and its outcome would never be counted.
      const now = await this.get(c.jobId).catch(() => undefined);
      if (now && isOwnCompletion(now, c)) return { landed: true, dependents: now.dependents ?? [] };
      throw error;
    }
  }

  private async completeFenced(c: Completion, claimed: JobRecord): Promise<Completed> {
    let seen = claimed;
    for (let tries = 1; ; tries++) {
      const outcome = await this.completeOnce(c, seen);
      // A dependent added itself since the record was read: complete again, knowing it.
      const moved = outcome.record && outcome.record.state === 'running' && outcome.record.attempt === c.token;
      if (outcome.landed || !moved || tries >= COMPLETE_TRIES) {
        const landed = outcome.landed || (outcome.record !== undefined && isOwnCompletion(outcome.record, c));
        return { landed, dependents: landed ? (outcome.landed ? (seen.dependents ?? []) : (outcome.record?.dependents ?? [])) : [] };
      }
      seen = { ...(outcome.record as JobRecord), history: seen.history };
    }
  }

  /** One fenced completion, on condition the record's dependents are still those of `claimed`. */
  private async completeOnce(c: Completion, claimed: JobRecord) {
    const built = completionExpression(c, claimed);
    const values: Record<CompletionSlot, unknown> = {
      token: c.token,
      state: c.state,
      now: c.now,
      history: appendHistory(claimed.history, historyOf(c), this.settings.historyLimit),
      expiresAt: expiresAt(c.now, this.settings.retentionDays),
      reason: c.reason,
      error: c.error,
      result: c.result,
      resultBytes: c.resultBytes,
      resultRef: c.resultRef,
      queueState: indexKey(claimed.queue, c.state),
      dependents: claimed.dependents?.length ?? 0,
    };
    // The record written is known here (its history trimmed before the write): nothing to read back.
    return this.write(c.jobId, { params: () => built.template.params(values) }, built, { returns: 'none' });
  }

  async recordUnclaimed(o: UnclaimedOutcome): Promise<UnclaimedResult> {
    const write = o.state === 'succeeded' ? 'unclaimedSuccess' : 'unclaimedFailure';
    const e = new Expression();
    const history = e.name('history');
    const entry: HistoryEntry = {
      what: o.state,
      when: o.now,
      worker: o.workerId,
      attempt: o.attempt,
      ...(o.reason ? { detail: o.reason } : {}),
    };
    const sets = [
      assignments(e, {
        state: o.state,
        attempt: o.attempt,
        task: o.task,
        payloadDigest: o.payloadDigest,
        queue: o.queue,
        version: o.version,
        updatedAt: o.now,
        lastError: o.error,
        reason: o.reason,
        finishedAt: o.state === 'retrying' ? undefined : o.now,
        queueState: indexKey(o.queue, o.state),
        expiresAt: expiresAt(o.now, this.settings.retentionDays),
      }),
      `${e.name('publishedAt')} = if_not_exists(${e.name('publishedAt')}, ${e.value(o.publishedAt)})`,
      `${history} = list_append(if_not_exists(${history}, ${e.value([])}), ${e.value([entry])})`,
    ];
    const outcome = await this.write(o.jobId, e, {
      update: `SET ${sets.join(', ')}${indexKey(o.queue, o.state) ? '' : ` REMOVE ${e.name('queueState')}`}`,
      condition: transitionCondition(e, write, o),
    });
    if (outcome.landed) return 'recorded';
    return outcome.record && permits(write, outcome.record, o) === 'conflict' ? 'conflict' : 'ignored';
  }

  async recordRejected(r: Rejection): Promise<boolean> {
    const e = new Expression();
    const outcome = await this.write(r.jobId, e, {
      update: `SET ${assignments(e, {
        ...refFields(r),
        state: 'archived',
        reason: r.reason,
        attempt: r.attempt,
        lastError: r.error,
        envelopeId: r.envelopeId,
        updatedAt: r.now,
        finishedAt: r.now,
        queueState: indexKey(r.queue, 'archived'),
        history: [{ what: 'archived', when: r.now, worker: r.workerId, attempt: r.attempt, detail: r.reason }],
        expiresAt: expiresAt(r.now, this.settings.retentionDays),
      })}`,
      condition: transitionCondition(e, 'reject'),
    });
    // Filed under the id it carried, landed or not: a redelivery after a crash between the two writes
    // files it then (adding to a set is idempotent). Readers keep only records that carried the id.
    if (r.envelopeId !== undefined) await this.fileRejection(r.envelopeId, r.jobId, r.now);
    return outcome.landed;
  }

  /**
   * Adds a rejected message's id to the item `<envelopeId> rejected` (a string set, one UpdateItem;
   * no job id has a space, so no job can take that key), up to {@link MAX_FILED_REJECTIONS} ids.
   */
  private async fileRejection(envelopeId: string, messageId: string, now: number): Promise<void> {
    const e = new Expression();
    const ids = e.name('messageIds');
    try {
      const out = await this.dynamo.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: { jobId: { S: rejectedKey(envelopeId) } },
          UpdateExpression: `ADD ${ids} ${e.stringSet([messageId])} SET ${e.name('expiresAt')} = ${e.value(expiresAt(now, this.settings.retentionDays))}`,
          ConditionExpression: `attribute_not_exists(${ids}) OR size(${ids}) < ${e.value(MAX_FILED_REJECTIONS)} OR contains(${ids}, ${e.value(messageId)})`,
          ReturnConsumedCapacity: 'TOTAL',
          ...e.params(),
        }),
      );
      this.meter(out, 'write');
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
    }
  }

  async rejectionsFor(envelopeId: string): Promise<JobRecord[]> {
    const item = await this.getItem(rejectedKey(envelopeId));
    const ids = (item ? (fromItem(item) as { messageIds?: string[] }).messageIds : undefined) ?? [];
    if (ids.length === 0) return [];
    return (await this.getMany(ids))
      .filter((r) => r.envelopeId === envelopeId && r.jobId !== envelopeId && r.state === 'archived')
      .sort((a, b) => b.updatedAt - a.updatedAt);
  }

  async recordDuplicate(jobId: string, identity: JobIdentity, workerId: string, now: number): Promise<void> {
    const e = new Expression();
    const history = e.name('history');
    const entry: HistoryEntry = { what: 'skipped-duplicate', when: now, worker: workerId };
    await this.write(jobId, e, {
      update: `SET ${history} = list_append(${history}, ${e.value([entry])})`,
      condition: transitionCondition(e, 'duplicate', identity),
    });
  }

  async resetForReplay(jobId: string, identity: JobIdentity, now: number): Promise<boolean> {
    const e = new Expression();
    const history = e.name('history');
    const entry: HistoryEntry = { what: 'queued', when: now, detail: 'replayed from the archive' };
    const outcome = await this.write(jobId, e, {
      update:
        `SET ${assignments(e, { state: 'queued', attempt: 0, updatedAt: now })}, ${history} = list_append(${history}, ${e.value([entry])}) ` +
        `REMOVE ${e.name('reason')}, ${e.name('finishedAt')}, ${e.name('queueState')}, ${e.name('releasedAt')}`,
      condition: transitionCondition(e, 'replay', identity),
    });
    return outcome.landed;
  }

  async park(r: ParkRequest): Promise<ParkResult> {
    const e = new Expression();
    const history = e.name('history');
    const entry: HistoryEntry = { what: 'scheduled', when: r.now, worker: r.workerId, detail: `due ${new Date(r.runAt).toISOString()}` };
    const outcome = await this.write(r.jobId, e, {
      update: `SET ${assignments(e, {
        ...refFields(r),
        state: 'scheduled',
        attempt: 0,
        runAt: r.runAt,
        body: r.body,
        attributes: r.attributes && Object.keys(r.attributes).length > 0 ? r.attributes : undefined,
        dueShard: dueShardOf(r.jobId),
        queueState: indexKey(r.queue, 'scheduled'),
        updatedAt: r.now,
        // A parked record outlives its due time by the usual retention.
        expiresAt: expiresAt(Math.max(r.now, r.runAt), this.settings.retentionDays),
      })}, ${history} = list_append(if_not_exists(${history}, ${e.value([])}), ${e.value([entry])}) REMOVE ${e.name('announced')}`,
      condition: transitionCondition(e, 'park', r),
    });
    if (outcome.landed) return { outcome: 'parked' };
    const record = outcome.record;
    if (!record) throw new Error(`park of ${r.jobId} failed its condition, but the job has no record`);
    return { outcome: permits('park', record, r) === 'conflict' ? 'conflict' : 'exists', record };
  }

  async dueJobs(shard: string, until: number, now: number, limit: number): Promise<ParkedJob[]> {
    const found: ParkedJob[] = [];
    let start: Record<string, AttributeValue> | undefined;
    do {
      const e = new Expression();
      const lease = e.name('sweepLease');
      const out = await this.dynamo.send(
        new QueryCommand({
          TableName: this.tableName,
          IndexName: JOBS_DUE_INDEX,
          KeyConditionExpression: `${e.name('dueShard')} = ${e.value(shard)} AND ${e.name('runAt')} <= ${e.value(until)}`,
          FilterExpression: `attribute_not_exists(${lease}) OR ${lease} < ${e.value(now)}`,
          Limit: limit,
          ReturnConsumedCapacity: 'TOTAL',
          ...(start ? { ExclusiveStartKey: start } : {}),
          ...e.params(),
        }),
      );
      this.meter(out, 'read');
      for (const item of out.Items ?? []) {
        const raw = fromItem(item) as Record<string, unknown>;
        found.push({
          jobId: String(raw.jobId),
          queue: String(raw.queue),
          runAt: Number(raw.runAt),
          body: String(raw.body),
          ...(raw.attributes ? { attributes: raw.attributes as Record<string, string> } : {}),
        });
      }
      start = out.LastEvaluatedKey;
    } while (start && found.length < limit);
    return found.slice(0, limit);
  }

  async parkedJob(jobId: string): Promise<ParkedJob | undefined> {
    const item = await this.getItem(jobId);
    if (!item) return undefined;
    const raw = fromItem(item) as Record<string, unknown>;
    if (raw.state !== 'scheduled' || raw.announced === true || typeof raw.body !== 'string' || raw.dueShard === undefined) return undefined;
    return {
      jobId,
      queue: String(raw.queue),
      runAt: Number(raw.runAt),
      body: raw.body,
      ...(raw.attributes ? { attributes: raw.attributes as Record<string, string> } : {}),
    };
  }

  async bringForward(parked: ParkedJob, body: string, now: number): Promise<boolean> {
    const e = new Expression();
    const history = e.name('history');
    const lease = e.name('sweepLease');
    const entry: HistoryEntry = { what: 'scheduled', when: now, detail: `run now (was due ${new Date(parked.runAt).toISOString()})` };
    const outcome = await this.write(parked.jobId, e, {
      update: `SET ${assignments(e, { runAt: now, body, updatedAt: now })}, ${history} = list_append(${history}, ${e.value([entry])})`,
      condition:
        `${transitionCondition(e, 'bringForward')} AND attribute_exists(${e.name('dueShard')}) AND ${e.name('runAt')} = ${e.value(parked.runAt)}` +
        ` AND (attribute_not_exists(${lease}) OR ${lease} < ${e.value(now)})`,
    });
    return outcome.landed;
  }

  async leaseForSweep(jobId: string, now: number, leaseUntil: number): Promise<boolean> {
    const e = new Expression();
    const lease = e.name('sweepLease');
    try {
      const out = await this.dynamo.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: { jobId: { S: jobId } },
          UpdateExpression: `SET ${lease} = ${e.value(leaseUntil)}`,
          ConditionExpression: `${transitionCondition(e, 'sweep')} AND (attribute_not_exists(${lease}) OR ${lease} < ${e.value(now)})`,
          ReturnConsumedCapacity: 'TOTAL',
          ...e.params(),
        }),
      );
      this.meter(out, 'write');
      return true;
    } catch (error) {
      if (isConditionFailure(error)) return false;
      throw error;
    }
  }

  async handOver(jobId: string, leaseUntil: number, now: number): Promise<boolean> {
    const e = new Expression();
    const history = e.name('history');
    const entry: HistoryEntry = { what: 'queued', when: now, detail: 'due: sent to its queue' };
    const outcome = await this.write(jobId, e, {
      update:
        `SET ${assignments(e, { state: 'queued', updatedAt: now })}, ${history} = list_append(${history}, ${e.value([entry])}) ` +
        `REMOVE ${[...PARKED_ONLY, 'queueState'].map((n) => e.name(n)).join(', ')}`,
      condition: `${transitionCondition(e, 'handOver')} AND ${e.name('sweepLease')} = ${e.value(leaseUntil)}`,
    });
    return outcome.landed;
  }

  async cancel(jobId: string, now: number): Promise<CancelResult> {
    for (;;) {
      const record = await this.get(jobId);
      if (!record) return { outcome: 'unknown' };
      if (permits('requestCancel', record) === 'ok') {
        const asked = await this.requestCancel(record, now);
        if (asked) return { outcome: 'requested', record: asked };
        continue;
      }
      if (permits('cancel', record) !== 'ok') return { outcome: 'not-scheduled', record };
      const e = new Expression();
      const history = e.name('history');
      const entry: HistoryEntry = { what: 'cancelled', when: now };
      const outcome = await this.write(jobId, e, {
        update:
          `SET ${assignments(e, { state: 'cancelled', updatedAt: now, finishedAt: now, queueState: indexKey(record.queue, 'cancelled') })}, ` +
          `${history} = list_append(${history}, ${e.value([entry])}) REMOVE ${PARKED_ONLY.map((n) => e.name(n)).join(', ')}`,
        condition: transitionCondition(e, 'cancel'),
      });
      if (outcome.landed) return { outcome: 'cancelled', record: outcome.record as JobRecord };
      // It moved on between the read and the write (a sweep handed it over): read what it is now.
    }
  }

  /**
   * Asks a running job to stop: the request on its record (kept as first asked), then in the
   * cancellations item. Undefined when the job moved on between the read and the write.
   */
  private async requestCancel(record: JobRecord, now: number): Promise<JobRecord | undefined> {
    let asked = record;
    if (record.cancelRequestedAt === undefined) {
      const e = new Expression();
      const history = e.name('history');
      const entry: HistoryEntry = { what: 'cancel-requested', when: now };
      const outcome = await this.write(record.jobId, e, {
        update:
          `SET ${assignments(e, { cancelRequestedAt: now, updatedAt: now })}, ` +
          `${history} = list_append(${history}, ${e.value([entry])})`,
        condition: transitionCondition(e, 'requestCancel'),
      });
      if (!outcome.landed) return undefined;
      asked = outcome.record as JobRecord;
    }
    await this.addCancellation(record.jobId, asked.cancelRequestedAt ?? now, now);
    return asked;
  }

  /** Adds a request to the cancellations item, pruning old ones; a write that raced another is made again. */
  private async addCancellation(jobId: string, requestedAt: number, now: number): Promise<void> {
    for (;;) {
      const seen = await this.readCancellations(true);
      const requests: Record<string, AttributeValue> = { [jobId]: { N: String(requestedAt) } };
      for (const [id, at] of Object.entries(seen.requests))
        if (at > now - CANCELLATIONS_KEPT_MS && id !== jobId) requests[id] = { N: String(at) };
      try {
        // UpdateItem, not PutItem: the publisher's cancel grant (GetItem, UpdateItem) covers it.
        const out = await this.dynamo.send(
          new UpdateItemCommand({
            TableName: this.tableName,
            Key: { jobId: { S: CANCELLATIONS_KEY } },
            UpdateExpression: 'SET v = :next, requests = :requests, expiresAt = :expires',
            ConditionExpression: seen.version === 0 ? 'attribute_not_exists(v)' : 'v = :v',
            ExpressionAttributeValues: {
              ':next': { N: String(seen.version + 1) },
              ':requests': { M: requests },
              ':expires': { N: String(expiresAt(now, 1)) },
              ...(seen.version === 0 ? {} : { ':v': { N: String(seen.version) } }),
            },
            ReturnConsumedCapacity: 'TOTAL',
          }),
        );
        this.meter(out, 'write');
        return;
      } catch (error) {
        if (!isConditionFailure(error)) throw error;
      }
    }
  }

  async cancellations(): Promise<CancelRequests> {
    return this.readCancellations(false);
  }

  private async readCancellations(consistent: boolean): Promise<CancelRequests> {
    const item = await this.getItem(CANCELLATIONS_KEY, consistent);
    const requests: Record<string, number> = {};
    for (const [id, at] of Object.entries(item?.requests?.M ?? {})) requests[id] = Number(at.N);
    return { version: Number(item?.v?.N ?? 0), requests };
  }

  async wait(r: WaitRequest): Promise<WaitResult> {
    const e = new Expression();
    const outcome = await this.write(
      r.jobId,
      e,
      {
        update: `SET ${assignments(e, {
          ...refFields(r),
          state: 'waiting',
          attempt: 0,
          body: r.body,
          attributes: r.attributes && Object.keys(r.attributes).length > 0 ? r.attributes : undefined,
          dependsOn: r.dependsOn && r.dependsOn.length > 0 ? r.dependsOn : undefined,
          awaits: r.awaits,
          onDependencyFailure: r.onDependencyFailure,
          tags: r.tags && r.tags.length > 0 ? r.tags : undefined,
          queueState: indexKey(r.queue, 'waiting'),
          updatedAt: r.now,
          expiresAt: expiresAt(r.now, this.settings.retentionDays),
        })}, ${e.name('history')} = list_append(if_not_exists(${e.name('history')}, ${e.value([])}), ${e.value([{ what: 'waiting', when: r.now, worker: r.workerId }])})`,
        condition: transitionCondition(e, 'wait', r),
      },
      { returns: 'none' },
    );
    if (outcome.landed) return { outcome: 'waiting' };
    const record = outcome.record;
    if (!record) throw new Error(`wait of ${r.jobId} failed its condition, but the job has no record`);
    return { outcome: sameJob(record, r) ? 'exists' : 'conflict', record };
  }

  async addDependent(dependencyId: string, edge: DependentEdge, _now: number): Promise<AddDependentResult> {
    // The edge goes on any record, ended or not, and the state comes back from the same write: a
    // dependency that ends after it finds the edge in its own completion's answer and counts it; one
    // that ended before is counted by the caller. No read after a failed condition (DynamoDB returns
    // no item for an absent one, and a read could see a record created since). `updatedAt` is left
    // as it is: an ended job's record keeps the time it ended.
    const e = new Expression();
    try {
      const out = await this.dynamo.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: { jobId: { S: dependencyId } },
          UpdateExpression: `ADD ${e.name('dependents')} ${e.stringSet([encodeEdge(edge)])}`,
          ConditionExpression: transitionCondition(e, 'addDependent'),
          ReturnValues: 'ALL_NEW',
          ReturnConsumedCapacity: 'TOTAL',
          ...e.params(),
        }),
      );
      this.meter(out, 'write');
      const record = toRecord(out.Attributes ?? {});
      return TERMINAL_STATES.includes(record.state) ? { outcome: 'ended', record } : { outcome: 'added' };
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
      return { outcome: 'unknown' };
    }
  }

  async countDependency(edge: DependentEdge, dependencyId: string, failed: boolean, now: number): Promise<DependencyCount> {
    const shard = Math.floor(edge.index / COUNT_SHARD_SIZE);
    const ttl = expiresAt(now, this.settings.retentionDays);
    const e = new Expression();
    const done = e.name('done');
    const fails = e.name('failed');
    const index = e.value(edge.index);
    const counted = await this.updateCountItem(shardKey(edge.id, shard), e, {
      update: `ADD ${failed ? fails : done} ${e.numberSet([edge.index])} SET ${e.name('expiresAt')} = ${e.value(ttl)}`,
      condition: `NOT contains(${done}, ${index}) AND NOT contains(${fails}, ${index})`,
    });
    const members = (list: unknown) => (Array.isArray(list) ? list.length : 0);
    const shardDone = members(counted.done) + members(counted.failed) >= shardSize(edge.size, shard);
    if (!failed && !shardDone) return { complete: false };
    const r = new Expression();
    const sets = [`${r.name('size')} = ${r.value(shardCount(edge.size))}`, `${r.name('expiresAt')} = ${r.value(ttl)}`];
    if (failed) sets.push(`${r.name('firstFailure')} = if_not_exists(${r.name('firstFailure')}, ${r.value(dependencyId)})`);
    const root = await this.updateCountItem(
      rootKey(edge.id),
      r,
      shardDone
        ? { update: `ADD ${r.name('shards')} ${r.numberSet([shard])} SET ${sets.join(', ')}` }
        : { update: `SET ${sets.join(', ')}` },
    );
    return countFrom(root);
  }

  async dependencyCount(dependentId: string): Promise<DependencyCount> {
    const item = await this.getItem(rootKey(dependentId));
    return item ? countFrom(fromItem(item)) : { complete: false };
  }

  /** Adds to a count item; a condition that fails (already counted) answers with the item as it is. */
  private async updateCountItem(
    key: string,
    e: Expression,
    expr: { update: string; condition?: string; returnOld?: boolean },
  ): Promise<Record<string, unknown>> {
    try {
      const out = await this.dynamo.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: { jobId: { S: key } },
          UpdateExpression: expr.update,
          ...(expr.condition ? { ConditionExpression: expr.condition } : {}),
          ReturnValues: expr.returnOld ? 'ALL_OLD' : 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          ReturnConsumedCapacity: 'TOTAL',
          ...e.params(),
        }),
      );
      this.meter(out, 'write');
      // `taken`: the update landed (a condition that failed answers with the item as it is, without it).
      return { ...fromItem(out.Attributes ?? {}), taken: true };
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
      if (error.Item) return fromItem(error.Item);
      const item = await this.getItem(key);
      return item ? fromItem(item) : {};
    }
  }

  async release(dependentId: string, now: number): Promise<ParkedJob | undefined> {
    const e = new Expression();
    const history = e.name('history');
    const entry: HistoryEntry = { what: 'released', when: now, detail: 'its dependencies ended' };
    try {
      const out = await this.dynamo.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: { jobId: { S: dependentId } },
          // Scheduled only for the moment until it is sent: not listed in the queue-state index.
          UpdateExpression:
            `SET ${assignments(e, { state: 'scheduled', runAt: now, releasedAt: now, dueShard: dueShardOf(dependentId), updatedAt: now })}, ` +
            `${history} = list_append(${history}, ${e.value([entry])}) REMOVE ${e.name('queueState')}`,
          ConditionExpression: transitionCondition(e, 'release'),
          ReturnValues: 'ALL_NEW',
          ReturnConsumedCapacity: 'TOTAL',
          ...e.params(),
        }),
      );
      this.meter(out, 'write');
      const raw = fromItem(out.Attributes ?? {});
      return {
        jobId: dependentId,
        queue: String(raw.queue),
        runAt: now,
        body: String(raw.body),
        ...(raw.attributes ? { attributes: raw.attributes as Record<string, string> } : {}),
      };
    } catch (error) {
      if (isConditionFailure(error)) return undefined;
      throw error;
    }
  }

  async failWaiting(dependentId: string, reason: ArchiveReason, detail: string, now: number): Promise<JobRecord | undefined> {
    for (;;) {
      const record = await this.get(dependentId);
      if (!record || permits('failWaiting', record) !== 'ok') return undefined;
      const e = new Expression();
      const history = e.name('history');
      const entry: HistoryEntry = { what: 'archived', when: now, detail: `${reason}: ${detail}` };
      const outcome = await this.write(dependentId, e, {
        update: `SET ${assignments(e, {
          state: 'archived',
          reason,
          lastError: { type: 'DependencyError', message: detail },
          updatedAt: now,
          finishedAt: now,
          queueState: indexKey(record.queue, 'archived'),
        })}, ${history} = list_append(${history}, ${e.value([entry])}) REMOVE ${e.name('dueShard')}, ${e.name('sweepLease')}`,
        condition: transitionCondition(e, 'failWaiting'),
      });
      if (outcome.landed) return outcome.record;
      if (outcome.record?.state !== 'waiting') return undefined;
    }
  }

  async tagJob(jobId: string, tags: readonly string[], taggedAt: number): Promise<void> {
    await Promise.all(
      tags.map(async (tag) => {
        const e = new Expression();
        const at = e.name('taggedAt');
        // The first tagging time stays: a later delivery of the job does not move it up the list.
        const out = await this.dynamo.send(
          new UpdateItemCommand({
            TableName: this.tableName,
            Key: { jobId: { S: `${jobId} tag ${tag}` } },
            UpdateExpression: `SET ${assignments(e, { tag, tagged: jobId, expiresAt: expiresAt(taggedAt, this.settings.retentionDays) })}, ${at} = if_not_exists(${at}, ${e.value(taggedAt)})`,
            ReturnConsumedCapacity: 'TOTAL',
            ...e.params(),
          }),
        );
        this.meter(out, 'write');
      }),
    );
  }

  async jobsByTag(tag: string, limit: number, before?: number): Promise<JobRecord[]> {
    const ids: string[] = [];
    let start: Record<string, AttributeValue> | undefined;
    do {
      const e = new Expression();
      const out = await this.dynamo.send(
        new QueryCommand({
          TableName: this.tableName,
          IndexName: JOBS_BY_TAG_INDEX,
          KeyConditionExpression: `${e.name('tag')} = ${e.value(tag)}${before !== undefined ? ` AND ${e.name('taggedAt')} < ${e.value(before)}` : ''}`,
          ScanIndexForward: false,
          Limit: limit,
          ReturnConsumedCapacity: 'TOTAL',
          ...(start ? { ExclusiveStartKey: start } : {}),
          ...e.params(),
        }),
      );
      this.meter(out, 'read');
      for (const item of out.Items ?? []) ids.push(String(fromItem(item).tagged));
      start = out.LastEvaluatedKey;
    } while (start && ids.length < limit);
    return this.getMany(ids.slice(0, limit));
  }

  async uncountFailure(edge: DependentEdge, dependencyId: string): Promise<{ readonly stillFailed: boolean }> {
    const shard = Math.floor(edge.index / COUNT_SHARD_SIZE);
    const members = (list: unknown) => (Array.isArray(list) ? list.length : 0);
    const e = new Expression();
    const failed = e.name('failed');
    // Only a failure counted is taken back (a second pass finds nothing to take).
    const before = await this.updateCountItem(shardKey(edge.id, shard), e, {
      update: `DELETE ${failed} ${e.numberSet([edge.index])}`,
      condition: `contains(${failed}, ${e.value(edge.index)})`,
      returnOld: true,
    });
    const wasComplete = before.taken === true && members(before.done) + members(before.failed) >= shardSize(edge.size, shard);
    if (wasComplete) {
      // The shard is one short again.
      const r = new Expression();
      await this.updateCountItem(rootKey(edge.id), r, { update: `DELETE ${r.name('shards')} ${r.numberSet([shard])}` });
    }
    // The first failure named is forgotten only if it was this one.
    const f = new Expression();
    const first = f.name('firstFailure');
    await this.updateCountItem(rootKey(edge.id), f, { update: `REMOVE ${first}`, condition: `${first} = ${f.value(dependencyId)}` });
    // Another failure still counted, in any shard of this dependent?
    const shards = await this.batchGet(Array.from({ length: shardCount(edge.size) }, (_, s) => shardKey(edge.id, s)));
    if (shards.some((item) => members(fromItem(item).failed) > 0)) return { stillFailed: true };
    return { stillFailed: false };
  }

  async reopen(dependentId: string, now: number): Promise<JobRecord | undefined> {
    const record = await this.get(dependentId);
    if (!record || permits('reopen', record) !== 'ok') return undefined;
    const e = new Expression();
    const history = e.name('history');
    const entry: HistoryEntry = { what: 'waiting', when: now, detail: 'a failed dependency was replayed' };
    const outcome = await this.write(dependentId, e, {
      update:
        `SET ${assignments(e, { state: 'waiting', updatedAt: now, queueState: indexKey(record.queue, 'waiting') })}, ` +
        `${history} = list_append(${history}, ${e.value([entry])}) REMOVE ${e.name('reason')}, ${e.name('finishedAt')}`,
      condition: transitionCondition(e, 'reopen'),
    });
    return outcome.landed ? outcome.record : undefined;
  }

  async getMany(jobIds: readonly string[]): Promise<JobRecord[]> {
    const found = new Map((await this.batchGet([...new Set(jobIds)])).map((item) => [item.jobId?.S, toRecord(item)]));
    return jobIds.map((id) => found.get(id)).filter((r): r is JobRecord => r !== undefined);
  }

  /** Items by key, 100 a BatchGetItem, strongly consistent; keys the service leaves unprocessed are asked again with backoff. */
  private async batchGet(keys: readonly string[]): Promise<Array<Record<string, AttributeValue>>> {
    const items: Array<Record<string, AttributeValue>> = [];
    for (let i = 0; i < keys.length; i += BATCH_GET) {
      let pending: Record<string, AttributeValue>[] = keys.slice(i, i + BATCH_GET).map((id) => ({ jobId: { S: id } }));
      for (let round = 0; pending.length > 0; round++) {
        if (round > 0) await new Promise((resolve) => setTimeout(resolve, Math.min(1_000, 25 * 2 ** round)));
        const out = await this.dynamo.send(
          new BatchGetItemCommand({
            RequestItems: { [this.tableName]: { Keys: pending, ConsistentRead: true } },
            ReturnConsumedCapacity: 'TOTAL',
          }),
        );
        for (const c of out.ConsumedCapacity ?? []) this.capacity.readUnits += c.CapacityUnits ?? 0;
        items.push(...(out.Responses?.[this.tableName] ?? []));
        pending = (out.UnprocessedKeys?.[this.tableName]?.Keys ?? []) as Record<string, AttributeValue>[];
      }
    }
    return items;
  }

  /**
   * One conditional UpdateItem. Landed: the item as written (its history trimmed to the limit), or
   * with `returns: 'old'` the item as it was before (none for a new one), or with `'none'` nothing.
   * Refused: the item as the condition found it, if there is one (`atCheck`), else as read after.
   */
  private async write(
    jobId: string,
    e: Pick<Expression, 'params'>,
    expr: { update: string; condition: string },
    { returns = 'new' }: { readonly returns?: 'new' | 'old' | 'none' } = {},
  ): Promise<{ landed: boolean; record: JobRecord | undefined; old?: JobRecord | undefined; atCheck?: boolean }> {
    try {
      const out = await this.dynamo.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: { jobId: { S: jobId } },
          UpdateExpression: expr.update,
          ConditionExpression: expr.condition,
          ReturnValues: returns === 'new' ? 'ALL_NEW' : returns === 'old' ? 'ALL_OLD' : 'NONE',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          ReturnConsumedCapacity: 'TOTAL',
          ...e.params(),
        }),
      );
      this.meter(out, 'write');
      if (returns === 'none') return { landed: true, record: undefined };
      if (returns === 'old') return { landed: true, record: undefined, old: out.Attributes ? toRecord(out.Attributes) : undefined };
      const record = toRecord(out.Attributes ?? {});
      return { landed: true, record: await this.trimHistory(record) };
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
      // DynamoDB returns the item as the condition saw it; a store that does not (dynalite) is read
      // afterwards, and what is read may already differ (`atCheck` false).
      if (error.Item) return { landed: false, record: toRecord(error.Item), atCheck: true };
      return { landed: false, record: await this.get(jobId), atCheck: false };
    }
  }

  /**
   * Keeps the newest `historyLimit` entries: removes the oldest ones from the head of the list, on
   * condition the list is still the length it was read at (an append racing in trims itself).
   */
  private async trimHistory(record: JobRecord): Promise<JobRecord> {
    const excess = record.history.length - this.settings.historyLimit;
    if (excess <= 0) return record;
    const e = new Expression();
    const history = e.name('history');
    try {
      const out = await this.dynamo.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: { jobId: { S: record.jobId } },
          UpdateExpression: `REMOVE ${Array.from({ length: excess }, (_, i) => `${history}[${i}]`).join(', ')}`,
          ConditionExpression: `size(${history}) = ${e.value(record.history.length)}`,
          ReturnConsumedCapacity: 'TOTAL',
          ...e.params(),
        }),
      );
      this.meter(out, 'write');
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
    }
    return { ...record, history: record.history.slice(excess) };
  }

  async get(jobId: string): Promise<JobRecord | undefined> {
    const item = await this.getItem(jobId);
    return item ? toRecord(item) : undefined;
  }

  /** One item of the jobs table by key, its read units metered (strongly consistent unless asked otherwise). */
  private async getItem(key: string, consistent = true): Promise<Record<string, AttributeValue> | undefined> {
    const out = await this.dynamo.send(
      new GetItemCommand({
        TableName: this.tableName,
        Key: { jobId: { S: key } },
        ConsistentRead: consistent,
        ReturnConsumedCapacity: 'TOTAL',
      }),
    );
    this.meter(out, 'read');
    return out.Item;
  }

  /**
   * Retrying and archived jobs come from the sparse per-queue index, newest first. Other states
   * are not indexed (so success costs no index write): they are found by a filtered Scan.
   */
  async list(q: JobQuery): Promise<JobRecord[]> {
    const found: JobRecord[] = [];
    if (INDEXED_STATES.includes(q.state)) {
      for (const queue of q.queues) {
        let start: Record<string, AttributeValue> | undefined;
        do {
          const e = new Expression();
          const out = await this.dynamo.send(
            new QueryCommand({
              TableName: this.tableName,
              IndexName: JOBS_BY_QUEUE_STATE_INDEX,
              KeyConditionExpression:
                `${e.name('queueState')} = ${e.value(indexKey(queue, q.state))}` +
                (q.updatedAtMost !== undefined ? ` AND ${e.name('updatedAt')} <= ${e.value(q.updatedAtMost)}` : ''),
              ...(q.task !== undefined ? { FilterExpression: `${e.name('task')} = ${e.value(q.task)}` } : {}),
              ScanIndexForward: false,
              ...(start ? { ExclusiveStartKey: start } : {}),
              ...e.params(),
            }),
          );
          found.push(...(out.Items ?? []).map(toRecord));
          start = out.LastEvaluatedKey;
        } while (start && found.length < q.limit * q.queues.length);
      }
    } else {
      let start: Record<string, AttributeValue> | undefined;
      do {
        const e = new Expression();
        const filters = [
          `${e.name('state')} = ${e.value(q.state)}`,
          `${e.name('queue')} IN (${q.queues.map((name) => e.value(name)).join(', ')})`,
        ];
        if (q.task !== undefined) filters.push(`${e.name('task')} = ${e.value(q.task)}`);
        if (q.updatedAtMost !== undefined) filters.push(`${e.name('updatedAt')} <= ${e.value(q.updatedAtMost)}`);
        const out = await this.dynamo.send(
          new ScanCommand({
            TableName: this.tableName,
            FilterExpression: filters.join(' AND '),
            ...(start ? { ExclusiveStartKey: start } : {}),
            ...e.params(),
          }),
        );
        found.push(...(out.Items ?? []).map(toRecord));
        start = out.LastEvaluatedKey;
      } while (start && found.length < q.limit);
    }
    return found.sort((a, b) => b.updatedAt - a.updatedAt).slice(0, q.limit);
  }
}

/** `#name = :value` for each defined field. */
function assignments(e: Expression, fields: Record<string, unknown>): string {
  return Object.entries(fields)
    .filter(([, value]) => value !== undefined)
    .map(([name, value]) => `${e.name(name)} = ${e.value(value)}`)
    .join(', ');
}

/** A job's reference fields as item attributes (the key, `jobId`, is the UpdateItem's own). */
function refFields(r: JobRef): Record<string, unknown> {
  return {
    task: r.task,
    payloadDigest: r.payloadDigest,
    queue: r.queue,
    version: r.version,
    publishedAt: r.publishedAt,
    tags: r.tags && r.tags.length > 0 ? r.tags : undefined,
    startBy: r.startBy,
  };
}

/**
 * The condition under which `write` may land: the states its row of `TRANSITIONS` allows it to
 * start from (no item at all, where `absent` is one), and the job's identity where the row asks.
 */
function transitionCondition(e: Expression, write: Exclude<JobWrite, 'claim' | 'takeOver' | 'complete'>, identity?: JobIdentity): string {
  const rule = TRANSITIONS[write];
  const states = (rule.from as readonly PriorState[]).filter((s) => s !== 'absent');
  const existing = [
    states.length > 0 ? `${e.name('state')} IN (${states.map((s) => e.value(s)).join(', ')})` : undefined,
    rule.sameJob && identity
      ? `${e.name('task')} = ${e.value(identity.task)} AND ${e.name('payloadDigest')} = ${e.value(identity.payloadDigest)}`
      : undefined,
  ]
    .filter((c) => c !== undefined)
    .join(' AND ');
  const absent = (rule.from as readonly PriorState[]).includes('absent') ? `attribute_not_exists(${e.name('jobId')})` : undefined;
  // (The claim, every job's hot path, has its own expression: lib/adapters/dynamo-job-expressions.ts.)
  const due =
    write === 'park'
      ? // Over the publisher's announced record, never over a parked one.
        ` AND (${e.name('state')} <> ${e.value('scheduled')} OR attribute_exists(${e.name('announced')}))`
      : write === 'sweep' || write === 'bringForward'
        ? ` AND attribute_not_exists(${e.name('announced')})`
        : '';
  // A job replayed from the archive waits again; a released one's copy does not.
  const extra =
    write === 'wait'
      ? ` AND (${e.name('state')} <> ${e.value('queued')} OR attribute_not_exists(${e.name('releasedAt')}))`
      : write === 'reopen'
        ? ` AND ${e.name('reason')} = ${e.value('dependency-failed')} AND attribute_exists(${e.name('body')})`
        : '';
  if (absent && existing) return `${absent} OR (${existing}${due}${extra})`;
  if (extra) return `${absent ?? existing}${due}${extra}`;
  return absent ?? `${existing}${due}`;
}

/** The item that files rejected messages under the id they carried: `<envelopeId> rejected` (no job id has a space). */
function rejectedKey(envelopeId: string): string {
  return `${envelopeId} rejected`;
}

/** The key of the cancellations item ({@link CancelRequests}): no job id has a space. */
const CANCELLATIONS_KEY = '~ cancellations';

/** Completions tried when dependents keep arriving between the read and the write. */
const COMPLETE_TRIES = 5;
/** Keys per BatchGetItem call. */
const BATCH_GET = 100;

/** A dependent as a member of the `dependents` string set: "id index size" (job ids have no spaces). */
function encodeEdge(edge: DependentEdge): string {
  return `${edge.id} ${edge.index} ${edge.size}`;
}

function decodeEdge(text: string): DependentEdge {
  const [id, index, size] = text.split(' ');
  return { id: id as string, index: Number(index), size: Number(size) };
}

/**
 * A dependent's count items live in the jobs table beside the jobs, under keys no job id can take
 * (job ids have no spaces): the root `<id> w` (complete shards, the first failure) and one item per
 * shard of 50 dependencies, `<id> w<shard>`.
 */
function rootKey(dependentId: string): string {
  return `${dependentId} w`;
}

function shardKey(dependentId: string, shard: number): string {
  return `${dependentId} w${shard}`;
}

function countFrom(root: Record<string, unknown>): DependencyCount {
  const complete = Array.isArray(root.shards) && typeof root.size === 'number' && root.shards.length >= root.size;
  return { complete, ...(typeof root.firstFailure === 'string' ? { firstFailure: root.firstFailure } : {}) };
}

/** The attempt is only known once written; patch it into the history entry the claim appended. */
function withClaimAttempt(record: JobRecord): JobRecord {
  return {
    ...record,
    history: record.history.map((h, i) => (i === record.history.length - 1 ? { ...h, attempt: record.attempt } : h)),
  };
}

/**
 * Whether a job record shows `r` itself applied: a retry of a claim after a lost answer finds the
 * lease its first try took, with that request's own `claimId`. Worker, time and lease end alone
 * do not tell it from a second copy of the job in the same batch.
 */
function isOwnClaim(old: JobRecord, r: ClaimRequest): boolean {
  return r.claimId !== undefined && old.state === 'running' && old.leaseClaim === r.claimId && old.leaseOwner === r.workerId;
}

/** Whether a job record shows completion `c` itself applied (its retry after a lost answer fails the condition). */
function isOwnCompletion(old: JobRecord, c: Completion): boolean {
  const last = old.history[old.history.length - 1];
  return (
    old.state === c.state &&
    old.updatedAt === c.now &&
    last?.what === c.state &&
    last.attempt === c.token &&
    last.worker === c.workerId &&
    last.when === c.now
  );
}

function toRecord(item: Record<string, AttributeValue>): JobRecord {
  const raw = fromItem(item) as Record<string, unknown>;
  const record: Record<string, unknown> = {
    jobId: raw.jobId,
    task: raw.task ?? '',
    payloadDigest: raw.payloadDigest ?? '',
    queue: raw.queue ?? '',
    version: raw.version ?? '',
    state: raw.state as JobState,
    attempt: (raw.attempt as number | undefined) ?? 0,
    updatedAt: (raw.updatedAt as number | undefined) ?? 0,
    history: (raw.history as HistoryEntry[] | undefined) ?? [],
  };
  for (const key of [
    'reason',
    'publishedAt',
    'firstStartedAt',
    'lastStartedAt',
    'finishedAt',
    'leaseOwner',
    'leaseUntil',
    'leaseClaim',
    'lastError',
    'result',
    'resultBytes',
    'resultRef',
    'envelopeId',
    'runAt',
    'announced',
    'releasedAt',
    'dependsOn',
    'awaits',
    'memberOf',
    'onDependencyFailure',
    'tags',
    'event',
    'startBy',
    'cancelRequestedAt',
    'progress',
    'progressAt',
  ]) {
    if (raw[key] !== undefined && raw[key] !== null) record[key] = raw[key];
  }
  if (Array.isArray(raw.dependents))
    record.dependents = (raw.dependents as string[]).map(decodeEdge).sort((a, b) => a.id.localeCompare(b.id) || a.index - b.index);
  return record as unknown as JobRecord & { reason?: ArchiveReason; lastError?: SerializedError };
}

/** Flat attribute names of a stats item: counters, `archived_<reason>`, and `<wait|run>_<count|sum|sumsq|bucket>`. */
const durationAttributes = (prefix: 'wait' | 'run', d: DurationStats): Array<[string, number]> => [
  [`${prefix}_count`, d.count],
  [`${prefix}_sum`, d.sum],
  [`${prefix}_sumsq`, d.sumSquares],
  ...Object.entries(d.buckets).map(([bucket, n]): [string, number] => [`${prefix}_${bucket}`, n]),
];

/** A task day's attributed cost (lib/track/cost.ts), ADDed like the counters; rounded so a DynamoDB number holds it. */
const costAttributes = (c: TaskCost): Array<[string, number]> => [
  ['cost_mbms', Math.round(c.lambdaMbMs)],
  ['cost_sqs', Math.round(c.sqsRequests * 1e6) / 1e6],
  ['cost_wcu', Math.round(c.writeUnits * 1e6) / 1e6],
];

/**
 * {@link StatsStore} on a DynamoDB table: each `add` is one UpdateItem of ADDs, so any number of
 * dispatchers update a queue's day without reading it or racing.
 */
export class DynamoStatsStore implements StatsStore {
  /** Its client (the dispatcher meters it: lib/adapters/usage-meter.ts). */
  readonly capacity: CapacityMeter = { writeUnits: 0, readUnits: 0 };

  constructor(
    private readonly tableName: string,
    readonly dynamo: DynamoDBClient,
  ) {}

  async add(delta: QueueDayStats, expiresAtSeconds: number): Promise<void> {
    const pairs: Array<[string, number]> = [
      ...Object.entries(delta.counters).map(([k, n]): [string, number] => [k, n ?? 0]),
      ...Object.entries(delta.archived).map(([k, n]): [string, number] => [`archived_${k}`, n ?? 0]),
      ...durationAttributes('wait', delta.wait),
      ...durationAttributes('run', delta.run),
      ...(delta.cost ? costAttributes(delta.cost) : []),
    ].filter(([, n]) => n !== 0);
    if (pairs.length === 0) return;
    const e = new Expression();
    const out = await this.dynamo.send(
      new UpdateItemCommand({
        TableName: this.tableName,
        Key: { pk: { S: `${delta.queue}#${delta.day}` } },
        UpdateExpression:
          `SET ${e.name('queue')} = ${e.value(delta.queue)}, ${e.name('day')} = ${e.value(delta.day)}, ${e.name('expiresAt')} = ${e.value(expiresAtSeconds)} ` +
          `ADD ${pairs.map(([k, n]) => `${e.name(k)} ${e.value(n)}`).join(', ')}`,
        ReturnConsumedCapacity: 'TOTAL',
        ...e.params(),
      }),
    );
    this.capacity.writeUnits += out.ConsumedCapacity?.CapacityUnits ?? 0;
  }

  async get(queue: string, day: string): Promise<QueueDayStats | undefined> {
    const out = await this.dynamo.send(
      new GetItemCommand({ TableName: this.tableName, Key: { pk: { S: `${queue}#${day}` } }, ConsistentRead: true }),
    );
    if (!out.Item) return undefined;
    const raw = fromItem(out.Item) as Record<string, number>;
    const counters: Partial<Record<StatCounter, number>> = {};
    for (const c of STAT_COUNTERS) if (raw[c] !== undefined) counters[c] = raw[c];
    const archived: Record<string, number> = {};
    const duration = (prefix: 'wait' | 'run'): DurationStats => {
      const buckets: Record<string, number> = {};
      for (const [k, v] of Object.entries(raw)) {
        const m = new RegExp(`^${prefix}_([smhd]\\d+)$`).exec(k);
        if (m?.[1]) buckets[m[1]] = v;
      }
      return { count: raw[`${prefix}_count`] ?? 0, sum: raw[`${prefix}_sum`] ?? 0, sumSquares: raw[`${prefix}_sumsq`] ?? 0, buckets };
    };
    for (const [k, v] of Object.entries(raw)) if (k.startsWith('archived_')) archived[k.slice('archived_'.length)] = v;
    const cost =
      raw.cost_mbms !== undefined || raw.cost_sqs !== undefined || raw.cost_wcu !== undefined
        ? { lambdaMbMs: raw.cost_mbms ?? 0, sqsRequests: raw.cost_sqs ?? 0, writeUnits: raw.cost_wcu ?? 0 }
        : undefined;
    return { queue, day, counters, archived, wait: duration('wait'), run: duration('run'), ...(cost ? { cost } : {}) };
  }

  /** One UpdateItem of ADDs on the item `<queue>#<YYYY-MM-DDTHH:MM>` (three numbers: 1 WCU). */
  async addMinute(queue: string, minute: string, counts: MinuteCounts, expiresAtSeconds: number): Promise<void> {
    const pairs = Object.entries(counts).filter(([, n]) => n !== 0);
    if (pairs.length === 0) return;
    const e = new Expression();
    const out = await this.dynamo.send(
      new UpdateItemCommand({
        TableName: this.tableName,
        Key: { pk: { S: `${queue}#${minute}` } },
        UpdateExpression:
          `SET ${e.name('expiresAt')} = ${e.value(expiresAtSeconds)} ` +
          `ADD ${pairs.map(([k, n]) => `${e.name(k)} ${e.value(n)}`).join(', ')}`,
        ReturnConsumedCapacity: 'TOTAL',
        ...e.params(),
      }),
    );
    this.capacity.writeUnits += out.ConsumedCapacity?.CapacityUnits ?? 0;
  }

  /** BatchGetItem (eventually consistent, 0.5 RCU an item) of the queue's minute items; unprocessed keys asked again. */
  async minutes(queue: string, minutes: readonly string[]): Promise<Record<string, MinuteCounts>> {
    const out: Record<string, MinuteCounts> = {};
    for (let i = 0; i < minutes.length; i += BATCH_GET) {
      let pending: Record<string, AttributeValue>[] = minutes.slice(i, i + BATCH_GET).map((m) => ({ pk: { S: `${queue}#${m}` } }));
      for (let round = 0; pending.length > 0; round++) {
        if (round > 0) await new Promise((resolve) => setTimeout(resolve, Math.min(1_000, 25 * 2 ** round)));
        const answer = await this.dynamo.send(
          new BatchGetItemCommand({ RequestItems: { [this.tableName]: { Keys: pending } }, ReturnConsumedCapacity: 'TOTAL' }),
        );
        for (const c of answer.ConsumedCapacity ?? []) this.capacity.readUnits += c.CapacityUnits ?? 0;
        for (const item of answer.Responses?.[this.tableName] ?? []) {
          const raw = fromItem(item) as Record<string, number | string>;
          const minute = String(raw.pk).slice(queue.length + 1);
          out[minute] = { started: Number(raw.started ?? 0), succeeded: Number(raw.succeeded ?? 0), archived: Number(raw.archived ?? 0) };
        }
        pending = (answer.UnprocessedKeys?.[this.tableName]?.Keys ?? []) as Record<string, AttributeValue>[];
      }
    }
    return out;
  }
}
