/**
 * Claim and complete: the job store's writes on every job's way through a dispatcher (queued and
 * scheduled records, the claim and its lease, the completion, outcomes without a claim, rejections
 * and duplicates, a replay's reset), each one conditional UpdateItem whose condition is its row of
 * `TRANSITIONS`.
 */
import { UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { archiveTakeOf } from '../policy/archive-fences';
import { DUE_SLACK_MS, dueShardOf } from '../policy/due-times';
import { appendHistory, expiresAt, historyOf, indexKey, permits, stateIndexKey } from '../policy/job-rules';
import {
  type ArchiveFence,
  type ArchiveTake,
  ATTEMPT_ONLY,
  type AttemptPark,
  type ClaimHandBack,
  type ClaimRequest,
  type ClaimResult,
  type Completed,
  type Completion,
  type HistoryEntry,
  type JobIdentity,
  type JobRecord,
  type JobRef,
  MAX_FILED_REJECTIONS,
  type ProgressWrite,
  type Rejection,
  type ScheduleRequest,
  type StepWrite,
  stepEntryOf,
  tokenJob,
  type UnclaimedOutcome,
  type UnclaimedResult,
} from '../track/job-record';
import {
  type CompletionSlot,
  claimExpression,
  claimedRecord,
  claimValues,
  completionExpression,
  newClaimExpression,
} from './dynamo-job-expressions';
import { assignments, type DynamoJobTable, refFields, transitionCondition } from './dynamo-job-table';
import { Expression, fromItem, isConditionFailure } from './dynamo-values';

/** Claims tried when the job changes between a failed condition and the read that classifies it. */
const CLAIM_TRIES = 3;

/** Completions tried when dependents keep arriving between the read and the write. */
const COMPLETE_TRIES = 5;

/** The item that files rejected messages under the id they carried: `<envelopeId> rejected` (no job id has a space). */
function rejectedKey(envelopeId: string): string {
  return `${envelopeId} rejected`;
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
    last?.what === historyOf(c).what &&
    last.attempt === c.token &&
    last.worker === c.workerId &&
    last.when === c.now
  );
}

export class DynamoJobClaims {
  constructor(private readonly table: DynamoJobTable) {}

  async recordQueued(job: JobRef, now: number): Promise<boolean> {
    const e = new Expression();
    const outcome = await this.table.write(job.jobId, e, {
      update: `SET ${assignments(e, {
        ...refFields(job),
        state: 'queued',
        attempt: 0,
        updatedAt: now,
        history: [{ what: 'queued', when: now }],
        expiresAt: expiresAt(now, this.table.settings.retentionDays),
      })}`,
      condition: transitionCondition(e, 'queue'),
    });
    return outcome.landed;
  }

