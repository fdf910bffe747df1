import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createVersionTables } from '../../lib/adapters/dynamo-admin';
import { DynamoStatsStore } from '../../lib/adapters/dynamo-tracking';
import { DynamoWorkerRegistry } from '../../lib/adapters/dynamo-workers';
import { resolveConfig } from '../../lib/config';
import { type Emulators, startEmulators } from '../../lib/local/emulators';
import { emptyDuration } from '../../lib/track/stats';
import { workerRegistryConformance } from '../conformance/worker-registry';

let emulators: Emulators | undefined;
let dynamo: DynamoDBClient | undefined;

workerRegistryConformance(
  'DynamoDB adapter on dynalite (beside stats items)',
  async () => {
    emulators = await startEmulators();
    dynamo = new DynamoDBClient({
      region: 'us-east-1',
      endpoint: emulators.dynamodbEndpoint,
      credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    });
    const config = resolveConfig({ app: 'conf', queues: [{ name: 'urgent', priority: 1 }] });
    const names = await createVersionTables(dynamo, config, 'v1');
    // A stats item in the same table: the listing leaves it out.
    await new DynamoStatsStore(names.stats, { client: dynamo }).add(
      { queue: 'urgent', day: '2026-01-01', counters: { succeeded: 1 }, archived: {}, wait: emptyDuration(), run: emptyDuration() },
      2_000_000_000,
    );
    return new DynamoWorkerRegistry(names.stats, dynamo);
  },
  async () => {
    dynamo?.destroy();
    await emulators?.stop();
  },
);
