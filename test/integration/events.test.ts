/**
 * Events on the emulators (fauxqs's SQS and SNS, dynalite) with the real dispatcher: two apps
 * provisioned as the stack does (the shop's topic, each subscribing queue's filtered raw
 * subscription); one emit runs the shop's two subscribers on one queue and the billing app's
 * subscriber once each, while a third shop subscriber that always fails ends archived alone; the
 * same event id emitted again runs nothing; an event over SNS's 256 KiB goes through the emitter's
 * bucket to subscribers of both apps; a payload its validator refuses is not sent. The truth
 * is read from each app's jobs table and archive.
 */
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { ListSubscriptionsCommand, SNSClient } from '@aws-sdk/client-sns';
import { InvalidEventPayloadError, UnknownEventError } from '../../lib/errors';
import { type ProvisionedVersion, provisionVersion } from '../../lib/local/version';
import { silentLogger } from '../../lib/ports';
import type { JobRecord } from '../../lib/track/job-record';
import { readArchiveRecord } from '../../lib/wire/archive-record';
import {
  buildFixtureBundle,
  type EmulatorHarness,
  keepDispatching,
  type RunningDispatcher,
  startHarness,
  stopHarness,
} from '../helpers/emulators';
import { eventually } from '../helpers/run';

const FIXTURES = join(__dirname, '..', 'fixtures', 'events');
const ENDED = ['succeeded', 'archived', 'cancelled'];

let h: EmulatorHarness;
let sns: SNSClient;
let s3: S3Client;
let dynamo: DynamoDBClient;
let shop: ProvisionedVersion;
let billing: ProvisionedVersion;
const running: RunningDispatcher[] = [];

beforeAll(async () => {
  h = await startHarness();
  const local = { region: 'us-east-1', credentials: { accessKeyId: 'test', secretAccessKey: 'test' } };
  sns = new SNSClient({ ...local, endpoint: h.emulators.sqsEndpoint });
  s3 = new S3Client({ ...local, endpoint: h.emulators.sqsEndpoint });
  dynamo = new DynamoDBClient({ ...local, endpoint: h.emulators.dynamodbEndpoint });
  const [shopBundle, billingBundle] = await Promise.all([
    buildFixtureBundle(join(FIXTURES, 'shop', 'taskworker.config.ts')),
    buildFixtureBundle(join(FIXTURES, 'billing', 'taskworker.config.ts')),
  ]);
  // The subscriber's app first: its subscription finds (creates) the emitter's topic by name.
  billing = await provisionVersion({ bundle: billingBundle, version: 'ev1', sqs: h.sqs, dynamo, sns, s3 });
  shop = await provisionVersion({ bundle: shopBundle, version: 'ev1', sqs: h.sqs, dynamo, sns, s3 });
  for (const app of [shop, billing]) {
    running.push(keepDispatching(app.dispatcher({ tracked: true, logger: silentLogger, workerId: `${app.bundle.config.app}-d1` })));
  }
}, 120_000);

afterAll(async () => {
  await Promise.all(running.map((r) => r.stop()));
  sns?.destroy();
  s3?.destroy();
  dynamo?.destroy();
  await stopHarness(h);
});

const record = (app: ProvisionedVersion, id: string) => app.jobs.get(id) as Promise<JobRecord | undefined>;
const ended = async (app: ProvisionedVersion, id: string) => ENDED.includes((await record(app, id))?.state ?? '');