  async recordScheduled(job: ScheduleRequest, now: number): Promise<boolean> {
    const e = new Expression();
    const outcome = await this.table.write(job.jobId, e, {
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
        expiresAt: expiresAt(Math.max(now, job.runAt), this.table.settings.retentionDays),
      })}`,
      condition: transitionCondition(e, 'schedule'),
    });
    return outcome.landed;
  }

  async claim(r: ClaimRequest): Promise<ClaimResult> {
    // A job expected to have no record is first claimed by the write that creates one; a record
    // found there after all (a duplicate delivery, a redriven message) goes through the full claim.
    if (r.expectNew) {
      const created = await this.tryNewClaim(r);
      if (created) return created;
    }
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

  /** The claim that creates the job's record ({@link newClaimExpression}); undefined when there is one already. */
  private async tryNewClaim(r: ClaimRequest): Promise<ClaimResult | undefined> {
    const entry: HistoryEntry = { what: 'started', when: r.now, worker: r.workerId };
    const built = newClaimExpression(r);
    const values = claimValues(r, entry, r.now + DUE_SLACK_MS, expiresAt(r.now, this.table.settings.retentionDays));
    // Nothing is read back when it finds a record: the full claim that follows reads it.
    if (!(await this.table.update(r.jobId, { params: () => built.template.params(values) }, built))) return undefined;
    const record = claimedRecord(undefined, r, entry);
    return { outcome: 'claimed', token: record.attempt, record: withClaimAttempt(record) };
  }

  /**
   * One conditional claim. `changed`: the condition failed, but the item read afterwards (where the
   * service returned none with the failure) would have passed it: it changed in between.
   */
  private async tryClaim(r: ClaimRequest, what: 'started' | 'took-over'): Promise<ClaimResult | { outcome: 'changed'; record: JobRecord }> {
    const entry: HistoryEntry = { what, when: r.now, worker: r.workerId };
    const built = claimExpression(what, r);
    const values = claimValues(r, entry, r.now + DUE_SLACK_MS, expiresAt(r.now, this.table.settings.retentionDays));
    // The record as it was comes back (nothing, for a new job): the claim's own writes are known here.
    const outcome = await this.table.write(r.jobId, { params: () => built.template.params(values) }, built, { returns: 'old' });
    if (outcome.landed) {
      const record = await this.table.trimHistory(claimedRecord(outcome.old, r, entry));
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
    const outcome = await this.table.write(
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

  async keepStep(jobId: string, token: number, step: StepWrite, now: number): Promise<boolean> {
    const e = new Expression();
    const steps = e.name('steps');
    const entry = stepEntryOf(step, token, now);
    // Appended in the order the body ran its steps: the record must hold exactly the ones before it.
    const inOrder = stepsBefore(e, step.index);
    const outcome = await this.table.write(
      jobId,
      e,
      {
        update: `SET ${steps} = list_append(if_not_exists(${steps}, ${e.value([])}), ${e.value([entry])}), ${assignments(e, { updatedAt: now })}`,
        condition:
          `${transitionCondition(e, 'heartbeat')} AND ${e.name('attempt')} = ${e.value(token)} ` +
          `AND attribute_not_exists(${e.name('cancelRequestedAt')}) AND ${inOrder}`,
      },
      { returns: 'none' },
    );
    return outcome.landed;
  }

  async parkAttempt(p: AttemptPark): Promise<boolean> {
    const e = new Expression();
    // Named only where used: DynamoDB refuses an expression with a name it does not use.
    const steps = () => e.name('steps');
    const entry: HistoryEntry = { what: p.state, when: p.now, worker: p.workerId, attempt: p.token, detail: p.detail };
    const step = p.step ? stepEntryOf(p.step, p.token, p.now) : undefined;
    const waited = p.waitToken !== undefined ? tokenJob(p.waitToken) : undefined;
    if (p.waitToken !== undefined && !waited) return false;
    const sets = [
      assignments(e, {
        state: p.state,
        runAt: p.runAt,
        body: p.body,
        attributes: p.attributes && Object.keys(p.attributes).length > 0 ? p.attributes : undefined,
        dueShard: dueShardOf(p.jobId),
        queueState: indexKey(p.queue, p.state),
        updatedAt: p.now,
        waitToken: p.waitToken,
        history: appendHistory(p.history, entry, this.table.settings.historyLimit),
        expiresAt: expiresAt(Math.max(p.now, p.runAt), this.table.settings.retentionDays),
      }),
      ...(step ? [`${steps()} = list_append(if_not_exists(${steps()}, ${e.value([])}), ${e.value([step])})`] : []),
    ];
    const conditions = [
      transitionCondition(e, 'parkAttempt'),
      `${e.name('attempt')} = ${e.value(p.token)}`,
      `attribute_not_exists(${e.name('cancelRequestedAt')})`,
      ...(p.step ? [stepsBefore(e, p.step.index)] : []),
      // A token wait parks on the token its step kept (before anyone heard of it).
      ...(waited
        ? [
            `${steps()}[${waited.index}].${e.name('wait')}.${e.name('token')} = ${e.value(p.waitToken)}`,
            // A wait completed before its park (while the attempt settled) is not parked on: the park continues instead.
            `attribute_not_exists(${steps()}[${waited.index}].${e.name('completedAt')})`,
          ]
        : []),
    ];
    const outcome = await this.table.write(
      p.jobId,
      e,
      {
        update:
          `SET ${sets.join(', ')} ADD ${e.name('parks')} ${e.value(1)} ` +
          `REMOVE ${[...ATTEMPT_ONLY, 'sweepLease'].map((n) => e.name(n)).join(', ')}`,
        condition: conditions.join(' AND '),
      },
      { returns: 'none' },
    );
    return outcome.landed;
  }

  async handBackClaim(h: ClaimHandBack): Promise<boolean> {
    const e = new Expression();
    const entry: HistoryEntry = { what: 'handed-back', when: h.now, worker: h.workerId, attempt: h.token, detail: h.detail };
    const history = appendHistory(h.history, entry, this.table.settings.historyLimit);
    const outcome = await this.table.write(
      h.jobId,
      e,
      {
        update:
          `SET ${assignments(e, { state: 'queued', updatedAt: h.now, history })} ` +
          `ADD ${e.name('parks')} ${e.value(1)} ` +
          `REMOVE ${[...ATTEMPT_ONLY, ...(h.firstStart ? ['firstStartedAt'] : [])].map((n) => e.name(n)).join(', ')}`,
        condition: `${transitionCondition(e, 'handBack')} AND ${e.name('attempt')} = ${e.value(h.token)}`,
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
      const now = await this.table.get(c.jobId).catch(() => undefined);
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
    const queueState = stateIndexKey(this.table.settings, claimed.queue, c.state, c.jobId);
    const built = completionExpression(c, claimed, queueState);
    const values: Record<CompletionSlot, unknown> = {
      token: c.token,
      state: c.state,
      now: c.now,
      history: appendHistory(claimed.history, historyOf(c), this.table.settings.historyLimit),
      expiresAt: expiresAt(c.now, this.table.settings.retentionDays),
      reason: c.reason,
      error: c.error,
      result: c.result,
      resultBytes: c.resultBytes,
      resultRef: c.resultRef,
      queueState,
      dependents: claimed.dependents?.length ?? 0,
      archiveHolder: c.archiving?.holder,
      archiveUntil: c.archiving?.until,
    };
    // The record written is known here (its history trimmed before the write): nothing to read back.
    return this.table.write(c.jobId, { params: () => built.template.params(values) }, built, { returns: 'none' });
  }

  async recordUnclaimed(o: UnclaimedOutcome): Promise<UnclaimedResult> {
    const write = o.state === 'succeeded' ? 'unclaimedSuccess' : 'unclaimedFailure';
    const queueState = stateIndexKey(this.table.settings, o.queue, o.state, o.jobId);
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
        archiveHolder: o.state === 'archived' ? o.archiving?.holder : undefined,
        archiveUntil: o.state === 'archived' ? o.archiving?.until : undefined,
        queueState,
        expiresAt: expiresAt(o.now, this.table.settings.retentionDays),
      }),
      `${e.name('publishedAt')} = if_not_exists(${e.name('publishedAt')}, ${e.value(o.publishedAt)})`,
      `${history} = list_append(if_not_exists(${history}, ${e.value([])}), ${e.value([entry])})`,
    ];
    const outcome = await this.table.write(o.jobId, e, {
      update: `SET ${sets.join(', ')}${queueState ? '' : ` REMOVE ${e.name('queueState')}`}`,
      condition: transitionCondition(e, write, o),
    });
    if (outcome.landed) return 'recorded';
    return outcome.record && permits(write, outcome.record, o) === 'conflict' ? 'conflict' : 'ignored';
  }

  async recordRejected(r: Rejection): Promise<boolean> {
    const e = new Expression();
    const outcome = await this.table.write(r.jobId, e, {
      update: `SET ${assignments(e, {
        ...refFields(r),
        state: 'archived',
        reason: r.reason,
        attempt: r.attempt,
        lastError: r.error,
        envelopeId: r.envelopeId,
        archiveHolder: r.archiving?.holder,
        archiveUntil: r.archiving?.until,
        updatedAt: r.now,
        finishedAt: r.now,
        queueState: indexKey(r.queue, 'archived'),
        history: [{ what: 'archived', when: r.now, worker: r.workerId, attempt: r.attempt, detail: r.reason }],
        expiresAt: expiresAt(r.now, this.table.settings.retentionDays),
      })}`,
      condition: transitionCondition(e, 'reject'),
    });
    // Filed under the id it carried, landed or not: a redelivery after a crash between the two writes
    // files it then (adding to a set is idempotent). Readers keep only records that carried the id.
    if (r.envelopeId !== undefined) await this.fileRejection(r.envelopeId, r.jobId, r.now);
    return outcome.landed;
  }

  async takeArchive(jobId: string, fence: ArchiveFence, now: number): Promise<ArchiveTake> {
    const e = new Expression();
    const holder = e.name('archiveHolder');
    const outcome = await this.table.write(
      jobId,
      e,
      {
        update: `SET ${assignments(e, { archiveHolder: fence.holder, archiveUntil: fence.until })}`,
        // This holder's own (the SDK's retry of this very take), or an open fence that lapsed; a
        // record without a fence (closed, or never opened) fails both: a missing attribute compares false.
        condition: `${holder} = ${e.value(fence.holder)} OR ${e.name('archiveUntil')} < ${e.value(now)}`,
      },
      { returns: 'none' },
    );
    if (outcome.landed) return { outcome: 'taken' };
    const found = archiveTakeOf(outcome.record, fence.holder, now);
    // Refused, yet read afterwards as takeable: it changed in between. Come back in a second and look again.
    return found.outcome === 'taken' ? { outcome: 'held', until: now } : found;
  }

  async markArchived(jobId: string, holder: string): Promise<boolean> {
    const e = new Expression();
    const outcome = await this.table.write(
      jobId,
      e,
      {
        update: `REMOVE ${e.name('archiveHolder')}, ${e.name('archiveUntil')}`,
        condition: `${e.name('archiveHolder')} = ${e.value(holder)}`,
      },
      { returns: 'none' },
    );
    return outcome.landed;
  }

  async lapseArchive(jobId: string, holder: string, at: number): Promise<boolean> {
    const e = new Expression();
    const outcome = await this.table.write(
      jobId,
      e,
      {
        update: `SET ${assignments(e, { archiveUntil: at })}`,
        condition: `${e.name('archiveHolder')} = ${e.value(holder)}`,
      },
      { returns: 'none' },
    );
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
      const out = await this.table.dynamo.send(
        new UpdateItemCommand({
          TableName: this.table.tableName,
          Key: { jobId: { S: rejectedKey(envelopeId) } },
          UpdateExpression: `ADD ${ids} ${e.stringSet([messageId])} SET ${e.name('expiresAt')} = ${e.value(expiresAt(now, this.table.settings.retentionDays))}`,
          ConditionExpression: `attribute_not_exists(${ids}) OR size(${ids}) < ${e.value(MAX_FILED_REJECTIONS)} OR contains(${ids}, ${e.value(messageId)})`,
          ReturnConsumedCapacity: 'TOTAL',
          ...e.params(),
        }),
      );
      this.table.meter(out, 'write');
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
    }
  }

  async rejectionsFor(envelopeId: string): Promise<JobRecord[]> {
    const item = await this.table.getItem(rejectedKey(envelopeId));
    const ids = (item ? (fromItem(item) as { messageIds?: string[] }).messageIds : undefined) ?? [];
    if (ids.length === 0) return [];
    return (await this.table.getMany(ids))
      .filter((r) => r.envelopeId === envelopeId && r.jobId !== envelopeId && r.state === 'archived')
      .sort((a, b) => b.updatedAt - a.updatedAt);
  }

  async recordDuplicate(jobId: string, identity: JobIdentity, workerId: string, now: number): Promise<void> {
    const e = new Expression();
    const history = e.name('history');
    const entry: HistoryEntry = { what: 'skipped-duplicate', when: now, worker: workerId };
    await this.table.write(jobId, e, {
      update: `SET ${history} = list_append(${history}, ${e.value([entry])})`,
      condition: transitionCondition(e, 'duplicate', identity),
    });
  }

  async resetForReplay(jobId: string, identity: JobIdentity, now: number): Promise<boolean> {
    const e = new Expression();
    const history = e.name('history');
    const entry: HistoryEntry = { what: 'queued', when: now, detail: 'replayed from the archive' };
    const outcome = await this.table.write(jobId, e, {
      update:
        `SET ${assignments(e, { state: 'queued', attempt: 0, updatedAt: now })}, ${history} = list_append(${history}, ${e.value([entry])}) ` +
        `REMOVE ${e.name('reason')}, ${e.name('finishedAt')}, ${e.name('queueState')}, ${e.name('releasedAt')}, ` +
        `${e.name('archiveHolder')}, ${e.name('archiveUntil')}, ${e.name('retryAfters')}, ${e.name('parks')}`,
      condition: transitionCondition(e, 'replay', identity),
    });
    return outcome.landed;
  }
}

/** The condition that the record holds exactly the `index` steps before a new one. */
function stepsBefore(e: Expression, index: number): string {
  const steps = e.name('steps');
  return index === 0 ? `attribute_not_exists(${steps})` : `size(${steps}) = ${e.value(index)}`;
}
