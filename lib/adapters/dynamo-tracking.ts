import {
  type AttributeValue,
  ConditionalCheckFailedException,
  type ConsumedCapacity,
  DynamoDBClient,
  type DynamoDBClientConfig,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  ScanCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import type { ArchiveReason } from '../archive';
import type { SerializedError } from '../executor/types';
import { JOBS_BY_QUEUE_STATE_INDEX } from '../table-layout';
import {
  type ClaimRequest,
  type ClaimResult,
  type Completion,
  type DurationStats,
  type FailureRecord,
  type HistoryEntry,
  type JobQuery,
  type JobRecord,
  type JobRef,
  type JobState,
  type JobStore,
  type QueueDayStats,
  STAT_COUNTERS,
  type StatCounter,
  type StatsStore,
} from '../tracking/model';
import { appendHistory, expiresAt, historyOf, INDEXED_STATES, indexKey, type JobStoreSettings } from '../tracking/rules';
import { Expression, fromItem, toItem } from './dynamo-values';
import { DYNAMO_TIMEOUTS, type HttpTimeouts, withHttpTimeouts } from './http-timeouts';

/**
 * Pass a ready client or a client config, never both. Endpoints follow the SDK
 * (`AWS_ENDPOINT_URL_DYNAMODB`). A built client gets {@link DYNAMO_TIMEOUTS} unless `timeouts` or
 * the config's own `requestHandler` says otherwise.
 */
export type DynamoClientOption =
  | { readonly client: DynamoDBClient; readonly clientConfig?: never; readonly timeouts?: never }
  | { readonly client?: never; readonly clientConfig?: DynamoDBClientConfig; readonly timeouts?: HttpTimeouts };

export function dynamoClientFrom(option: DynamoClientOption = {}): DynamoDBClient {
  return option.client ?? new DynamoDBClient(withHttpTimeouts(option.clientConfig ?? {}, option.timeouts ?? DYNAMO_TIMEOUTS));
}

const isConditionFailure = (error: unknown): error is ConditionalCheckFailedException =>
  error instanceof ConditionalCheckFailedException || (error instanceof Error && error.name === 'ConditionalCheckFailedException');

/** Write units consumed, summed from DynamoDB's own ConsumedCapacity answers. */
export interface CapacityMeter {
  writeUnits: number;
  readUnits: number;
}

/**
 * {@link JobStore} on a DynamoDB table (layout in lib/table-layout.ts). Claims, completions and
 * heartbeats are single conditional UpdateItems; the claim returns the new item, or on a failed
 * condition the old one, so classifying a duplicate costs no extra read.
 */
export class DynamoJobStore implements JobStore {
  private readonly dynamo: DynamoDBClient;
  readonly capacity: CapacityMeter = { writeUnits: 0, readUnits: 0 };

  constructor(
    private readonly tableName: string,
    private readonly settings: JobStoreSettings,
    option: DynamoClientOption = {},
  ) {
    this.dynamo = dynamoClientFrom(option);
  }

  private meter(out: { ConsumedCapacity?: ConsumedCapacity | undefined }, kind: 'write' | 'read'): void {
    const units = out.ConsumedCapacity?.CapacityUnits ?? 0;
    if (kind === 'write') this.capacity.writeUnits += units;
    else this.capacity.readUnits += units;
  }

  async recordQueued(job: JobRef, now: number): Promise<boolean> {
    try {
      const out = await this.dynamo.send(
        new PutItemCommand({
          TableName: this.tableName,
          Item: toItem({
            ...job,
            state: 'queued',
            attempt: 0,
            updatedAt: now,
            history: [{ what: 'queued', when: now }],
            expiresAt: expiresAt(now, this.settings.retentionDays),
          }),
          ConditionExpression: 'attribute_not_exists(jobId)',
          ReturnConsumedCapacity: 'TOTAL',
        }),
      );
      this.meter(out, 'write');
      return true;
    } catch (error) {
      if (isConditionFailure(error)) return false;
      throw error;
    }
  }

  async claim(r: ClaimRequest): Promise<ClaimResult> {
    const fresh = await this.tryClaim(r, 'started');
    if (fresh.outcome !== 'leased' || (fresh.record.leaseUntil ?? 0) >= r.now) return fresh;
    // The holder's lease lapsed: take the job over (a second request, only on this rare path).
    return this.tryClaim(r, 'took-over');
  }

  private async tryClaim(r: ClaimRequest, what: 'started' | 'took-over'): Promise<ClaimResult> {
    const e = new Expression();
    const state = e.name('state');
    const attempt = e.name('attempt');
    const history = e.name('history');
    const leaseUntil = e.name('leaseUntil');
    const entry: HistoryEntry = { what, when: r.now, worker: r.workerId };
    const condition =
      what === 'started'
        ? `attribute_not_exists(${e.name('jobId')}) OR ${state} IN (${e.value('queued')}, ${e.value('retrying')})`
        : `${state} = ${e.value('running')} AND ${leaseUntil} < ${e.value(r.now)}`;
    const sets = [
      `${state} = ${e.value('running')}`,
      `${attempt} = if_not_exists(${attempt}, ${e.value(0)}) + ${e.value(1)}`,
      `${e.name('task')} = ${e.value(r.task)}`,
      `${e.name('queue')} = ${e.value(r.queue)}`,
      `${e.name('version')} = ${e.value(r.version)}`,
      `${e.name('publishedAt')} = if_not_exists(${e.name('publishedAt')}, ${e.value(r.publishedAt)})`,
      `${e.name('firstStartedAt')} = if_not_exists(${e.name('firstStartedAt')}, ${e.value(r.now)})`,
      `${e.name('lastStartedAt')} = ${e.value(r.now)}`,
      `${e.name('updatedAt')} = ${e.value(r.now)}`,
      `${e.name('leaseOwner')} = ${e.value(r.workerId)}`,
      `${leaseUntil} = ${e.value(r.leaseUntil)}`,
      ...(r.claimId ? [`${e.name('leaseClaim')} = ${e.value(r.claimId)}`] : []),
      `${history} = list_append(if_not_exists(${history}, ${e.value([])}), ${e.value([entry])})`,
      `${e.name('expiresAt')} = ${e.value(expiresAt(r.now, this.settings.retentionDays))}`,
    ];
    try {
      const out = await this.dynamo.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: { jobId: { S: r.jobId } },
          UpdateExpression: `SET ${sets.join(', ')} REMOVE ${[e.name('queueState'), ...(r.claimId ? [] : [e.name('leaseClaim')])].join(', ')}`,
          ConditionExpression: condition,
          ReturnValues: 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          ReturnConsumedCapacity: 'TOTAL',
          ...e.params(),
        }),
      );
      this.meter(out, 'write');
      const record = toRecord(out.Attributes ?? {});
      return { outcome: 'claimed', token: record.attempt, record: withClaimAttempt(record) };
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
      const old = error.Item ? toRecord(error.Item) : await this.get(r.jobId);
      if (!old) throw error;
      // The SDK retried this very claim after a lost answer, and its first try had landed: ours.
      if (isOwnClaim(old, r)) return { outcome: 'claimed', token: old.attempt, record: withClaimAttempt(old) };
      return old.state === 'running' ? { outcome: 'leased', record: old } : { outcome: 'finished', record: old };
    }
  }

  async extendLease(jobId: string, token: number, leaseUntil: number, now: number): Promise<boolean> {
    const e = new Expression();
    return this.conditionalUpdate(jobId, e, {
      update: `SET ${e.name('leaseUntil')} = ${e.value(leaseUntil)}, ${e.name('updatedAt')} = ${e.value(now)}`,
      condition: `${e.name('state')} = ${e.value('running')} AND ${e.name('attempt')} = ${e.value(token)}`,
    });
  }

  async complete(c: Completion, claimed: JobRecord): Promise<boolean> {
    const e = new Expression();
    const sets = [
      `${e.name('state')} = ${e.value(c.state)}`,
      `${e.name('updatedAt')} = ${e.value(c.now)}`,
      `${e.name('history')} = ${e.value(appendHistory(claimed.history, historyOf(c), this.settings.historyLimit))}`,
      `${e.name('expiresAt')} = ${e.value(expiresAt(c.now, this.settings.retentionDays))}`,
    ];
    const removes = [e.name('leaseOwner'), e.name('leaseUntil'), e.name('leaseClaim')];
    if (c.state !== 'retrying') sets.push(`${e.name('finishedAt')} = ${e.value(c.now)}`);
    if (c.reason) sets.push(`${e.name('reason')} = ${e.value(c.reason)}`);
    if (c.error) sets.push(`${e.name('lastError')} = ${e.value(c.error)}`);
    if (c.result !== undefined) sets.push(`${e.name('result')} = ${e.value(c.result)}`);
    const key = indexKey(claimed.queue, c.state);
    if (key) sets.push(`${e.name('queueState')} = ${e.value(key)}`);
    return this.conditionalUpdate(
      c.jobId,
      e,
      {
        update: `SET ${sets.join(', ')} REMOVE ${removes.join(', ')}`,
        condition: `${e.name('state')} = ${e.value('running')} AND ${e.name('attempt')} = ${e.value(c.token)}`,
      },
      (old) => isOwnCompletion(old, c),
    );
  }

  async recordFailure(f: FailureRecord): Promise<void> {
    const e = new Expression();
    const history = e.name('history');
    const entry: HistoryEntry = {
      what: f.state,
      when: f.now,
      worker: f.workerId,
      attempt: f.attempt,
      ...(f.reason ? { detail: f.reason } : {}),
    };
    const sets = [
      `${e.name('state')} = ${e.value(f.state)}`,
      `${e.name('attempt')} = ${e.value(f.attempt)}`,
      `${e.name('task')} = ${e.value(f.task)}`,
      `${e.name('queue')} = ${e.value(f.queue)}`,
      `${e.name('version')} = ${e.value(f.version)}`,
      `${e.name('publishedAt')} = if_not_exists(${e.name('publishedAt')}, ${e.value(f.publishedAt)})`,
      `${e.name('updatedAt')} = ${e.value(f.now)}`,
      `${e.name('lastError')} = ${e.value(f.error)}`,
      `${history} = list_append(if_not_exists(${history}, ${e.value([])}), ${e.value([entry])})`,
      `${e.name('queueState')} = ${e.value(indexKey(f.queue, f.state))}`,
      `${e.name('expiresAt')} = ${e.value(expiresAt(f.now, this.settings.retentionDays))}`,
    ];
    if (f.reason) sets.push(`${e.name('reason')} = ${e.value(f.reason)}`);
    if (f.state === 'archived') sets.push(`${e.name('finishedAt')} = ${e.value(f.now)}`);
    const state = e.name('state');
    await this.conditionalUpdate(f.jobId, e, {
      update: `SET ${sets.join(', ')}`,
      condition: `attribute_not_exists(${e.name('jobId')}) OR NOT (${state} IN (${e.value('succeeded')}, ${e.value('archived')}))`,
    });
  }

  async recordDuplicate(jobId: string, workerId: string, now: number): Promise<void> {
    const e = new Expression();
    const history = e.name('history');
    const entry: HistoryEntry = { what: 'skipped-duplicate', when: now, worker: workerId };
    await this.conditionalUpdate(jobId, e, {
      update: `SET ${history} = list_append(${history}, ${e.value([entry])})`,
      condition: `${e.name('state')} IN (${e.value('succeeded')}, ${e.value('archived')})`,
    });
  }

  async resetForReplay(jobId: string, now: number): Promise<void> {
    const e = new Expression();
    const history = e.name('history');
    const entry: HistoryEntry = { what: 'queued', when: now, detail: 'replayed from the archive' };
    await this.conditionalUpdate(jobId, e, {
      update:
        `SET ${e.name('state')} = ${e.value('queued')}, ${e.name('attempt')} = ${e.value(0)}, ${e.name('updatedAt')} = ${e.value(now)}, ` +
        `${history} = list_append(${history}, ${e.value([entry])}) REMOVE ${e.name('reason')}, ${e.name('finishedAt')}, ${e.name('queueState')}`,
      condition: `${e.name('state')} = ${e.value('archived')}`,
    });
  }

  /**
   * An UpdateItem that resolves false when its condition fails, or, given `landed`, true when the
   * item shows this very write had landed already (the SDK retried it after a lost answer).
   */
  private async conditionalUpdate(
    jobId: string,
    e: Expression,
    expr: { update: string; condition: string },
    landed?: (old: JobRecord) => boolean,
  ): Promise<boolean> {
    try {
      const out = await this.dynamo.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: { jobId: { S: jobId } },
          UpdateExpression: expr.update,
          ConditionExpression: expr.condition,
          ReturnConsumedCapacity: 'TOTAL',
          ...(landed ? { ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const } : {}),
          ...e.params(),
        }),
      );
      this.meter(out, 'write');
      return true;
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
      if (!landed) return false;
      const old = error.Item ? toRecord(error.Item) : await this.get(jobId);
      return old !== undefined && landed(old);
    }
  }

  async get(jobId: string): Promise<JobRecord | undefined> {
    const out = await this.dynamo.send(
      new GetItemCommand({
        TableName: this.tableName,
        Key: { jobId: { S: jobId } },
        ConsistentRead: true,
        ReturnConsumedCapacity: 'TOTAL',
      }),
    );
    this.meter(out, 'read');
    return out.Item ? toRecord(out.Item) : undefined;
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
              KeyConditionExpression: `${e.name('queueState')} = ${e.value(indexKey(queue, q.state))}`,
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
  ]) {
    if (raw[key] !== undefined && raw[key] !== null) record[key] = raw[key];
  }
  return record as unknown as JobRecord & { reason?: ArchiveReason; lastError?: SerializedError };
}

