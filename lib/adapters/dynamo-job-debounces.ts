/**
 * The debounce cycles of tasks' keys under their `debounce` rule, in the jobs table beside the jobs:
 * one item per task and key while a burst is open (`<task> debounce <key>`), opened or joined by one
 * UpdateItem with no read (`if_not_exists` keeps the first publish's job, time and `maxDueAt`), and
 * one item per closed cycle's job holding the body it runs with (`<job id> debounced`).
 */
import { type AttributeValue, DeleteItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { debouncedBodyKey, debounceItemKey, expiresAt } from '../policy/job-rules';
import type { DebounceCycle, DebouncePublish, DebounceWrite } from '../track/job-record';
import { assignments, type DynamoJobTable } from './dynamo-job-table';
import { Expression, fromItem, isConditionFailure } from './dynamo-values';

/** How long after its `maxDueAt` a cycle's item lives before DynamoDB's TTL may delete it (seconds): past any abandonment. */
const CYCLE_TTL_SLACK_SECONDS = 86_400;

export class DynamoJobDebounces {
  constructor(private readonly table: DynamoJobTable) {}

  async debounce(publish: DebouncePublish, over?: Pick<DebounceCycle, 'pending' | 'seq'>): Promise<DebounceWrite> {
    const e = new Expression();
    const n = (attribute: string) => e.name(attribute);
    const ttl = Math.ceil(publish.maxDueAt / 1000) + CYCLE_TTL_SLACK_SECONDS;
    const update = over
      ? `SET ${assignments(e, {
          pending: publish.jobId,
          seq: 1,
          body: publish.body,
          firstAt: publish.now,
          dueAt: publish.dueAt,
          maxDueAt: publish.maxDueAt,
          expiresAt: ttl,
        })}`
      : `SET ${n('pending')} = if_not_exists(${n('pending')}, ${e.value(publish.jobId)}), ` +
        `${n('seq')} = if_not_exists(${n('seq')}, ${e.value(0)}) + ${e.value(1)}, ` +
        `${n('firstAt')} = if_not_exists(${n('firstAt')}, ${e.value(publish.now)}), ` +
        `${n('maxDueAt')} = if_not_exists(${n('maxDueAt')}, ${e.value(publish.maxDueAt)}), ` +
        `${n('expiresAt')} = if_not_exists(${n('expiresAt')}, ${e.value(ttl)}), ` +
        assignments(e, { body: publish.body, dueAt: publish.dueAt });
    const condition = over
      ? `${n('pending')} = ${e.value(over.pending)} AND ${n('seq')} = ${e.value(over.seq)}`
      : `attribute_not_exists(${n('pending')}) OR ${n('maxDueAt')} >= ${e.value(publish.abandonedBefore)}`;
    const id = debounceItemKey(publish.task, publish.key);
    try {
      const out = await this.table.dynamo.send(
        new UpdateItemCommand({
          TableName: this.table.tableName,
          Key: { jobId: { S: id } },
          UpdateExpression: update,
          ConditionExpression: condition,
          ReturnValues: 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          ReturnConsumedCapacity: 'TOTAL',
          ...e.params(),
        }),
      );
      this.table.meter(out, 'write');
      const { body: _body, ...cycle } = cycleOf(out.Attributes ?? {}) as DebounceCycle;
      return { landed: true, started: cycle.pending === publish.jobId, cycle };
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
      // DynamoDB returns the item the condition saw; dynalite does not, so it is read.
      const item = error.Item ?? (await this.table.getItem(id));
      return { landed: false, cycle: item ? cycleOf(item) : undefined };
    }
  }

  async debounceCycle(task: string, key: string): Promise<DebounceCycle | undefined> {
    const item = await this.table.getItem(debounceItemKey(task, key));
    return item ? cycleOf(item) : undefined;
  }

  async keepDebouncedBody(cycle: DebounceCycle, now: number): Promise<boolean> {
    const e = new Expression();
    const n = (attribute: string) => e.name(attribute);
    try {
      const out = await this.table.dynamo.send(
        new UpdateItemCommand({
          TableName: this.table.tableName,
          Key: { jobId: { S: debouncedBodyKey(cycle.pending) } },
          UpdateExpression: `SET ${assignments(e, {
            body: cycle.body,
            seq: cycle.seq,
            firstAt: cycle.firstAt,
            keptAt: now,
            expiresAt: expiresAt(now, this.table.settings.retentionDays),
          })}`,
          ConditionExpression: `attribute_not_exists(${n('seq')}) OR ${n('seq')} <= ${e.value(cycle.seq)} OR ${n('firstAt')} <> ${e.value(cycle.firstAt)}`,
          ReturnConsumedCapacity: 'TOTAL',
          ...e.params(),
        }),
      );
      this.table.meter(out, 'write');
      return true;
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
      return false;
    }
  }

  async debouncedBody(jobId: string): Promise<string | undefined> {
    const item = await this.table.getItem(debouncedBodyKey(jobId));
    return item?.body?.S;
  }

  async closeDebounce(task: string, key: string, cycle: Pick<DebounceCycle, 'pending'> & { readonly seq?: number }): Promise<boolean> {
    const e = new Expression();
    const n = (attribute: string) => e.name(attribute);
    try {
      const out = await this.table.dynamo.send(
        new DeleteItemCommand({
          TableName: this.table.tableName,
          Key: { jobId: { S: debounceItemKey(task, key) } },
          ConditionExpression: [
            `${n('pending')} = ${e.value(cycle.pending)}`,
            ...(cycle.seq !== undefined ? [`${n('seq')} = ${e.value(cycle.seq)}`] : []),
          ].join(' AND '),
          ReturnConsumedCapacity: 'TOTAL',
          ...e.params(),
        }),
      );
      this.table.meter(out, 'write');
      return true;
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
      return false;
    }
  }
}

function cycleOf(item: Record<string, AttributeValue>): DebounceCycle | undefined {
  const raw = fromItem(item);
  if (typeof raw.pending !== 'string') return undefined;
  return {
    pending: raw.pending,
    seq: Number(raw.seq),
    body: typeof raw.body === 'string' ? raw.body : '',
    firstAt: Number(raw.firstAt),
    dueAt: Number(raw.dueAt),
    maxDueAt: Number(raw.maxDueAt),
  };
}
