import { VirtualClock } from '../../lib/clock';
import { MAX_OFFLOAD_ABOVE_BYTES } from '../../lib/config/app-config';
import {
  MessageTooLargeError,
  PublishBatchError,
  PublishOptionError,
  TimeLimitExceedsVisibilityError,
  UnknownQueueError,
  UnknownTaskError,
} from '../../lib/errors';
import { MemoryQueueService } from '../../lib/fakes/memory-queue';
import type { QueueUrls } from '../../lib/ports';
import { Publisher } from '../../lib/publish/publisher';
import { defineTask } from '../../lib/tasks/task';
import { decodeEnvelope } from '../../lib/wire/envelope';
import { MAX_PAYLOAD_REF_BYTES } from '../../lib/wire/payload-ref';
import { appConfig } from '../helpers/factories';
import { FaultyQueue } from '../helpers/faulty-queue';

const sendEmail = defineTask({ name: 'send-email', queue: 'urgent', timeLimitSeconds: 5, run: (_p: { to: string }) => undefined });

/** `inline`: payloads stay in the message up to SQS's limit (no claim checks; see claim-check.test.ts). */
function setup(options: { inline?: boolean } = {}) {
  const clock = new VirtualClock();
  const sqs = new MemoryQueueService(clock);
  const config = appConfig(options.inline ? { payloads: { offloadAboveBytes: MAX_OFFLOAD_ABOVE_BYTES } } : {});
  const urls: QueueUrls = {
    queues: { urgent: sqs.createQueue('urgent'), routine: sqs.createQueue('routine') },
    archive: sqs.createQueue('archive'),
  };
  const queues = new FaultyQueue(sqs);
  const publisher = new Publisher({ config, version: 'v1', tasks: [sendEmail], queues, urls, clock });
  return { sqs, urls, queues, publisher, clock };
}