/** Flat attribute names of a stats item: counters, `archived_<reason>`, and `<wait|run>_<count|sum|sumsq|bucket>`. */
const durationAttributes = (prefix: 'wait' | 'run', d: DurationStats): Array<[string, number]> => [
  [`${prefix}_count`, d.count],
  [`${prefix}_sum`, d.sum],
  [`${prefix}_sumsq`, d.sumSquares],
  ...Object.entries(d.buckets).map(([bucket, n]): [string, number] => [`${prefix}_${bucket}`, n]),
];

/**
 * {@link StatsStore} on a DynamoDB table: each `add` is one UpdateItem of ADDs, so any number of
 * dispatchers update a queue's day without reading it or racing.
 */
export class DynamoStatsStore implements StatsStore {
  private readonly dynamo: DynamoDBClient;
  readonly capacity: CapacityMeter = { writeUnits: 0, readUnits: 0 };

  constructor(
    private readonly tableName: string,
    option: DynamoClientOption = {},
  ) {
    this.dynamo = dynamoClientFrom(option);
  }

  async add(delta: QueueDayStats, expiresAtSeconds: number): Promise<void> {
    const pairs: Array<[string, number]> = [
      ...Object.entries(delta.counters).map(([k, n]): [string, number] => [k, n ?? 0]),
      ...Object.entries(delta.archived).map(([k, n]): [string, number] => [`archived_${k}`, n ?? 0]),
      ...durationAttributes('wait', delta.wait),
      ...durationAttributes('run', delta.run),
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
    return { queue, day, counters, archived, wait: duration('wait'), run: duration('run') };
  }
}
