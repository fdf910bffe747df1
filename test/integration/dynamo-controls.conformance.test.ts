import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createVersionTables } from '../../lib/adapters/dynamo-admin';
import { DynamoControlStore } from '../../lib/adapters/dynamo-controls';
import { resolveConfig } from '../../lib/config';
import { type Emulators, startEmulators } from '../../lib/local/emulators';
import { controlStoreConformance } from '../conformance/controls-store';

let emulators: Emulators | undefined;
let dynamo: DynamoDBClient | undefined;

controlStoreConformance(
  'DynamoDB adapter on dynalite',
  async () => {
    emulators = await startEmulators();
    dynamo = new DynamoDBClient({
      region: 'us-east-1',
      endpoint: emulators.dynamodbEndpoint,
      credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    });
    const config = resolveConfig({ app: 'conf', queues: [{ name: 'urgent', priority: 1 }] });
    const names = await createVersionTables(dynamo, config, 'v1');
    return new DynamoControlStore(names.stats, dynamo);
  },
  async () => {
    dynamo?.destroy();
    await emulators?.stop();
  },
);
