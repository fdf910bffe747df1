/**
 * The order of `ordered` tasks' keys, in the jobs table beside the jobs: one item per task and key
 * (`<task> order <key>`) with its counter (`last`, raised by the publisher's one ADD per batch of
 * a key), the number whose job may run (`next`, moved by one conditional write per job end), and a
 * gap's first sighting. Each write pushes the item's TTL on: a key in use never expires, an idle
 * one goes after the retention and starts again from 1.
 */
import { UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { expiresAt, orderItemKey } from '../policy/job-rules';
import type { KeyOrder } from '../track/job-stores';
import type { DynamoJobTable } from './dynamo-job-table';
import { Expression, fromItem } from './dynamo-values';

export class DynamoJobOrders {
  constructor(private readonly table: DynamoJobTable) {}

  async takeNumbers(task: string, key: string, count: number, now: number): Promise<number> {
    const e = new Expression();
    const out = await this.table.dynamo.send(
      new UpdateItemCommand({
        TableName: this.table.tableName,
        Key: { jobId: { S: orderItemKey(task, key) } },
        // A key's first numbering starts its `movedAt`: a line that has not moved since is looked at.
        UpdateExpression: `ADD ${e.name('last')} ${e.value(count)} SET ${e.name('expiresAt')} = ${e.value(this.expiry(now))}, ${e.name('movedAt')} = if_not_exists(${e.name('movedAt')}, ${e.value(now)})`,
        ReturnValues: 'UPDATED_NEW',
        ReturnConsumedCapacity: 'TOTAL',
        ...e.params(),
      }),
    );
    this.table.meter(out, 'write');
    return Number(fromItem(out.Attributes ?? {}).last);
  }

  async keyOrder(task: string, key: string): Promise<KeyOrder> {
    const raw = fromItem((await this.table.getItem(orderItemKey(task, key))) ?? {});
    const next = typeof raw.next === 'number' ? raw.next : 1;
    return {
      last: typeof raw.last === 'number' ? raw.last : 0,
      next,
      ...(raw.gapAt === next && typeof raw.gapSince === 'number' ? { gapSince: raw.gapSince } : {}),
      ...(typeof raw.movedAt === 'number' ? { movedAt: raw.movedAt } : {}),
    };
  }

  async advanceOrder(task: string, key: string, from: number, now: number): Promise<boolean> {
    const e = new Expression();
    const next = e.name('next');
    return this.table.update(orderItemKey(task, key), e, {
      // A key never moved has no `next`: it stands at 1.
      update: `SET ${next} = ${e.value(from + 1)}, ${e.name('movedAt')} = ${e.value(now)}, ${e.name('expiresAt')} = ${e.value(this.expiry(now))}`,
      condition: from === 1 ? `attribute_not_exists(${next}) OR ${next} = ${e.value(from)}` : `${next} = ${e.value(from)}`,
    });
  }

  async noteGap(task: string, key: string, at: number, now: number): Promise<number | undefined> {
    const e = new Expression();
    const next = e.name('next');
    const gapAt = e.name('gapAt');
    const standsAt = at === 1 ? `(attribute_not_exists(${next}) OR ${next} = ${e.value(at)})` : `${next} = ${e.value(at)}`;
    const noted = await this.table.update(orderItemKey(task, key), e, {
      update: `SET ${gapAt} = ${e.value(at)}, ${e.name('gapSince')} = ${e.value(now)}`,
      condition: `${standsAt} AND (attribute_not_exists(${gapAt}) OR ${gapAt} <> ${e.value(at)})`,
    });
    if (noted) return now;
    // Noted before (its first sighting stands), or `next` has moved on.
    const order = await this.keyOrder(task, key);
    return order.next === at ? order.gapSince : undefined;
  }

  private expiry(now: number): number {
    return expiresAt(now, this.table.settings.retentionDays);
  }
}