describe('events on the emulators: two apps, SNS fan-out', () => {
  it('provisions the shop topic and one filtered raw subscription per subscribing queue and topic', async () => {
    expect(shop.events?.topicArn).toMatch(/:twshop-ev1-events$/);
    expect(shop.events?.subscriptions.map((s) => [s.queue, s.events])).toEqual([
      ['urgent', ['orders.created', 'orders.refunded']],
      ['routine', ['orders.created']],
    ]);
    expect(billing.events?.subscriptions.map((s) => [s.queue, s.topicArn, s.events])).toEqual([
      ['work', shop.events?.topicArn, ['orders.created']],
    ]);
    const listed = await sns.send(new ListSubscriptionsCommand({}));
    expect(listed.Subscriptions?.filter((s) => s.TopicArn === shop.events?.topicArn)).toHaveLength(3);
  });

  it('one emit runs every subscriber once, in both apps; the failing one ends archived alone', async () => {
    const emitted = await shop.publisher.emit('orders.created', { orderId: 'o-1' }, { id: 'ord-1-created' });
    expect(emitted).toMatchObject({ eventId: 'ord-1-created', topicArn: shop.events?.topicArn });
    const ids = { receipt: 'ord-1-created/send-receipt', ledger: 'ord-1-created/post-ledger', warehouse: 'ord-1-created/notify-warehouse' };
    await eventually(
      'every subscriber to end',
      async () =>
        (await ended(shop, ids.receipt)) &&
        (await ended(shop, ids.ledger)) &&
        (await ended(shop, ids.warehouse)) &&
        (await ended(billing, 'ord-1-created/invoice')),
      40_000,
    );
    const receipt = await record(shop, ids.receipt);
    expect(receipt).toMatchObject({
      state: 'succeeded',
      attempt: 1,
      event: { id: 'ord-1-created', name: 'orders.created', source: 'twshop' },
    });
    expect(JSON.parse(receipt?.result ?? 'null')).toMatchObject({ receiptFor: 'o-1', event: { id: 'ord-1-created' } });
    expect(await record(shop, ids.ledger)).toMatchObject({ state: 'succeeded', attempt: 1 });
    expect(await record(shop, ids.warehouse)).toMatchObject({ state: 'archived', reason: 'exhausted', attempt: 2 });
    const invoice = await record(billing, 'ord-1-created/invoice');
    expect(invoice).toMatchObject({ state: 'succeeded', attempt: 1 });
    expect(JSON.parse(invoice?.result ?? 'null')).toEqual({ invoiced: 'o-1', from: 'twshop' });
    // The archive holds the failing subscriber's own job: a replay after the fix runs it alone.
    const archived = await shop.queues.receive(shop.urls.archive, { maxMessages: 10, waitSeconds: 0, visibilityTimeoutSeconds: 30 });
    expect(archived.map((m) => [JSON.parse(m.body).id, readArchiveRecord(m.attributes)?.reason])).toEqual([[ids.warehouse, 'exhausted']]);
  }, 60_000);

  it('the same event id emitted again runs no subscriber twice', async () => {
    await shop.publisher.emit('orders.created', { orderId: 'o-2' }, { id: 'ord-2-created' });
    await eventually('the invoice to end', () => ended(billing, 'ord-2-created/invoice'), 30_000);
    await eventually('the receipt to end', () => ended(shop, 'ord-2-created/send-receipt'), 30_000);
    await shop.publisher.emit('orders.created', { orderId: 'o-2' }, { id: 'ord-2-created' });
    await eventually(
      'the second delivery to be stopped as a duplicate',
      async () =>
        (await record(billing, 'ord-2-created/invoice'))?.history.some((e) => e.what === 'skipped-duplicate') === true &&
        (await record(shop, 'ord-2-created/send-receipt'))?.history.some((e) => e.what === 'skipped-duplicate') === true,
      30_000,
    );
    expect(await record(billing, 'ord-2-created/invoice')).toMatchObject({ state: 'succeeded', attempt: 1 });
    expect(await record(shop, 'ord-2-created/send-receipt')).toMatchObject({ state: 'succeeded', attempt: 1 });
  }, 60_000);

  it('an event over 256 KiB goes through the emitter’s bucket: each subscriber, in both apps, runs once with the whole payload; the object stays for them all', async () => {
    const lines = Array.from({ length: 300 }, (_, i) => `${i}:${'l'.repeat(1_000)}`);
    await shop.publisher.emit('orders.created', { orderId: 'o-big', lines }, { id: 'ord-big-created' });
    const ids = ['ord-big-created/send-receipt', 'ord-big-created/post-ledger'];
    await eventually(
      'the subscribers to end',
      async () =>
        (await ended(billing, 'ord-big-created/invoice')) && (await ended(shop, ids[0] as string)) && (await ended(shop, ids[1] as string)),
      40_000,
    );
    expect(JSON.parse((await record(shop, ids[0] as string))?.result ?? 'null')).toMatchObject({ receiptFor: 'o-big', lines: 300 });
    expect(await record(shop, ids[1] as string)).toMatchObject({ state: 'succeeded', attempt: 1 });
    // The billing app reads the shop's bucket (its subscription names the shop), under payloads/events/ only.
    expect(JSON.parse((await record(billing, 'ord-big-created/invoice'))?.result ?? 'null')).toEqual({
      invoiced: 'o-big',
      from: 'twshop',
      lines: 300,
    });
    const kept = await s3.send(new ListObjectsV2Command({ Bucket: shop.payloadBucket, Prefix: 'payloads/events/ord-big-created/' }));
    expect(kept.Contents).toHaveLength(1);
  }, 60_000);

  it('refuses before sending: a payload its validator refuses, an undeclared event, an event over 10 MiB', async () => {
    await expect(shop.publisher.emit('orders.created', { orderId: 42 }, { id: 'bad-1' })).rejects.toThrow(
      'Invalid payload for event "orders.created": orderId must be a string',
    );
    await expect(shop.publisher.emit('orders.created', { orderId: 42 })).rejects.toBeInstanceOf(InvalidEventPayloadError);
    await expect(shop.publisher.emit('orders.shipped', {})).rejects.toBeInstanceOf(UnknownEventError);
    await expect(shop.publisher.emit('orders.refunded', { blob: 'x'.repeat(10_500_000) })).rejects.toThrow(/limit is 10485760 bytes/);
    // Nothing reached any subscriber: no job for the refused id, and the queues are empty.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(await record(shop, 'bad-1/send-receipt')).toBeUndefined();
    expect(await record(billing, 'bad-1/invoice')).toBeUndefined();
  }, 30_000);
});
