/**
 * Flows: jobs that wait for others, the dependents on each dependency's record, and the count items
 * beside them (`<id> w`, `<id> w<shard>`) that say when a dependent may run.
 */
import { UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { COUNT_SHARD_SIZE, shardCount, shardSize } from '../policy/dependency-rules';
import { dueShardOf } from '../policy/due-times';
import { expiresAt, indexKey, permits, sameJob, TERMINAL_STATES } from '../policy/job-rules';
import type {
  AddDependentResult,
  DependencyCount,
  DependentEdge,
  HistoryEntry,
  JobRecord,
  ParkedJob,
  WaitRequest,
  WaitResult,
} from '../track/job-record';
import type { ArchiveReason } from '../wire/archive-reasons';
import { assignments, type DynamoJobTable, encodeEdge, refFields, toRecord, transitionCondition } from './dynamo-job-table';
import { Expression, fromItem, isConditionFailure } from './dynamo-values';

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

export class DynamoJobFlows {
  constructor(private readonly table: DynamoJobTable) {}

  async wait(r: WaitRequest): Promise<WaitResult> {
    const e = new Expression();
    const outcome = await this.table.write(
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
          expiresAt: expiresAt(r.now, this.table.settings.retentionDays),
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
      const out = await this.table.dynamo.send(
        new UpdateItemCommand({
          TableName: this.table.tableName,
          Key: { jobId: { S: dependencyId } },
          UpdateExpression: `ADD ${e.name('dependents')} ${e.stringSet([encodeEdge(edge)])}`,
          ConditionExpression: transitionCondition(e, 'addDependent'),
          ReturnValues: 'ALL_NEW',
          ReturnConsumedCapacity: 'TOTAL',
          ...e.params(),
        }),
      );
      this.table.meter(out, 'write');
      const record = toRecord(out.Attributes ?? {});
      return TERMINAL_STATES.includes(record.state) ? { outcome: 'ended', record } : { outcome: 'added' };
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
      return { outcome: 'unknown' };
    }
  }

  async countDependency(edge: DependentEdge, dependencyId: string, failed: boolean, now: number): Promise<DependencyCount> {
    const shard = Math.floor(edge.index / COUNT_SHARD_SIZE);
    const ttl = expiresAt(now, this.table.settings.retentionDays);
    const rootSets = (r: Expression) => [
      `${r.name('size')} = ${r.value(shardCount(edge.size))}`,
      `${r.name('expiresAt')} = ${r.value(ttl)}`,
    ];
    // A failure is named on the root before it is counted in its shard: whoever completes that shard
    // (this count or another member's) then finds it on the root. Written after, a count cut between
    // the two writes (or another member's count landing in between) left a complete root without
    // the failure, and the dependent was released though a dependency had failed.
    let root: Record<string, unknown> | undefined;
    if (failed) {
      const f = new Expression();
      const first = `${f.name('firstFailure')} = if_not_exists(${f.name('firstFailure')}, ${f.value(dependencyId)})`;
      root = await this.updateCountItem(rootKey(edge.id), f, { update: `SET ${[...rootSets(f), first].join(', ')}` });
    }
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
    if (!shardDone) return root ? countFrom(root) : { complete: false };
    const r = new Expression();
    root = await this.updateCountItem(rootKey(edge.id), r, {
      update: `ADD ${r.name('shards')} ${r.numberSet([shard])} SET ${rootSets(r).join(', ')}`,
    });
    return countFrom(root);
  }

  async dependencyCount(dependentId: string): Promise<DependencyCount> {
    const item = await this.table.getItem(rootKey(dependentId));
    return item ? countFrom(fromItem(item)) : { complete: false };
  }

  /** Adds to a count item; a condition that fails (already counted) answers with the item as it is. */
  private async updateCountItem(
    key: string,
    e: Expression,
    expr: { update: string; condition?: string; returnOld?: boolean },
  ): Promise<Record<string, unknown>> {
    try {
      const out = await this.table.dynamo.send(
        new UpdateItemCommand({
          TableName: this.table.tableName,
          Key: { jobId: { S: key } },
          UpdateExpression: expr.update,
          ...(expr.condition ? { ConditionExpression: expr.condition } : {}),
          ReturnValues: expr.returnOld ? 'ALL_OLD' : 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          ReturnConsumedCapacity: 'TOTAL',
          ...e.params(),
        }),
      );
      this.table.meter(out, 'write');
      // `taken`: the update landed (a condition that failed answers with the item as it is, without it).
      return { ...fromItem(out.Attributes ?? {}), taken: true };
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
      if (error.Item) return fromItem(error.Item);
      const item = await this.table.getItem(key);
      return item ? fromItem(item) : {};
    }
  }

  async release(dependentId: string, now: number): Promise<ParkedJob | undefined> {
    const e = new Expression();
    const history = e.name('history');
    const entry: HistoryEntry = { what: 'released', when: now, detail: 'its dependencies ended' };
    try {
      const out = await this.table.dynamo.send(
        new UpdateItemCommand({
          TableName: this.table.tableName,
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
      this.table.meter(out, 'write');
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
      const record = await this.table.get(dependentId);
      if (!record || permits('failWaiting', record) !== 'ok') return undefined;
      const e = new Expression();
      const history = e.name('history');
      const entry: HistoryEntry = { what: 'archived', when: now, detail: `${reason}: ${detail}` };
      const outcome = await this.table.write(dependentId, e, {
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
    const shards = await this.table.batchGet(Array.from({ length: shardCount(edge.size) }, (_, s) => shardKey(edge.id, s)));
    if (shards.some((item) => members(fromItem(item).failed) > 0)) return { stillFailed: true };
    return { stillFailed: false };
  }

  async reopen(dependentId: string, now: number): Promise<JobRecord | undefined> {
    const record = await this.table.get(dependentId);
    if (!record || permits('reopen', record) !== 'ok') return undefined;
    const e = new Expression();
    const history = e.name('history');
    const entry: HistoryEntry = { what: 'waiting', when: now, detail: 'a failed dependency was replayed' };
    const outcome = await this.table.write(dependentId, e, {
      update:
        `SET ${assignments(e, { state: 'waiting', updatedAt: now, queueState: indexKey(record.queue, 'waiting') })}, ` +
        `${history} = list_append(${history}, ${e.value([entry])}) REMOVE ${e.name('reason')}, ${e.name('finishedAt')}`,
      condition: transitionCondition(e, 'reopen'),
    });
    return outcome.landed ? outcome.record : undefined;
  }
}