describe('Publisher', () => {
  it('publishes an envelope v1 with a job id and publish time to the task queue', async () => {
    const { sqs, urls, publisher, clock } = setup();
    const published = await publisher.publish(sendEmail, { to: 'a@b.c' }, { appData: { locale: 'fr' } });
    expect(published.queue).toBe('urgent');
    const [message] = sqs.peek(urls.queues.urgent as string);
    const job = decodeEnvelope(message?.body as string, { messageId: 'x', sentTimestamp: 0 });
    expect(job).toEqual({
      task: 'send-email',
      payload: { to: 'a@b.c' },
      id: published.jobId,
      appData: { locale: 'fr' },
      publishedAt: clock.now(),
    });
  });

  it('publishes by name to a task it knows, or to an explicit queue', async () => {
    const { sqs, urls, publisher } = setup();
    await publisher.publish('send-email', { to: 'x' });
    await publisher.publish('from-elsewhere', { any: 1 }, { queue: 'routine', id: 'my-job-1' });
    expect(sqs.peek(urls.queues.urgent as string)).toHaveLength(1);
    expect(JSON.parse(sqs.peek(urls.queues.routine as string)[0]?.body as string).id).toBe('my-job-1');
  });

  it('sends batches of at most 10', async () => {
    const { sqs, urls, publisher } = setup();
    const items = Array.from({ length: 23 }, (_, i) => ({ task: sendEmail, payload: { to: `u${i}` } }));
    const published = await publisher.publishBatch(items);
    expect(published).toHaveLength(23);
    expect(sqs.requests.sendBatch).toBe(3);
    expect(sqs.peek(urls.queues.urgent as string)).toHaveLength(23);
  });

  it('keeps each batch call under 1 MiB in total', async () => {
    const { sqs, publisher } = setup({ inline: true });
    const big = 'x'.repeat(300_000);
    await publisher.publishBatch(Array.from({ length: 7 }, () => ({ task: sendEmail, payload: { to: big } })));
    expect(sqs.requests.sendBatch).toBe(3);
  });

  it('retries entries SQS failed and reports those that still fail, never silently', async () => {
    const { sqs, urls, queues, publisher } = setup();
    queues.inject({ operation: 'sendBatch', failEntries: 3, code: 'InternalError' });
    await publisher.publishBatch(Array.from({ length: 5 }, (_, i) => ({ task: sendEmail, payload: { to: `u${i}` } })));
    expect(sqs.peek(urls.queues.urgent as string)).toHaveLength(5);

    queues.inject({ operation: 'sendBatch', failEntries: 2, code: 'InternalError', times: 10 });
    const error = await publisher
      .publishBatch(Array.from({ length: 4 }, (_, i) => ({ task: sendEmail, payload: { to: `v${i}` } })))
      .catch((e) => e);
    expect(error).toBeInstanceOf(PublishBatchError);
    expect((error as PublishBatchError).failed.map((f) => f.index)).toEqual([0, 1]);
    expect((error as PublishBatchError).sent.map((s) => s.index)).toEqual([2, 3]);
  });

  it('rejects bad input with typed errors before sending anything', async () => {
    const { sqs, publisher } = setup();
    await expect(publisher.publish(sendEmail, { to: 'x' }, { delaySeconds: 366 * 86_400 + 1 })).rejects.toBeInstanceOf(PublishOptionError);
    await expect(publisher.publish(sendEmail, { to: 'x' }, { runAt: new Date('not a date') })).rejects.toBeInstanceOf(PublishOptionError);
    await expect(publisher.publish(sendEmail, { to: 'x' }, { id: 'has spaces' })).rejects.toBeInstanceOf(PublishOptionError);
    await expect(publisher.publish(sendEmail, { to: 'x' }, { queue: 'nowhere' })).rejects.toBeInstanceOf(UnknownQueueError);
    await expect(publisher.publish('unknown-task', {})).rejects.toBeInstanceOf(UnknownTaskError);
    await expect(publisher.publish('bad/name', {}, { queue: 'urgent' })).rejects.toBeInstanceOf(UnknownTaskError);
    await expect(publisher.publish(sendEmail, { to: 'x'.repeat(MAX_PAYLOAD_REF_BYTES) })).rejects.toBeInstanceOf(MessageTooLargeError);
    expect(sqs.requests.sendBatch).toBe(0);
  });

  it("applies Kale's publish-time check when a task is sent to a queue with a shorter visibility", async () => {
    const clock = new VirtualClock();
    const sqs = new MemoryQueueService(clock);
    const config = appConfig({
      queues: [
        { name: 'urgent', priority: 90, visibilityTimeoutSeconds: 30 },
        { name: 'routine', priority: 10, visibilityTimeoutSeconds: 3 },
      ],
    });
    const urls = {
      queues: { urgent: sqs.createQueue('urgent'), routine: sqs.createQueue('routine') },
      archive: sqs.createQueue('archive'),
    };
    const publisher = new Publisher({ config, version: 'v1', queues: sqs, urls, clock });
    await expect(publisher.publish(sendEmail, { to: 'x' }, { queue: 'routine' })).rejects.toBeInstanceOf(TimeLimitExceedsVisibilityError);
  });

  it('publishes with a delay', async () => {
    const { sqs, urls, publisher } = setup();
    await publisher.publish(sendEmail, { to: 'x' }, { delaySeconds: 30 });
    expect(await sqs.depth(urls.queues.urgent as string)).toEqual({ visible: 0, inFlight: 0, delayed: 1 });
  });

  it('sends a job due past 15 minutes at once with its runAt, for the dispatcher to park', async () => {
    const { sqs, urls, publisher } = setup();
    const published = await publisher.publish(sendEmail, { to: 'x' }, { delaySeconds: 3600 });
    const [message] = await sqs.receive(urls.queues.urgent as string, { maxMessages: 1, waitSeconds: 0, visibilityTimeoutSeconds: 30 });
    const body = JSON.parse(message?.body ?? '{}') as { runAt?: number; publishedAt?: number };
    expect(body.runAt).toBe((body.publishedAt as number) + 3_600_000);
    expect(published.runAt).toBe(body.runAt);
  });
});
