/**
 * The jobs table as every part of the DynamoDB job store uses it: one conditional UpdateItem per
 * write (a failed condition returns the old item, so classifying a duplicate or a conflict costs no
 * extra read), history trimming, reads by key, and the items as job records. The parts by role are
 * dynamo-job-claims.ts, dynamo-job-schedules.ts, dynamo-job-flows.ts and dynamo-job-queries.ts;
 * dynamo-job-store.ts puts them together as one {@link JobStore}.
 */
import {
  type AttributeValue,
  BatchGetItemCommand,
  type ConsumedCapacity,
  type DynamoDBClient,
  GetItemCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import type { SerializedError } from '../errors';
import { MAX_BATCH_GET_KEYS } from '../layout/aws-limits';
import { type JobStoreSettings, type JobWrite, type PriorState, TRANSITIONS } from '../policy/job-rules';
import type { DependentEdge, HistoryEntry, JobIdentity, JobRecord, JobRef, JobState } from '../track/job-record';
import type { ArchiveReason } from '../wire/archive-reasons';
import { Expression, fromItem, isConditionFailure } from './dynamo-values';

/** Write units consumed, summed from DynamoDB's own ConsumedCapacity answers. */
export interface CapacityMeter {
  writeUnits: number;
  readUnits: number;
}

/** Keys per BatchGetItem call. */
export const BATCH_GET = MAX_BATCH_GET_KEYS;

/** The jobs table of a version, on one client, its consumed capacity metered. */
export class DynamoJobTable {
  readonly capacity: CapacityMeter = { writeUnits: 0, readUnits: 0 };

  constructor(
    readonly tableName: string,
    readonly settings: JobStoreSettings,
    readonly dynamo: DynamoDBClient,
  ) {}

  meter(out: { ConsumedCapacity?: ConsumedCapacity | undefined }, kind: 'write' | 'read'): void {
    const units = out.ConsumedCapacity?.CapacityUnits ?? 0;
    if (kind === 'write') this.capacity.writeUnits += units;
    else this.capacity.readUnits += units;
  }

  /**
   * One conditional UpdateItem. Landed: the item as written (its history trimmed to the limit), or
   * with `returns: 'old'` the item as it was before (none for a new one), or with `'none'` nothing.
   * Refused: the item as the condition found it, if there is one (`atCheck`), else as read after.
   */
  async write(
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

  /** One conditional UpdateItem on any item of the table, returning nothing: whether it landed. */
  async update(key: string, e: Pick<Expression, 'params'>, expr: { update: string; condition: string }): Promise<boolean> {
    try {
      const out = await this.dynamo.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: { jobId: { S: key } },
          UpdateExpression: expr.update,
          ConditionExpression: expr.condition,
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

  /**
   * Keeps the newest `historyLimit` entries: removes the oldest ones from the head of the list, on
   * condition the list is still the length it was read at (an append racing in trims itself).
   */
  async trimHistory(record: JobRecord): Promise<JobRecord> {
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
  async getItem(key: string, consistent = true): Promise<Record<string, AttributeValue> | undefined> {
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

  async getMany(jobIds: readonly string[]): Promise<JobRecord[]> {
    const found = new Map((await this.batchGet([...new Set(jobIds)])).map((item) => [item.jobId?.S, toRecord(item)]));
    return jobIds.map((id) => found.get(id)).filter((r): r is JobRecord => r !== undefined);
  }

  /** Items by key, 100 a BatchGetItem, strongly consistent; keys the service leaves unprocessed are asked again with backoff. */
  async batchGet(keys: readonly string[]): Promise<Array<Record<string, AttributeValue>>> {
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
}

/** `#name = :value` for each defined field. */
export function assignments(e: Expression, fields: Record<string, unknown>): string {
  return Object.entries(fields)
    .filter(([, value]) => value !== undefined)
    .map(([name, value]) => `${e.name(name)} = ${e.value(value)}`)
    .join(', ');
}

/** A job's reference fields as item attributes (the key, `jobId`, is the UpdateItem's own). */
export function refFields(r: JobRef): Record<string, unknown> {
  return {
    task: r.task,
    payloadDigest: r.payloadDigest,
    queue: r.queue,
    version: r.version,
    publishedAt: r.publishedAt,
    tags: r.tags && r.tags.length > 0 ? r.tags : undefined,
    startBy: r.startBy,
    key: r.key,
    seq: r.seq,
  };
}

/**
 * The condition under which `write` may land: the states its row of `TRANSITIONS` allows it to
 * start from (no item at all, where `absent` is one), and the job's identity where the row asks.
 */
export function transitionCondition(
  e: Expression,
  write: Exclude<JobWrite, 'claim' | 'takeOver' | 'complete'>,
  identity?: JobIdentity,
): string {
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

/** A dependent as a member of the `dependents` string set: "id index size" (job ids have no spaces). */
export function encodeEdge(edge: DependentEdge): string {
  return `${edge.id} ${edge.index} ${edge.size}`;
}

function decodeEdge(text: string): DependentEdge {
  const [id, index, size] = text.split(' ');
  return { id: id as string, index: Number(index), size: Number(size) };
}

export function toRecord(item: Record<string, AttributeValue>): JobRecord {
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
    'retryAfters',
    'parks',
    'waitToken',
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
    'key',
    'seq',
    'payload',
    'duplicateOf',
    'cancelRequestedAt',
    'progress',
    'progressAt',
    'steps',
    'archiveHolder',
    'archiveUntil',
  ]) {
    if (raw[key] !== undefined && raw[key] !== null) record[key] = raw[key];
  }
  if (Array.isArray(raw.dependents))
    record.dependents = (raw.dependents as string[]).map(decodeEdge).sort((a, b) => a.id.localeCompare(b.id) || a.index - b.index);
  return record as unknown as JobRecord & { reason?: ArchiveReason; lastError?: SerializedError };
}
