/** A publisher that records its jobs as `queued` in the version's own jobs table, found by name. */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { type Emulators, startEmulators } from '../../lib/local/emulators';
import { provisionVersion } from '../../lib/local/version';
import { Publisher } from '../../lib/publish/publisher';
import { buildFixtureBundle } from '../helpers/emulators';

let emulators: Emulators;
beforeAll(async () => {
  emulators = await startEmulators();
});
afterAll(() => emulators.stop());

it('recordQueued: a job published to a tracked queue has a queued record, with its identity, before any dispatcher runs', async () => {
  const credentials = { accessKeyId: 'x', secretAccessKey: 'x' };
  const sqs = new SQSClient({ region: 'us-east-1', endpoint: emulators.sqsEndpoint, credentials });
  const dynamo = new DynamoDBClient({ region: 'us-east-1', endpoint: emulators.dynamodbEndpoint, credentials });
  const bundle = await buildFixtureBundle();
  const version = await provisionVersion({ bundle, version: 'pq', sqs, dynamo, recordQueued: false });
  const publisher = new Publisher({
    config: bundle.config,
    version: 'pq',
    tasks: bundle.tasks,
    sqs: { client: sqs },
    recordQueued: true,
    dynamo: { client: dynamo },
  });
  const tracked = await publisher.publish('record', { n: 1 });
  const untracked = await publisher.publish('kill-process', {});
  expect(await version.jobs.get(tracked.jobId)).toMatchObject({ state: 'queued', task: 'record', queue: 'urgent', attempt: 0 });
  // bulk is not tracked: nothing to record.
  expect(await version.jobs.get(untracked.jobId)).toBeUndefined();
  sqs.destroy();
  dynamo.destroy();
});
