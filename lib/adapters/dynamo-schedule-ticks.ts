/**
 * The schedules' tick items in the jobs table beside the jobs (`~ schedule <name>`): the latest tick
 * a dispatcher saw, raised with one conditional UpdateItem that adds the catch-up's counts in the
 * same write, and the overlap's skips counted with ADD.
 */
import { UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { scheduleItemKey } from '../policy/job-rules';
import type { ScheduleTicks } from '../track/job-record';
import type { DynamoJobTable } from './dynamo-job-table';
import { Expression, fromItem } from './dynamo-values';

export class DynamoScheduleTicks {
  constructor(private readonly table: DynamoJobTable) {}

  async scheduleTicks(schedule: string): Promise<ScheduleTicks | undefined> {
    const item = await this.table.getItem(scheduleItemKey(schedule));
    if (!item) return undefined;
    const raw = fromItem(item);
    return {
      schedule,
      missed: Number(raw.missed ?? 0),
      caughtUp: Number(raw.caughtUp ?? 0),
      skipped: Number(raw.skipped ?? 0),
      ...timesOf(raw, ['lastTick', 'lastMissedAt', 'lastSkippedAt']),
    };
  }

  async noteTick(
    schedule: string,
    at: number,
    counts: { readonly missed: number; readonly caughtUp: number },
    now: number,
  ): Promise<boolean> {
    const e = new Expression();
    const n = (name: string) => e.name(name);
    const adds = [`${n('missed')} ${e.value(counts.missed)}`, `${n('caughtUp')} ${e.value(counts.caughtUp)}`];
    const sets = [`${n('lastTick')} = ${e.value(at)}`, `${n('updatedAt')} = ${e.value(now)}`];
    if (counts.missed > 0) sets.push(`${n('lastMissedAt')} = ${e.value(now)}`);
    return this.table.update(scheduleItemKey(schedule), e, {
      update: `SET ${sets.join(', ')} ADD ${adds.join(', ')}`,
      condition: `attribute_not_exists(${n('lastTick')}) OR ${n('lastTick')} < ${e.value(at)}`,
    });
  }

  async countSkipped(schedule: string, now: number): Promise<void> {
    const e = new Expression();
    const out = await this.table.dynamo.send(
      new UpdateItemCommand({
        TableName: this.table.tableName,
        Key: { jobId: { S: scheduleItemKey(schedule) } },
        UpdateExpression: `SET ${e.name('lastSkippedAt')} = ${e.value(now)} ADD ${e.name('skipped')} ${e.value(1)}`,
        ReturnConsumedCapacity: 'TOTAL',
        ...e.params(),
      }),
    );
    this.table.meter(out, 'write');
  }
}

/** The named epoch-ms fields the item has. */
function timesOf(raw: Record<string, unknown>, names: readonly string[]): Record<string, number> {
  return Object.fromEntries(names.filter((name) => typeof raw[name] === 'number').map((name) => [name, raw[name] as number]));
}
