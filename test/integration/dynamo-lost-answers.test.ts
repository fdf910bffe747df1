import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createVersionTables } from '../../lib/adapters/dynamo-admin';
import { DynamoJobStore } from '../../lib/adapters/dynamo-job-store';
import { type Emulators, startEmulators } from '../../lib/local/emulators';
import { appConfig } from '../helpers/factories';

/**
 * A DynamoDB write whose answer is lost (a timeout after the request reached the service) is
 * retried by the SDK; the retry fails its own condition because the first try landed. The job
 * store must recognise its own write, or it wastes an attempt (claim) or rejects its own outcome
 * (completion) and the job runs again.
 */
let emulators: Emulators;
let lose: Set<string>;
let plain: DynamoDBClient;
let lossy: DynamoDBClient;
let tables: { jobs: string; stats: string };

beforeAll(async () => {
  emulators = await startEmulators();
  const options = { region: 'us-east-1', endpoint: emulators.dynamodbEndpoint, credentials: { accessKeyId: 'l', secretAccessKey: 'l' } };
  plain = new DynamoDBClient(options);
  lossy = new DynamoDBClient(options);
  lose = new Set();
  // Inside the SDK's retry loop: send the request, then lose its answer, once per marked command.
  lossy.middlewareStack.add(
    (next, context) => async (args) => {
      const result = await next(args);
      if (lose.delete(context.commandName ?? '')) throw Object.assign(new Error('socket timed out'), { name: 'TimeoutError' });
      return result;
    },
    { step: 'deserialize', name: 'loseOneAnswer', priority: 'low' },
  );
  tables = await createVersionTables(plain, appConfig(), 'lost');
});
afterAll(async () => {
  plain.destroy();
  lossy.destroy();
  await emulators.stop();
});

const settings = { historyLimit: 20, retentionDays: 7 };
const ref = (jobId: string) => ({ jobId, task: 'ok', payloadDigest: 'd1', queue: 'urgent', version: 'lost', publishedAt: 1 });

