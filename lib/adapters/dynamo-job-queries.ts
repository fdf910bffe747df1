/** What operators and publishers ask of the jobs table: jobs by state (index or scan) and by tag. */
import {
  type AttributeValue,
  DeleteItemCommand,
  QueryCommand,
  type QueryCommandInput,
  ScanCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { JOBS_BY_QUEUE_STATE_INDEX, JOBS_BY_TAG_INDEX } from '../layout/tables';
import { expiresAt, indexKey, listedFromIndex, succeededIndexKeys } from '../policy/job-rules';
import type { JobQuery, JobRecord } from '../track/job-record';
import type { LineEntry } from '../track/job-stores';
import { assignments, type DynamoJobTable, toRecord } from './dynamo-job-table';
import { Expression, fromItem } from './dynamo-values';

export class DynamoJobQueries {
  constructor(private readonly table: DynamoJobTable) {}

  async tagJob(jobId: string, tags: readonly string[], taggedAt: number): Promise<void> {
    await Promise.all(
      tags.map(async (tag) => {
        const e = new Expression();
        const at = e.name('taggedAt');
        // The first tagging time stays: a later delivery of the job does not move it up the list.
        const out = await this.table.dynamo.send(
          new UpdateItemCommand({
            TableName: this.table.tableName,
            Key: { jobId: { S: `${jobId} tag ${tag}` } },
            UpdateExpression: `SET ${assignments(e, { tag, tagged: jobId, expiresAt: expiresAt(taggedAt, this.table.settings.retentionDays) })}, ${at} = if_not_exists(${at}, ${e.value(taggedAt)})`,
            ReturnConsumedCapacity: 'TOTAL',
            ...e.params(),
          }),
        );
        this.table.meter(out, 'write');
      }),
    );
  }

  async untagJob(jobId: string, tags: readonly string[]): Promise<void> {
    await Promise.all(
      tags.map(async (tag) => {
        const out = await this.table.dynamo.send(
          new DeleteItemCommand({
            TableName: this.table.tableName,
            Key: { jobId: { S: `${jobId} tag ${tag}` } },
            ReturnConsumedCapacity: 'TOTAL',
          }),
        );
        this.table.meter(out, 'write');
      }),
    );
  }

  async oldestByTag(tag: string, limit: number): Promise<JobRecord[]> {
    const ids = await this.inOrder(
      limit,
      (e) => ({ IndexName: JOBS_BY_TAG_INDEX, KeyConditionExpression: `${e.name('tag')} = ${e.value(tag)}` }),
      (item) => String(fromItem(item).tagged),
      true,
    );
    // BatchGetItem answers in no order: back in the line's.
    const records = new Map((await this.table.getMany(ids.slice(0, limit))).map((r) => [r.jobId, r]));
    return ids.flatMap((id) => records.get(id) ?? []);
  }

  async lineEntries(tag: string, limit: number): Promise<LineEntry[]> {
    const entries = await this.inOrder(
      limit,
      (e) => ({ IndexName: JOBS_BY_TAG_INDEX, KeyConditionExpression: `${e.name('tag')} = ${e.value(tag)}` }),
      (item) => {
        const raw = fromItem(item);
        return { jobId: String(raw.tagged), at: Number(raw.taggedAt) };
      },
      true,
    );
    return entries.slice(0, limit);
  }

  async jobsByTag(tag: string, limit: number, before?: number): Promise<JobRecord[]> {
    const ids = await this.inOrder(
      limit,
      (e) => ({
        IndexName: JOBS_BY_TAG_INDEX,
        KeyConditionExpression: `${e.name('tag')} = ${e.value(tag)}${before !== undefined ? ` AND ${e.name('taggedAt')} < ${e.value(before)}` : ''}`,
      }),
      (item) => String(fromItem(item).tagged),
    );
    return this.table.getMany(ids.slice(0, limit));
  }

  /**
   * Jobs in an indexed state (retrying, archived, …, and succeeded on a queue that lists them) come
   * from the sparse per-queue index, newest first, a page of `limit` from each of the state's keys.
   * Other states are not indexed (so they cost no index write): they are found by a filtered Scan.
   */
  async list(q: JobQuery): Promise<JobRecord[]> {
    const found: JobRecord[] = [];
    if (listedFromIndex(this.table.settings.listSucceeded, q.state, q.queues)) {
      const keys = q.queues.flatMap((queue) =>
        q.state === 'succeeded' ? succeededIndexKeys(queue) : [indexKey(queue, q.state) as string],
      );
      await Promise.all(keys.map(async (key) => found.push(...(await this.newestInIndex(key, q)))));
    } else {
      let start: Record<string, AttributeValue> | undefined;
      do {
        const e = new Expression();
        const filters = [
          `${e.name('state')} = ${e.value(q.state)}`,
          `${e.name('queue')} IN (${q.queues.map((name) => e.value(name)).join(', ')})`,
        ];
        if (q.task !== undefined) filters.push(`${e.name('task')} = ${e.value(q.task)}`);
        if (q.key !== undefined) filters.push(`${e.name('key')} = ${e.value(q.key)}`);
        if (q.updatedAtMost !== undefined) filters.push(`${e.name('updatedAt')} <= ${e.value(q.updatedAtMost)}`);
        const out = await this.table.dynamo.send(
          new ScanCommand({
            TableName: this.table.tableName,
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

  /** Up to `q.limit` jobs under one state index key, newest update first. */
  private newestInIndex(key: string, q: JobQuery): Promise<JobRecord[]> {
    return this.inOrder(
      q.limit,
      (e) => ({
        IndexName: JOBS_BY_QUEUE_STATE_INDEX,
        KeyConditionExpression:
          `${e.name('queueState')} = ${e.value(key)}` +
          (q.updatedAtMost !== undefined ? ` AND ${e.name('updatedAt')} <= ${e.value(q.updatedAtMost)}` : ''),
        ...narrowedTo(e, q),
      }),
      toRecord,
    );
  }

  /** An index read newest first, a page of `limit` at a time (a filter may drop some), until `limit` items are taken or it ends. */
  /** An index query's first `limit` items, newest first (or oldest first), through as many pages as it takes. */
  private async inOrder<T>(
    limit: number,
    query: (e: Expression) => Pick<QueryCommandInput, 'IndexName' | 'KeyConditionExpression' | 'FilterExpression'>,
    take: (item: Record<string, AttributeValue>) => T,
    oldestFirst = false,
  ): Promise<T[]> {
    const found: T[] = [];
    let start: Record<string, AttributeValue> | undefined;
    do {
      const e = new Expression();
      const asked = query(e);
      const out = await this.table.dynamo.send(
        new QueryCommand({
          TableName: this.table.tableName,
          ...asked,
          ScanIndexForward: oldestFirst,
          Limit: limit,
          ReturnConsumedCapacity: 'TOTAL',
          ...(start ? { ExclusiveStartKey: start } : {}),
          ...e.params(),
        }),
      );
      this.table.meter(out, 'read');
      found.push(...(out.Items ?? []).map(take));
      start = out.LastEvaluatedKey;
    } while (start && found.length < limit);
    return found;
  }
}

/** An index query's filter on a list's task and key, if it names them. */
function narrowedTo(e: Expression, q: Pick<JobQuery, 'task' | 'key'>): Pick<QueryCommandInput, 'FilterExpression'> {
  const filters = [
    ...(q.task !== undefined ? [`${e.name('task')} = ${e.value(q.task)}`] : []),
    ...(q.key !== undefined ? [`${e.name('key')} = ${e.value(q.key)}`] : []),
  ];
  return filters.length > 0 ? { FilterExpression: filters.join(' AND ') } : {};
}
