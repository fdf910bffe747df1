import { type DynamoDBClient, paginateScan, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { TTL_ATTRIBUTE } from '../layout/tables';
import { type WorkerItem, type WorkerRegistry, workerExpiresAt } from '../track/worker-registry';
import { Expression, fromItem, isConditionFailure } from './dynamo-values';

/** Worker items' keys in the version's stats table: `worker:<invocation id>` (no stats, limit or controls key starts so). */
export const WORKER_KEY_PREFIX = 'worker:';

/**
 * {@link WorkerRegistry} on the version's stats table: one item per working invocation, written with
 * UpdateItem only (the dispatcher's existing permission on that table), kept under 1 KB so each
 * write is one write unit, expiring an hour past its invocation's deadline (TTL).
 *
 * Listing is a Scan of the stats table filtered to worker items. The table is small by design (an
 * item per queue and task per day, the limits, the controls): the operator's read pays for it, and
 * the dispatcher's writes stay one per start, beat and end — no index item every invocation would
 * have to update (a hot key billed by its growing size), no second index doubling each beat's writes.
 */
export class DynamoWorkerRegistry implements WorkerRegistry {
  constructor(
    private readonly tableName: string,
    private readonly dynamo: DynamoDBClient,
  ) {}

  async beat(item: WorkerItem): Promise<void> {
    const e = new Expression();
    const fields: Record<string, unknown> = { ...item, [TTL_ATTRIBUTE]: workerExpiresAt(item.deadline) };
    const sets = Object.entries(fields)
      .filter(([, v]) => v !== undefined)
      .map(([name, v]) => `${e.name(name)} = ${e.value(v)}`);
    try {
      await this.dynamo.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: { pk: { S: `${WORKER_KEY_PREFIX}${item.id}` } },
          UpdateExpression: `SET ${sets.join(', ')}`,
          // A beat that lands after the end does not bring the worker back.
          ConditionExpression: `attribute_not_exists(${e.name('endedAt')})`,
          ReturnConsumedCapacity: 'TOTAL',
          ...e.params(),
        }),
      );
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
    }
  }

  async end(id: string, now: number): Promise<void> {
    const e = new Expression();
    try {
      await this.dynamo.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: { pk: { S: `${WORKER_KEY_PREFIX}${id}` } },
          UpdateExpression: `SET ${e.name('endedAt')} = ${e.value(now)}, ${e.name('heardAt')} = ${e.value(now)}, ${e.name('jobs')} = ${e.value([])}, ${e.name('held')} = ${e.value(0)}`,
          // Only an item a beat wrote: an end alone would leave a worker without its fields.
          ConditionExpression: `attribute_exists(${e.name('workerId')})`,
          ReturnConsumedCapacity: 'TOTAL',
          ...e.params(),
        }),
      );
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
    }
  }

  async list(): Promise<WorkerItem[]> {
    const items: WorkerItem[] = [];
    const pages = paginateScan(
      { client: this.dynamo },
      {
        TableName: this.tableName,
        FilterExpression: 'begins_with(#pk, :prefix)',
        ExpressionAttributeNames: { '#pk': 'pk' },
        ExpressionAttributeValues: { ':prefix': { S: WORKER_KEY_PREFIX } },
      },
    );
    for await (const page of pages) {
      for (const raw of page.Items ?? []) {
        const { pk: _pk, [TTL_ATTRIBUTE]: _ttl, ...item } = fromItem(raw) as Record<string, unknown>;
        items.push(item as unknown as WorkerItem);
      }
    }
    return items;
  }
}
