/**
 * The holds of tasks' keys under their `unique` rule, in the jobs table beside the jobs: one item
 * per task and key (`<task> unique <key>`), taken with one conditional UpdateItem whose condition
 * carries the window (the item's own `until`, never its TTL, which deletes late), and the record of
 * a job that joined another (`deduplicated`).
 */
import { type AttributeValue, DeleteItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { expiresAt, indexKey, uniqueItemKey } from '../policy/job-rules';
import type { DeduplicatedJob, UniqueHold, UniqueTake, UniqueWrite } from '../track/job-record';
import { assignments, type DynamoJobTable, refFields, transitionCondition } from './dynamo-job-table';
import { Expression, fromItem, isConditionFailure } from './dynamo-values';

/** How long after its window a hold's item lives before DynamoDB's TTL may delete it (seconds). */
const HOLD_TTL_SLACK_SECONDS = 3_600;

export class DynamoJobUniques {
  constructor(private readonly table: DynamoJobTable) {}

  async holdKey(take: UniqueTake, over?: UniqueHold): Promise<UniqueWrite> {
    const id = uniqueItemKey(take.task, take.key);
    const e = new Expression();
    const n = (attribute: string) => e.name(attribute);
    const condition = over
      ? `${n('holder')} = ${e.value(over.holder)} AND ${n('takenAt')} = ${e.value(over.takenAt)}`
      : `attribute_not_exists(${n('jobId')}) OR ${n('until')} <= ${e.value(take.now)} OR ${n('holder')} = ${e.value(take.jobId)}`;
    try {
      const out = await this.table.dynamo.send(
        new UpdateItemCommand({
          TableName: this.table.tableName,
          Key: { jobId: { S: id } },
          UpdateExpression: `SET ${assignments(e, {
            holder: take.jobId,
            from: take.from,
            until: take.until,
            takenAt: take.now,
            expiresAt: Math.ceil(take.until / 1000) + HOLD_TTL_SLACK_SECONDS,
          })}`,
          ConditionExpression: condition,
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          ReturnConsumedCapacity: 'TOTAL',
          ...e.params(),
        }),
      );
      this.table.meter(out, 'write');
      return { landed: true };
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
      // DynamoDB returns the item the condition saw; dynalite does not, so it is read.
      const item = error.Item ?? (await this.table.getItem(id));
      return { landed: false, hold: item ? holdOf(item) : undefined };
    }
  }

  async releaseKey(task: string, key: string, jobId: string): Promise<void> {
    const e = new Expression();
    try {
      const out = await this.table.dynamo.send(
        new DeleteItemCommand({
          TableName: this.table.tableName,
          Key: { jobId: { S: uniqueItemKey(task, key) } },
          ConditionExpression: `${e.name('holder')} = ${e.value(jobId)}`,
          ReturnConsumedCapacity: 'TOTAL',
          ...e.params(),
        }),
      );
      this.table.meter(out, 'write');
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
    }
  }

  async recordDeduplicated(job: DeduplicatedJob): Promise<boolean> {
    const e = new Expression();
    const outcome = await this.table.write(
      job.jobId,
      e,
      {
        update: `SET ${assignments(e, {
          ...refFields(job),
          state: 'deduplicated',
          attempt: 0,
          duplicateOf: job.duplicateOf,
          updatedAt: job.now,
          finishedAt: job.now,
          queueState: indexKey(job.queue, 'deduplicated'),
          history: [{ what: 'deduplicated', when: job.now, worker: job.workerId, detail: job.detail ?? `joined ${job.duplicateOf}` }],
          expiresAt: expiresAt(job.now, this.table.settings.retentionDays),
        })}`,
        condition: transitionCondition(e, 'deduplicate'),
      },
      { returns: 'none' },
    );
    return outcome.landed;
  }
}

function holdOf(item: Record<string, AttributeValue>): UniqueHold | undefined {
  const raw = fromItem(item);
  if (typeof raw.holder !== 'string') return undefined;
  return { holder: raw.holder, from: Number(raw.from), until: Number(raw.until), takenAt: Number(raw.takenAt) };
}
