/**
 * Schedule and sweep: jobs parked until they are due (the sparse `byDue` index), the sweep's lease
 * and hand-over, bringing a job forward, and cancelling (a scheduled job at once, a running one by
 * request through the cancellations item).
 */
import { type AttributeValue, QueryCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { JOBS_DUE_INDEX } from '../layout/tables';
import { dueShardOf } from '../policy/due-times';
import { expiresAt, indexKey, isParked, permits, TIMED_OUT_ONLY } from '../policy/job-rules';
import {
  broughtForward,
  CANCELLATIONS_KEPT_MS,
  type CancelRequests,
  type CancelResult,
  type HistoryEntry,
  type JobRecord,
  type ParkedJob,
  type ParkRequest,
  type ParkResult,
  parkedAs,
  type TokenCompletion,
  tokenHistory,
  tokenJob,
  tokenRefusal,
} from '../track/job-record';
import type { EventRef } from '../wire/event-ref';
import { PARKED_ONLY } from './dynamo-job-expressions';
import { assignments, type DynamoJobTable, refFields, transitionCondition } from './dynamo-job-table';
import { Expression, fromItem, isConditionFailure } from './dynamo-values';

/** The key of the cancellations item ({@link CancelRequests}): no job id has a space. */
const CANCELLATIONS_KEY = '~ cancellations';

export class DynamoJobSchedules {
  constructor(private readonly table: DynamoJobTable) {}

  async park(r: ParkRequest): Promise<ParkResult> {
    const e = new Expression();
    const history = e.name('history');
    const { state, entry } = parkedAs(r);
    const attempt = e.name('attempt');
    const outcome = await this.table.write(r.jobId, e, {
      // A queued record may be a claim handed back unstarted (its attempt and `parks` both counted
      // it): the attempts it used are kept, so its line park neither gives back nor takes an attempt.
      update: `SET ${attempt} = if_not_exists(${attempt}, ${e.value(0)}), ${assignments(e, {
        ...refFields(r),
        state,
        runAt: r.runAt,
        body: r.body,
        attributes: r.attributes && Object.keys(r.attributes).length > 0 ? r.attributes : undefined,
        dueShard: dueShardOf(r.jobId),
        queueState: indexKey(r.queue, state),
        updatedAt: r.now,
        // A parked record outlives its due time by the usual retention.
        expiresAt: expiresAt(Math.max(r.now, r.runAt), this.table.settings.retentionDays),
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
      const out = await this.table.dynamo.send(
        new QueryCommand({
          TableName: this.table.tableName,
          IndexName: JOBS_DUE_INDEX,
          KeyConditionExpression: `${e.name('dueShard')} = ${e.value(shard)} AND ${e.name('runAt')} <= ${e.value(until)}`,
          FilterExpression: `attribute_not_exists(${lease}) OR ${lease} < ${e.value(now)}`,
          Limit: limit,
          ReturnConsumedCapacity: 'TOTAL',
          ...(start ? { ExclusiveStartKey: start } : {}),
          ...e.params(),
        }),
      );
      this.table.meter(out, 'read');
      for (const item of out.Items ?? []) {
        const raw = fromItem(item) as Record<string, unknown>;
        // A token wait is sent at its timeout, not ahead: until then a completion may still resume it.
        // (Left out here: a query's filter may not name the index's sort key.)
        if (TIMED_OUT_ONLY.includes(raw.state as JobRecord['state']) && Number(raw.runAt) > now) continue;
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
    const item = await this.table.getItem(jobId);
    if (!item) return undefined;
    const raw = fromItem(item) as Record<string, unknown>;
    if (!isParked(raw as Pick<JobRecord, 'state' | 'announced'>) || typeof raw.body !== 'string' || raw.dueShard === undefined)
      return undefined;
    return {
      jobId,
      queue: String(raw.queue),
      runAt: Number(raw.runAt),
      body: raw.body,
      ...(raw.attributes ? { attributes: raw.attributes as Record<string, string> } : {}),
    };
  }

  async bringForward(parked: ParkedJob, body: string, now: number, why?: string): Promise<boolean> {
    const e = new Expression();
    const history = e.name('history');
    const lease = e.name('sweepLease');
    const entry: HistoryEntry = { what: 'scheduled', when: now, detail: broughtForward(parked, why) };
    const outcome = await this.table.write(parked.jobId, e, {
      update: `SET ${assignments(e, { runAt: now, body, updatedAt: now })}, ${history} = list_append(${history}, ${e.value([entry])})`,
      condition:
        `${transitionCondition(e, 'bringForward')} AND attribute_exists(${e.name('dueShard')}) AND ${e.name('runAt')} = ${e.value(parked.runAt)}` +
        ` AND (attribute_not_exists(${lease}) OR ${lease} < ${e.value(now)})`,
    });
    return outcome.landed;
  }

  async completeToken(token: string, value: string | undefined, now: number, by?: EventRef): Promise<TokenCompletion> {
    const named = tokenJob(token);
    if (!named) return { outcome: 'unknown' };
    const e = new Expression();
    const history = e.name('history');
    const step = `${e.name('steps')}[${named.index}]`;
    const entry: HistoryEntry = tokenHistory(undefined, now, by);
    const state = e.name('state');
    const waitToken = e.name('waitToken');
    const t = e.value(token);
    const outcome = await this.table.write(named.jobId, e, {
      // Due now (a running job's runAt is read by nothing: its park, finding the value, continues at once).
      update:
        `SET ${step}.${e.name('completedAt')} = ${e.value(now)}` +
        (value !== undefined ? `, ${step}.${e.name('result')} = ${e.value(value)}` : '') +
        `, ${assignments(e, { runAt: now, updatedAt: now })}, ${history} = list_append(${history}, ${e.value([entry])})`,
      // tokenCompletable's rule: the step holds the token, not completed; parked on it, or running and not parked on it yet.
      condition:
        `${transitionCondition(e, 'completeToken')} AND ${step}.${e.name('wait')}.${e.name('token')} = ${t} ` +
        `AND attribute_not_exists(${step}.${e.name('completedAt')}) ` +
        `AND (${waitToken} = ${t} AND ${state} <> ${e.value('running')} OR ${state} = ${e.value('running')} AND (attribute_not_exists(${waitToken}) OR ${waitToken} <> ${t}))`,
    });
    if (outcome.landed) {
      if (outcome.record?.state === 'running') return { outcome: 'completed', jobId: named.jobId };
      const parked = await this.parkedJob(named.jobId);
      // Sent meanwhile by a sweep (its timeout came): the value is kept all the same, and that send runs it.
      return { outcome: 'completed', jobId: named.jobId, ...(parked ? { parked } : {}) };
    }
    return tokenRefusal(token, outcome.record);
  }

  async leaseForSweep(jobId: string, now: number, leaseUntil: number): Promise<boolean> {
    const e = new Expression();
    const lease = e.name('sweepLease');
    return this.table.update(jobId, e, {
      update: `SET ${lease} = ${e.value(leaseUntil)}`,
      condition: `${transitionCondition(e, 'sweep')} AND (attribute_not_exists(${lease}) OR ${lease} < ${e.value(now)})`,
    });
  }

  async handOver(jobId: string, leaseUntil: number, now: number): Promise<boolean> {
    const e = new Expression();
    const history = e.name('history');
    const entry: HistoryEntry = { what: 'queued', when: now, detail: 'due: sent to its queue' };
    const outcome = await this.table.write(jobId, e, {
      update:
        `SET ${assignments(e, { state: 'queued', updatedAt: now })}, ${history} = list_append(${history}, ${e.value([entry])}) ` +
        `REMOVE ${[...PARKED_ONLY, 'queueState'].map((n) => e.name(n)).join(', ')}`,
      condition: `${transitionCondition(e, 'handOver')} AND ${e.name('sweepLease')} = ${e.value(leaseUntil)}`,
    });
    return outcome.landed;
  }

  async cancel(jobId: string, now: number): Promise<CancelResult> {
    for (;;) {
      const record = await this.table.get(jobId);
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
      const outcome = await this.table.write(jobId, e, {
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
      const outcome = await this.table.write(record.jobId, e, {
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
        const out = await this.table.dynamo.send(
          new UpdateItemCommand({
            TableName: this.table.tableName,
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
        this.table.meter(out, 'write');
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
    const item = await this.table.getItem(CANCELLATIONS_KEY, consistent);
    const requests: Record<string, number> = {};
    for (const [id, at] of Object.entries(item?.requests?.M ?? {})) requests[id] = Number(at.N);
    return { version: Number(item?.v?.N ?? 0), requests };
  }
}
