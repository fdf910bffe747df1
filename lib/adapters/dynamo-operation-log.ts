import { type DynamoDBClient, GetItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { TTL_ATTRIBUTE } from '../layout/tables';
import { utcDay } from '../policy/stat-sums';
import { type OperationEntry, type OperationLog, operationsKey } from '../track/operation-log';
import { fromItem, toAttribute } from './dynamo-values';

/** Days an operations item is kept (the stats table's TTL attribute `expiresAt`, epoch seconds). */
const KEPT_DAYS = 400;

/**
 * {@link OperationLog} on the version's stats table: one item per UTC day, its `entries` a list each
 * operation appends to (one UpdateItem, `list_append`, so two operators logging at once both land).
 */
export class DynamoOperationLog implements OperationLog {
  constructor(
    private readonly tableName: string,
    private readonly dynamo: DynamoDBClient,
  ) {}

  async record(entry: OperationEntry): Promise<void> {
    await this.dynamo.send(
      new UpdateItemCommand({
        TableName: this.tableName,
        Key: { pk: { S: operationsKey(utcDay(entry.at)) } },
        UpdateExpression: 'SET #entries = list_append(if_not_exists(#entries, :none), :entry), #expiresAt = :expiresAt',
        ExpressionAttributeNames: { '#entries': 'entries', '#expiresAt': TTL_ATTRIBUTE },
        ExpressionAttributeValues: {
          ':none': { L: [] },
          ':entry': { L: [toAttribute(entry)] },
          ':expiresAt': { N: String(Math.floor(entry.at / 1000) + KEPT_DAYS * 86_400) },
        },
      }),
    );
  }

  async day(day: string): Promise<OperationEntry[]> {
    const out = await this.dynamo.send(
      new GetItemCommand({ TableName: this.tableName, Key: { pk: { S: operationsKey(day) } }, ConsistentRead: true }),
    );
    return out.Item ? (((fromItem(out.Item) as { entries?: OperationEntry[] }).entries ?? []) as OperationEntry[]) : [];
  }
}
