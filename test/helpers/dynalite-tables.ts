import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createVersionTables } from '../../lib/adapters/dynamo-admin';
import { resolveConfig } from '../../lib/config/app-config';
import { type Emulators, startEmulators } from '../../lib/local/emulators';

/**
 * A conformance suite's setup and teardown on dynalite: the emulators, a client, and a version's
 * tables (one queue, `urgent`) for `build` to put the store under test on.
 */
export function onDynaliteTables<S>(
  build: (dynamo: DynamoDBClient, names: Awaited<ReturnType<typeof createVersionTables>>) => Promise<S> | S,
): [setup: () => Promise<S>, teardown: () => Promise<void>] {
  let emulators: Emulators | undefined;
  let dynamo: DynamoDBClient | undefined;
  return [
    async () => {
      emulators = await startEmulators();
      dynamo = new DynamoDBClient({
        region: 'us-east-1',
        endpoint: emulators.dynamodbEndpoint,
        credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
      });
      const config = resolveConfig({ app: 'conf', queues: [{ name: 'urgent', priority: 1 }] });
      return build(dynamo, await createVersionTables(dynamo, config, 'v1'));
    },
    async () => {
      dynamo?.destroy();
      await emulators?.stop();
    },
  ];
}
