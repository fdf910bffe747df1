import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createVersionTables } from '../../lib/adapters/dynamo-admin';
import { DynamoJobStore } from '../../lib/adapters/dynamo-job-store';
import { type Emulators, startEmulators } from '../../lib/local/emulators';
import { appConfig } from '../helpers/factories';

/**
 * A dependent registers with each of its dependencies (`addDependent`). Found by an outside harness:
 * a dependent sent just before its members failed its condition on a member with no record yet,
 * the store then read the record the member's first claim had created meanwhile (`running`), took
 * it as ended and counted it as a failed dependency: 8 of 30 healthy flows were archived
 * `dependency-failed`. The store now answers from the write itself, never from a read after it.
 */
let emulators: Emulators;
let client: DynamoDBClient;
let tables: { jobs: string; stats: string };
/** Runs once, right after the next UpdateItem on the key it names failed its condition: a write landing in that gap. */
let afterRefusal: { key: string; run: () => Promise<void> } | undefined;

beforeAll(async () => {
  emulators = await startEmulators();
  client = new DynamoDBClient({
    region: 'us-east-1',
    endpoint: emulators.dynamodbEndpoint,
    credentials: { accessKeyId: 'l', secretAccessKey: 'l' },
  });
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const key = (args.input as { Key?: { jobId?: { S?: string } } }).Key?.jobId?.S;
      try {
        return await next(args);
      } catch (error) {
        const race = afterRefusal;
        if (
          race &&
          key === race.key &&
          context.commandName === 'UpdateItemCommand' &&
          (error as Error).name === 'ConditionalCheckFailedException'
        ) {
          afterRefusal = undefined;
          await race.run();
        }
        throw error;
      }
    },
    { step: 'initialize', name: 'writeInTheGap' },
  );
  tables = await createVersionTables(client, appConfig(), 'race');
});
afterAll(async () => {
  client.destroy();
  await emulators.stop();
});

const settings = { historyLimit: 20, retentionDays: 7 };
const store = () => new DynamoJobStore(tables.jobs, settings, client);

/** The dependency's first claim (and, with `succeed`, its success), as a dispatcher writes them. */
async function runDependency(jobId: string, succeed: boolean): Promise<void> {
  const now = Date.now();
  const jobs = store();
  const claim = await jobs.claim({
    jobId,
    task: 'ok',
    payloadDigest: 'd1',
    queue: 'urgent',
    version: 'race',
    publishedAt: now,
    workerId: 'w1',
    now,
    leaseUntil: now + 30_000,
  });
  if (claim.outcome !== 'claimed') throw new Error(`expected a claim, got ${claim.outcome}`);
  if (succeed) await jobs.complete({ jobId, token: 1, state: 'succeeded', workerId: 'w1', now: now + 1 }, claim.record);
}

describe('DynamoJobStore.addDependent', () => {
  it('answers what its own write saw: a dependency first claimed just after the condition failed is unknown, never ended', async () => {
    afterRefusal = { key: 'dep-late', run: () => runDependency('dep-late', false) };
    const added = await store().addDependent('dep-late', { id: 'waits-on-late', index: 0, size: 1 }, Date.now());
    expect(afterRefusal).toBeUndefined();
    // Unknown: the dependent's message comes back and registers again, finding the dependency then.
    expect(added).toEqual({ outcome: 'unknown' });
    expect(await store().addDependent('dep-late', { id: 'waits-on-late', index: 0, size: 1 }, Date.now())).toEqual({ outcome: 'added' });
  });

  it('records the edge on a dependency that runs: it counts the dependent when it ends', async () => {
    await runDependency('dep-running', false);
    expect(await store().addDependent('dep-running', { id: 'waits-on-running', index: 0, size: 1 }, Date.now())).toEqual({
      outcome: 'added',
    });
    expect((await store().get('dep-running'))?.dependents).toEqual([{ id: 'waits-on-running', index: 0, size: 1 }]);
  });

  it('records the edge on a dependency that ended too (jobs show lists it, a replay finds it) and says it ended', async () => {
    await runDependency('dep-done', true);
    const added = await store().addDependent('dep-done', { id: 'waits-on-done', index: 0, size: 1 }, Date.now());
    expect(added).toMatchObject({ outcome: 'ended', record: { state: 'succeeded' } });
    const record = await store().get('dep-done');
    expect(record?.dependents).toEqual([{ id: 'waits-on-done', index: 0, size: 1 }]);
    // The time it ended is kept.
    expect(record?.updatedAt).toBe(record?.finishedAt);
  });

  it('answers unknown for a dependency that has no record at all', async () => {
    expect(await store().addDependent('never-published', { id: 'orphan', index: 0, size: 1 }, Date.now())).toEqual({ outcome: 'unknown' });
  });
});
