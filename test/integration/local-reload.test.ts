/**
 * What `taskworker dev --watch` runs on a change, `LocalStack.reload()`, applies a config change to
 * the emulators it runs on, as a deploy would: events added while dev runs get their topic, a new
 * subscriber's queue and its subscription (read back from SNS and SQS), and an emit then runs the
 * subscriber; a removed subscriber's subscription goes. A change it cannot apply live (another app
 * name) is refused with one error saying it needs a restart, and the running build keeps working.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ListSubscriptionsByTopicCommand, ListTopicsCommand, SNSClient } from '@aws-sdk/client-sns';
import { GetQueueAttributesCommand, GetQueueUrlCommand } from '@aws-sdk/client-sqs';
import { RestartRequiredError } from '../../lib/errors';
import { type LocalStack, startLocalStack } from '../../lib/local/dev';
import { eventually } from '../helpers/run';

const QUEUE = (visibility: number) => (name: string) =>
  `{ name: '${name}', priority: 10, visibilityTimeoutSeconds: ${visibility}, longPollSeconds: 0 }`;

let project: string;
let stack: LocalStack;
let sns: SNSClient;

function writeConfig(fields: { app?: string; queues: string[]; visibility?: number; events?: string[] }): void {
  writeFileSync(
    join(project, 'taskworker.config.ts'),
    `export default { app: '${fields.app ?? 'reloads'}', queues: [${fields.queues.map(QUEUE(fields.visibility ?? 10)).join(', ')}]${
      fields.events ? `, events: [${fields.events.map((e) => `{ name: '${e}' }`).join(', ')}]` : ''
    } };\n`,
  );
}

function writeTask(name: string, fields: string): void {
  writeFileSync(join(project, 'tasks', `${name}.ts`), `export default { name: '${name}', timeLimitSeconds: 2, ${fields} };\n`);
}

/** The queues a topic delivers to, as SNS lists its subscriptions. */
async function subscribedQueues(topicArn: string): Promise<string[]> {
  const listed = await sns.send(new ListSubscriptionsByTopicCommand({ TopicArn: topicArn }));
  return (listed.Subscriptions ?? []).map((s) => s.Endpoint as string);
}

async function queueArn(url: string): Promise<string> {
  const out = await stack.sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }));
  return out.Attributes?.QueueArn as string;
}

beforeAll(async () => {
  project = mkdtempSync(join(tmpdir(), 'tw-reload-'));
  mkdirSync(join(project, 'tasks'));
  writeConfig({ queues: ['default'] });
  writeTask('pack', "queue: 'default', run: () => 'packed'");
  stack = await startLocalStack({ configFile: join(project, 'taskworker.config.ts') });
  sns = new SNSClient({
    region: stack.region,
    endpoint: stack.endpoints.sqs,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
}, 60_000);

afterAll(async () => {
  sns?.destroy();
  await stack?.stop();
});

/** The topic ARN SNS lists under `name`. */
async function topicArnOf(name: string): Promise<string | undefined> {
  const topics = (await sns.send(new ListTopicsCommand({}))).Topics ?? [];
  return topics.map((t) => t.TopicArn as string).find((arn) => arn.endsWith(`:${name}`));
}

describe('taskworker dev: a reload applies what the config change needs', () => {
  it('events added to the config: the topic and the subscriber’s subscription are created, and an emit runs the subscriber', async () => {
    writeConfig({ queues: ['default'], events: ['order.placed'] });
    writeTask('receipt', "queue: 'default', on: 'order.placed', run: (payload: { orderId: string }) => 'receipt for ' + payload.orderId");
    const reloaded = await stack.reload();

    const topicArn = (await topicArnOf('reloads-dev-events')) as string;
    expect(topicArn).toBeDefined();
    expect(await subscribedQueues(topicArn)).toEqual([await queueArn(stack.urls.queues.default as string)]);
    expect(reloaded.provisioned).toEqual({
      queues: [],
      topics: ['reloads-dev-events'],
      subscribed: [{ queue: 'default', topic: 'reloads-dev-events' }],
      unsubscribed: [],
    });
    await stack.publisher.emit('order.placed', { orderId: 'o-1' }, { id: 'ev-1' });
    await eventually('the subscriber to succeed', async () => (await stack.jobs.get('ev-1/receipt'))?.state === 'succeeded', 30_000);
    expect(await stack.jobs.get('ev-1/receipt')).toMatchObject({ result: '"receipt for o-1"', attempt: 1 });
  }, 60_000);

  it('a new queue, the subscriber moved there, a longer visibility: the queue is created and subscribed, the old one unsubscribed and updated', async () => {
    writeConfig({ queues: ['default', 'mail'], visibility: 12, events: ['order.placed'] });
    writeTask('receipt', "queue: 'mail', on: 'order.placed', run: (payload: { orderId: string }) => 'mailed ' + payload.orderId");
    const reloaded = await stack.reload();

    const mailUrl = (await stack.sqs.send(new GetQueueUrlCommand({ QueueName: 'reloads-dev-mail' }))).QueueUrl as string;
    expect(stack.urls.queues.mail).toBe(mailUrl);
    expect(stack.urls.deadLetter.mail).toBeDefined();
    const visibility = await stack.sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: stack.urls.queues.default, AttributeNames: ['VisibilityTimeout'] }),
    );
    expect(visibility.Attributes?.VisibilityTimeout).toBe('12');
    const topicArn = (await topicArnOf('reloads-dev-events')) as string;
    expect(await subscribedQueues(topicArn)).toEqual([await queueArn(mailUrl)]);
    expect(reloaded.provisioned).toEqual({
      queues: ['mail'],
      topics: [],
      subscribed: [{ queue: 'mail', topic: 'reloads-dev-events' }],
      unsubscribed: [{ queue: 'default', topic: 'reloads-dev-events' }],
    });
    await stack.publisher.emit('order.placed', { orderId: 'o-2' }, { id: 'ev-2' });
    await eventually('the subscriber on the new queue', async () => (await stack.jobs.get('ev-2/receipt'))?.state === 'succeeded', 30_000);
    expect(await stack.jobs.get('ev-2/receipt')).toMatchObject({ queue: 'mail', result: '"mailed o-2"' });
  }, 60_000);

  it('a subscriber taken out: its queue’s subscription is removed', async () => {
    writeTask('receipt', "queue: 'mail', run: (payload: { orderId: string }) => 'mailed ' + payload.orderId");
    const reloaded = await stack.reload();
    expect(await subscribedQueues((await topicArnOf('reloads-dev-events')) as string)).toEqual([]);
    expect(reloaded.provisioned).toEqual({
      queues: [],
      topics: [],
      subscribed: [],
      unsubscribed: [{ queue: 'mail', topic: 'reloads-dev-events' }],
    });
  }, 60_000);

  it('another app name is not applied live: one RestartRequiredError, and the running build keeps running', async () => {
    writeConfig({ app: 'renamed', queues: ['default', 'mail'], visibility: 12, events: ['order.placed'] });
    const refused = await stack.reload().catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(RestartRequiredError);
    expect((refused as Error).message).toBe(
      'The config\'s app changed from "reloads" to "renamed": this change needs a restart of taskworker dev (the running build keeps running)',
    );
    const { jobId } = await stack.publisher.publish('pack', {});
    await eventually('the old build to run a job', async () => (await stack.jobs.get(jobId))?.state === 'succeeded', 30_000);
  }, 60_000);
});
