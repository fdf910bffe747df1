import {
  CreateTopicCommand,
  ListSubscriptionsByTopicCommand,
  ListSubscriptionsCommand,
  SetSubscriptionAttributesCommand,
  type SNSClient,
  SubscribeCommand,
  UnsubscribeCommand,
} from '@aws-sdk/client-sns';
import { GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { TaskworkerConfig } from '../config/app-config';
import { type EventRoute, eventRoutes, filterPolicy } from '../events/routes';
import { eventTopicName } from '../layout/topics';
import type { QueueUrls } from '../ports';
import type { TaskRegistry } from '../tasks/task';

/** A version's event wiring as created: its own topic (when it declares events) and its queues' subscriptions. */
export interface VersionEvents {
  /** The version's own topic, when its config declares events. */
  readonly topicArn?: string;
  readonly subscriptions: ReadonlyArray<EventRoute & { readonly topicArn: string; readonly subscriptionArn: string }>;
  /** Subscriptions of the version's queues that no route has any more (a subscriber taken out or moved): removed. */
  readonly unsubscribed: ReadonlyArray<{ readonly queue: string; readonly topicArn: string }>;
}

/**
 * Creates a version's event topic and subscribes its queues, as the stack does in AWS: one topic
 * `<app>-<version>-events` when the app declares events; for every queue with subscriber tasks one
 * subscription per topic its events come through (raw delivery, a filter on the body's `event`).
 * A subscribed app's topic is created too when it is not there yet (creating a topic is
 * idempotent; its own app's `dev` finds it). Idempotent: a subscription whose events changed gets
 * the new filter, and one of the version's queues that no route needs any more is removed, as a
 * deploy would. For `taskworker dev`, the tests and the benchmarks, on fauxqs's SNS.
 */
export async function createVersionEvents(
  sns: SNSClient,
  sqs: SQSClient,
  config: TaskworkerConfig,
  version: string,
  registry: TaskRegistry,
  urls: QueueUrls,
): Promise<VersionEvents> {
  const topic = async (name: string) => (await sns.send(new CreateTopicCommand({ Name: name }))).TopicArn as string;
  const topicArn = config.events.length > 0 ? await topic(eventTopicName(config.app, version)) : undefined;
  const queueArns = new Map<string, string>();
  for (const [queue, url] of Object.entries(urls.queues)) {
    const arn = (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }))).Attributes?.QueueArn;
    if (arn) queueArns.set(arn, queue);
  }
  const subscriptions: Array<VersionEvents['subscriptions'][number]> = [];
  const kept = new Set<string>();
  for (const route of eventRoutes(config, version, registry)) {
    const arn = route.topic.topicArn ?? (await topic(eventTopicName(route.topic.app, route.topic.version)));
    const queueArn = [...queueArns].find(([, queue]) => queue === route.queue)?.[0] as string;
    const policy = JSON.stringify(filterPolicy(route));
    const subscriptionArn = await subscribe(sns, arn, queueArn, policy);
    subscriptions.push({ ...route, topicArn: arn, subscriptionArn });
    kept.add(subscriptionArn);
  }
  const unsubscribed: Array<VersionEvents['unsubscribed'][number]> = [];
  for (const existing of await allSubscriptions(sns)) {
    const queue = existing.Protocol === 'sqs' ? queueArns.get(existing.Endpoint ?? '') : undefined;
    if (queue === undefined || !existing.SubscriptionArn || kept.has(existing.SubscriptionArn)) continue;
    await sns.send(new UnsubscribeCommand({ SubscriptionArn: existing.SubscriptionArn }));
    unsubscribed.push({ queue, topicArn: existing.TopicArn as string });
  }
  return { ...(topicArn ? { topicArn } : {}), subscriptions, unsubscribed };
}

/** Every subscription on the endpoint, page by page. */
async function allSubscriptions(sns: SNSClient) {
  const all = [];
  let NextToken: string | undefined;
  do {
    const page = await sns.send(new ListSubscriptionsCommand(NextToken ? { NextToken } : {}));
    all.push(...(page.Subscriptions ?? []));
    NextToken = page.NextToken;
  } while (NextToken);
  return all;
}

async function subscribe(sns: SNSClient, topicArn: string, queueArn: string, policy: string): Promise<string> {
  const attributes = { RawMessageDelivery: 'true', FilterPolicyScope: 'MessageBody', FilterPolicy: policy };
  try {
    const out = await sns.send(
      new SubscribeCommand({
        TopicArn: topicArn,
        Protocol: 'sqs',
        Endpoint: queueArn,
        Attributes: attributes,
        ReturnSubscriptionArn: true,
      }),
    );
    return out.SubscriptionArn as string;
  } catch (error) {
    // SNS keeps one subscription per topic and queue: an earlier run's, with other events, is updated.
    if (!(error instanceof Error && /already exists with different attributes/i.test(error.message))) throw error;
    const listed = await sns.send(new ListSubscriptionsByTopicCommand({ TopicArn: topicArn }));
    const existing = listed.Subscriptions?.find((s) => s.Protocol === 'sqs' && s.Endpoint === queueArn)?.SubscriptionArn;
    if (!existing) throw error;
    for (const [name, value] of Object.entries(attributes)) {
      await sns.send(new SetSubscriptionAttributesCommand({ SubscriptionArn: existing, AttributeName: name, AttributeValue: value }));
    }
    return existing;
  }
}