describe('DynamoJobStore when an answer is lost and the SDK retries', () => {
  it('takes a claim whose first try landed as its own: attempt 1, not a lease held by someone else', async () => {
    const store = new DynamoJobStore(tables.jobs, settings, lossy);
    lose.add('UpdateItemCommand');
    const now = Date.now();
    const claim = await store.claim({ ...ref('claim-1'), workerId: 'w1', now, leaseUntil: now + 5000, claimId: 'c-1' });
    expect(claim).toMatchObject({ outcome: 'claimed', token: 1 });
    expect(lose.size).toBe(0);
    const record = await store.get('claim-1');
    expect(record).toMatchObject({ state: 'running', attempt: 1 });
    expect(record?.history.map((h) => h.what)).toEqual(['started']);
  });

  it('takes a completion whose first try landed as its own: the outcome stands, the message can be deleted', async () => {
    const store = new DynamoJobStore(tables.jobs, settings, lossy);
    const now = Date.now();
    const claim = await store.claim({ ...ref('done-1'), workerId: 'w1', now, leaseUntil: now + 5000 });
    if (claim.outcome !== 'claimed') throw new Error('expected a claim');
    lose.add('UpdateItemCommand');
    const completed = await store.complete({ jobId: 'done-1', token: 1, state: 'succeeded', workerId: 'w1', now: now + 10 }, claim.record);
    expect(completed.landed).toBe(true);
    expect(lose.size).toBe(0);
    expect(await store.get('done-1')).toMatchObject({ state: 'succeeded', attempt: 1 });
  });

  /**
   * A job claimed by w1, then its completion sent through a client whose every `UpdateItem` try
   * times out; `reachesDynamo(n)` says whether try n reaches DynamoDB before its answer is lost.
   */
  async function completeThroughTimeouts(jobId: string, maxAttempts: number, reachesDynamo: (tryNumber: number) => boolean) {
    const store = new DynamoJobStore(tables.jobs, settings, plain);
    const now = Date.now();
    const claim = await store.claim({ ...ref(jobId), workerId: 'w1', now, leaseUntil: now + 5000 });
    if (claim.outcome !== 'claimed') throw new Error('expected a claim');
    const failing = new DynamoDBClient({
      region: 'us-east-1',
      endpoint: emulators.dynamodbEndpoint,
      credentials: { accessKeyId: 'l', secretAccessKey: 'l' },
      maxAttempts,
    });
    let tries = 0;
    failing.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName !== 'UpdateItemCommand') return next(args);
        tries += 1;
        if (reachesDynamo(tries)) await next(args);
        throw Object.assign(new Error('socket timed out'), { name: 'TimeoutError' });
      },
      { step: 'deserialize', name: 'timeOutEveryTry', priority: 'low' },
    );
    try {
      const completion = { jobId, token: 1, state: 'succeeded' as const, workerId: 'w1', now: now + 10 };
      const completed = await new DynamoJobStore(tables.jobs, settings, failing)
        .complete(completion, claim.record)
        .catch((error: Error) => error);
      return { completed, tries, record: await store.get(jobId) };
    } finally {
      failing.destroy();
    }
  }

  it('takes a completion as its own when its first try landed and every retry failed: the record is read back', async () => {
    const { completed, tries, record } = await completeThroughTimeouts('done-2', 3, (n) => n === 1);
    expect(tries).toBe(3);
    expect(completed).toMatchObject({ landed: true });
    expect(record).toMatchObject({ state: 'succeeded', attempt: 1 });
  });

  it('still throws a completion that failed every try and never landed', async () => {
    const { completed, tries, record } = await completeThroughTimeouts('done-3', 2, () => false);
    expect(tries).toBe(2);
    expect(completed).toBeInstanceOf(Error);
    expect((completed as Error).message).toBe('socket timed out');
    expect(record).toMatchObject({ state: 'running', attempt: 1 });
  });

  it('still rejects a completion a newer attempt overtook, and a claim on a job another worker holds', async () => {
    const store = new DynamoJobStore(tables.jobs, settings, plain);
    const now = Date.now();
    const first = await store.claim({ ...ref('stale-1'), workerId: 'w1', now, leaseUntil: now + 1 });
    const second = await store.claim({ ...ref('stale-1'), workerId: 'w2', now: now + 5, leaseUntil: now + 5000 });
    if (first.outcome !== 'claimed' || second.outcome !== 'claimed') throw new Error('expected two claims');
    expect(second.token).toBe(2);
    expect(
      (await store.complete({ jobId: 'stale-1', token: 1, state: 'succeeded', workerId: 'w1', now: now + 10 }, first.record)).landed,
    ).toBe(false);
    const third = await store.claim({ ...ref('stale-1'), workerId: 'w3', now: now + 20, leaseUntil: now + 5000 });
    expect(third.outcome).toBe('leased');
  });

  it('does not take a second copy of the job in the same batch as its own: same worker, same instant, another claim', async () => {
    const store = new DynamoJobStore(tables.jobs, settings, plain);
    const now = Date.now();
    const lease = { workerId: 'w1', now, leaseUntil: now + 5000 };
    const first = await store.claim({ ...ref('twin-1'), ...lease, claimId: 'copy-a' });
    const second = await store.claim({ ...ref('twin-1'), ...lease, claimId: 'copy-b' });
    expect(first).toMatchObject({ outcome: 'claimed', token: 1 });
    expect(second.outcome).toBe('leased');
    // Completion lets the lease go with its claim id; a later copy is a plain duplicate.
    if (first.outcome !== 'claimed') throw new Error('expected a claim');
    await store.complete({ jobId: 'twin-1', token: 1, state: 'succeeded', workerId: 'w1', now: now + 10 }, first.record);
    expect((await store.get('twin-1'))?.leaseClaim).toBeUndefined();
    expect((await store.claim({ ...ref('twin-1'), ...lease, now: now + 20, claimId: 'copy-c' })).outcome).toBe('finished');
  });

  it('claims again when the job moved on between its failed condition and the read (no item came with the failure)', async () => {
    // dynalite, unlike DynamoDB, returns no item with a failed condition, so the store reads it
    // afterwards. Here the holder's retrying completion lands in that gap: the second delivery must
    // claim the retry, not take it for a finished job and delete its message as a duplicate.
    const now = Date.now();
    const holder = new DynamoJobStore(tables.jobs, settings, plain);
    const first = await holder.claim({ ...ref('gap-1'), workerId: 'w1', now, leaseUntil: now + 60_000 });
    if (first.outcome !== 'claimed') throw new Error('expected a claim');
    const racing = new DynamoDBClient({
      region: 'us-east-1',
      endpoint: emulators.dynamodbEndpoint,
      credentials: { accessKeyId: 'l', secretAccessKey: 'l' },
    });
    let completedInGap = false;
    racing.middlewareStack.add(
      (next, context) => async (args) => {
        try {
          return await next(args);
        } catch (error) {
          if (context.commandName === 'UpdateItemCommand' && !completedInGap) {
            completedInGap = true;
            await holder.complete(
              { jobId: 'gap-1', token: 1, state: 'retrying', error: { type: 'Error', message: 'x' }, workerId: 'w1', now: now + 5 },
              first.record,
            );
          }
          throw error;
        }
      },
      { step: 'initialize', name: 'completeInTheGap' },
    );
    const second = await new DynamoJobStore(tables.jobs, settings, racing).claim({
      ...ref('gap-1'),
      workerId: 'w2',
      now: now + 10,
      leaseUntil: now + 60_000,
    });
    racing.destroy();
    expect(completedInGap).toBe(true);
    expect(second).toMatchObject({ outcome: 'claimed', token: 2 });
    expect((await holder.get('gap-1'))?.history.map((h) => h.what)).toEqual(['started', 'retrying', 'started']);
  });
});
