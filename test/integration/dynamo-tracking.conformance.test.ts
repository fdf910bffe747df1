import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createVersionTables } from '../../lib/adapters/dynamo-admin';
import { DynamoLimitStore } from '../../lib/adapters/dynamo-limits';
import { DynamoJobStore, DynamoStatsStore } from '../../lib/adapters/dynamo-tracking';
import { resolveConfig } from '../../lib/config';
import { type Emulators, startEmulators } from '../../lib/local/emulators';
import { CONFORMANCE_SETTINGS, jobStoreConformance } from '../conformance/job-store';

let emulators: Emulators | undefined;
let dynamo: DynamoDBClient | undefined;

jobStoreConformance(
  'DynamoDB adapters on dynalite',
  async () => {
    emulators = await startEmulators();
    dynamo = new DynamoDBClient({
      region: 'us-east-1',
      endpoint: emulators.dynamodbEndpoint,
      credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    });
    const config = resolveConfig({ app: 'conf', queues: [{ name: 'urgent', priority: 1 }] });
    const names = await createVersionTables(dynamo, config, 'v1');
    return {
      jobs: new DynamoJobStore(names.jobs, CONFORMANCE_SETTINGS, { client: dynamo }),
      stats: new DynamoStatsStore(names.stats, { client: dynamo }),
      limits: new DynamoLimitStore(names.stats, dynamo),
    };
  },
  async () => {
    dynamo?.destroy();
    await emulators?.stop();
  },
);
