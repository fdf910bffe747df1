/**
 * What a job's claim writes, counted on the emulators: a job published with no record is claimed by
 * the one write that creates its record; one whose record taskworker wrote first (a publisher with
 * `queued` records, a fresh copy, a swept job) is marked so, and its claim goes straight to the
 * write that takes an existing record. Either way one claim write a job, no refused ones, and every
 * job succeeds once. Counted from the requests the dispatcher's DynamoDB client sent.
 */
import { join } from 'node:path';
import { DynamoDBClient, type UpdateItemCommandInput } from '@aws-sdk/client-dynamodb';
import { type ProvisionedVersion, provisionVersion } from '../../lib/local/version';
import { silentLogger } from '../../lib/ports';
import type { TaskBundle } from '../../lib/tasks/bundle';
import {
  buildFixtureBundle,
  type EmulatorHarness,
  keepDispatching,
  nextVersion,
  startHarness,
  stopHarness,
  tempFile,
} from '../helpers/emulators';
import { eventually, readJournal } from '../helpers/run';

const CONFIG = join(__dirname, '..', 'fixtures', 'hand-off', 'taskworker.config.ts');
const JOBS = 20;

let h: EmulatorHarness;
let bundle: TaskBundle;
let dynamo: DynamoDBClient;
beforeAll(async () => {
  h = await startHarness();
  bundle = await buildFixtureBundle(CONFIG);
  dynamo = new DynamoDBClient({
    region: 'us-east-1',
    endpoint: h.emulators.dynamodbEndpoint,
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
  });
}, 60_000);
afterAll(async () => {
  dynamo.destroy();
  await stopHarness(h);
});

/** A dispatcher client that counts the claim writes sent to the jobs table: by kind, and those whose condition failed. */
function countingClaims() {
  const counts = { create: 0, take: 0, refused: 0 };
  const client = new DynamoDBClient({
    region: 'us-east-1',
    endpoint: h.emulators.dynamodbEndpoint,
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
  });
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as UpdateItemCommandInput;
      const update = input.UpdateExpression ?? '';
      const jobs = context.commandName === 'UpdateItemCommand' && input.TableName?.endsWith('-jobs');
      // The full claim adds one to the attempt; the creating one sets everything on a condition of no item.
      const creates =
        /^attribute_not_exists\(#\w+\)$/.test(input.ConditionExpression ?? '') &&
        /leaseOwner/.test(JSON.stringify(input.ExpressionAttributeNames));
      const kind = !jobs ? undefined : /\bADD\b/.test(update) && update.includes('list_append') ? 'take' : creates ? 'create' : undefined;
      if (kind) counts[kind] += 1;
      try {
        return await next(args);
      } catch (error) {
        if (kind && (error as Error).name === 'ConditionalCheckFailedException') counts.refused += 1;
        throw error;
      }
    },
    { step: 'initialize' },
  );
  return { client, counts };
}

async function publishAndDrain(v: ProvisionedVersion) {
  const journal = tempFile('claims.jsonl');
  const { client, counts } = countingClaims();
  const running = keepDispatching(v.dispatcher({ dynamo: client, logger: silentLogger }));
  try {
    const published = await v.publisher.publishBatch(Array.from({ length: JOBS }, (_, n) => ({ task: 'quick', payload: { journal, n } })));
    await eventually(
      'every job to succeed',
      async () => (await Promise.all(published.map((p) => v.jobs.get(p.jobId)))).every((r) => r?.state === 'succeeded'),
      60_000,
    );
  } finally {
    await running.stop();
    client.destroy();
  }
  return { counts, starts: readJournal(journal).length };
}

it('claims a job published with no record by the write that creates it: one write a job, none refused', async () => {
  const v = await provisionVersion({ bundle, version: nextVersion(), sqs: h.sqs, dynamo, recordQueued: false });
  expect(await publishAndDrain(v)).toEqual({ counts: { create: JOBS, take: 0, refused: 0 }, starts: JOBS });
}, 90_000);

it('claims a job its publisher recorded `queued` by the write that takes a record, told so by its message: one write a job, none refused', async () => {
  const v = await provisionVersion({ bundle, version: nextVersion(), sqs: h.sqs, dynamo, recordQueued: true });
  expect(await publishAndDrain(v)).toEqual({ counts: { create: 0, take: JOBS, refused: 0 }, starts: JOBS });
}, 90_000);
