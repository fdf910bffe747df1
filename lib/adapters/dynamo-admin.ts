import {
  CreateTableCommand,
  type DynamoDBClient,
  ResourceInUseException,
  UpdateTimeToLiveCommand,
  waitUntilTableExists,
} from '@aws-sdk/client-dynamodb';
import { type TaskworkerConfig, tableNames } from '../config';
import { TABLES } from '../table-layout';

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
    await waitUntilTableExists({ client: dynamo, maxWaitTime: 30, minDelay: 1 }, { TableName });
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
