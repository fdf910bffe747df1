import {
  CreateTableCommand,
  DescribeTableCommand,
  type DynamoDBClient,
  ResourceInUseException,
  UpdateTimeToLiveCommand,
} from '@aws-sdk/client-dynamodb';
import type { TaskworkerConfig } from '../config/app-config';
import { TABLES, tableNames } from '../layout/tables';

/**
 * Creates a version's jobs and stats tables from the shared layout (on-demand, TTL on), as the
 * CDK stack does in AWS. Idempotent. Used by `taskworker dev` on the emulator.
 */
export async function createVersionTables(
  dynamo: DynamoDBClient,
  config: TaskworkerConfig,
  version: string,
): Promise<{ jobs: string; stats: string }> {
  const names = tableNames(config.app, version);
  for (const spec of TABLES) {
    const TableName = names[spec.role];
    const attributes = new Map<string, 'S' | 'N'>([[spec.partitionKey.name, spec.partitionKey.type]]);
    for (const index of spec.indexes) {
      attributes.set(index.partitionKey.name, index.partitionKey.type);
      attributes.set(index.sortKey.name, index.sortKey.type);
    }
    try {
      await dynamo.send(
        new CreateTableCommand({
          TableName,
          BillingMode: 'PAY_PER_REQUEST',
          AttributeDefinitions: [...attributes].map(([AttributeName, AttributeType]) => ({ AttributeName, AttributeType })),
          KeySchema: [{ AttributeName: spec.partitionKey.name, KeyType: 'HASH' }],
          ...(spec.indexes.length > 0
            ? {
                GlobalSecondaryIndexes: spec.indexes.map((index) => ({
                  IndexName: index.name,
                  KeySchema: [
                    { AttributeName: index.partitionKey.name, KeyType: 'HASH' },
                    { AttributeName: index.sortKey.name, KeyType: 'RANGE' },
                  ],
                  Projection: { ProjectionType: 'ALL' },
                })),
              }
            : {}),
        }),
      );
    } catch (error) {
      if (!(error instanceof ResourceInUseException || (error instanceof Error && error.name === 'ResourceInUseException'))) throw error;
    }
    await waitForActive(dynamo, TableName);
    try {
      await dynamo.send(
        new UpdateTimeToLiveCommand({ TableName, TimeToLiveSpecification: { AttributeName: spec.ttlAttribute, Enabled: true } }),
      );
    } catch (error) {
      // dynalite does not implement TTL; AWS (and the CDK stack) enable it. Anything else is real.
      if (!(error instanceof Error && /UnknownOperation|not supported|UnrecognizedClient/i.test(`${error.name} ${error.message}`)))
        throw error;
    }
  }
  return names;
}

/**
 * Polls until the table is ACTIVE. (The SDK's waiter leaves its max-wait timer running after it
 * resolves, which holds a short-lived process open for that long.)
 */
async function waitForActive(dynamo: DynamoDBClient, TableName: string, timeoutMs = 60_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const out = await dynamo.send(new DescribeTableCommand({ TableName }));
    if (out.Table?.TableStatus === 'ACTIVE') return;
    if (Date.now() > until) throw new Error(`table ${TableName} is still ${out.Table?.TableStatus} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}
