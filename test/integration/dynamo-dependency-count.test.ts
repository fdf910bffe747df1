import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createVersionTables } from '../../lib/adapters/dynamo-admin';
import { DynamoJobStore } from '../../lib/adapters/dynamo-job-store';
import { type Emulators, startEmulators } from '../../lib/local/emulators';
import { appConfig } from '../helpers/factories';

/**
 * A dependency counts itself into its dependent with two writes: its shard item (the member
 * indices counted, done or failed) and the root (the shards complete, the first failure). Found by
 * the dependency chaos suite: a failed member's count was cut by a kill between its shard write and
 * its root write; the last member to succeed then completed the shard, found a root without the
 * failure, and released the dependent, which ran though its dependency had been cancelled. The same
 * gap opens without a kill when another member's count lands in between. A failure is now named on
 * the root before its shard counts it.
 */
let emulators: Emulators;
let client: DynamoDBClient;
let tables: { jobs: string; stats: string };
/** Runs once, right after the next UpdateItem on a key it matches has landed: a kill there, or a write in the gap. */
let afterWrite: { matches: (key: string) => boolean; run: () => Promise<void> } | undefined;

beforeAll(async () => {
  emulators = await startEmulators();
  client = new DynamoDBClient({
    region: 'us-east-1',
    endpoint: emulators.dynamodbEndpoint,
    credentials: { accessKeyId: 'l', secretAccessKey: 'l' },
  });
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const out = await next(args);
      const key = (args.input as { Key?: { jobId?: { S?: string } } }).Key?.jobId?.S;
      const hook = afterWrite;
      if (hook && key !== undefined && hook.matches(key) && context.commandName === 'UpdateItemCommand') {
        afterWrite = undefined;
        await hook.run();
      }
      return out;
    },
    { step: 'initialize', name: 'afterWrite' },
  );
  tables = await createVersionTables(client, appConfig(), 'count');
});
afterAll(async () => {
  client.destroy();
  await emulators.stop();
});

const store = () => new DynamoJobStore(tables.jobs, { historyLimit: 20, retentionDays: 7 }, client);
/** The dependent's dependency number `index` of two. */
const edge = (dependent: string, index: number) => ({ id: dependent, index, size: 2 });

describe('DynamoJobStore.countDependency', () => {
  it('names a failure to whoever completes the count, though the failing count was cut after its shard write', async () => {
    // The failed member's process dies as soon as its shard item has it (the call fails there).
    afterWrite = {
      matches: (key) => key === 'cut w0',
      run: async () => {
        throw new Error('process lost');
      },
    };
    await expect(store().countDependency(edge('cut', 1), 'cut-m1', true, Date.now())).rejects.toThrow('process lost');
    expect(afterWrite).toBeUndefined();
    // The other member succeeds and completes the shard: the count it reads back names the failure.
    expect(await store().countDependency(edge('cut', 0), 'cut-m0', false, Date.now())).toEqual({ complete: true, firstFailure: 'cut-m1' });
  });

  it('names a failure to whoever completes the count, when another member’s count lands between the failure’s two writes', async () => {
    const counts: Array<{ complete: boolean; firstFailure?: string }> = [];
    // Right after the failing count's first write (to either item), the other member's whole count.
    afterWrite = {
      matches: (key) => key.startsWith('gap w'),
      run: async () => {
        counts.push(await store().countDependency(edge('gap', 0), 'gap-m0', false, Date.now()));
      },
    };
    counts.push(await store().countDependency(edge('gap', 1), 'gap-m1', true, Date.now()));
    expect(counts).toHaveLength(2);
    // Whichever count completed it says a dependency failed (none says complete without it).
    expect(counts.filter((c) => c.complete)).toEqual([{ complete: true, firstFailure: 'gap-m1' }]);
  });
});
