import { Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as subscriptions from 'aws-cdk-lib/aws-sns-subscriptions';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import type { TaskworkerConfig } from '../lib/config/app-config';
import { type EventRoute, eventRoutes } from '../lib/events/routes';
import { eventTopicName } from '../lib/layout/topics';
import type { TaskRegistry } from '../lib/tasks/task';

/** What an emitter may do with its version's topic. */
export const EMIT_ACTIONS = ['sns:Publish'];

export interface TaskworkerEventsProps {
  readonly config: TaskworkerConfig;
  readonly version: string;
  /** The version's work queues by configured name. */
  readonly queues: Readonly<Record<string, sqs.IQueue>>;
  /** The version's tasks: which queue each subscriber is on and which events it takes. */
  readonly registry: TaskRegistry;
}

/**
 * Events on AWS's own fan-out: the version's SNS topic (`<app>-<version>-events`, when the app
 * declares events; encrypted with the AWS-managed SNS key, so publishers in the account need no
 * key grant; TLS only), and for every queue with subscriber tasks one subscription per topic
 * their events come through — the app's own, or a subscribed app's by name (or ARN) — with raw
 * delivery and a filter policy on the body's `event`. Each subscription's queue policy lets only
 * that topic send (aws:SourceArn). SNS delivers; nothing of ours loops over subscribers.
 */
export class TaskworkerEvents extends Construct {
  public readonly topic: sns.Topic | undefined;
  public readonly routes: readonly EventRoute[];

  constructor(scope: Construct, id: string, props: TaskworkerEventsProps) {
    super(scope, id);
    const { config, version } = props;
    this.topic =
      config.events.length > 0
        ? new sns.Topic(this, 'Topic', {
            topicName: eventTopicName(config.app, version),
            displayName: `taskworker ${config.app} ${version} events`,
            masterKey: kms.Alias.fromAliasName(this, 'AwsManagedSnsKey', 'alias/aws/sns'),
            enforceSSL: true,
          })
        : undefined;
    if (this.topic) shareTopic(this.topic, config.subscriberAccounts);
    this.routes = eventRoutes(config, version, props.registry);
    const topics = new Map<string, sns.ITopic>();
    const topicOf = (route: EventRoute): sns.ITopic => {
      if (route.topic.app === config.app && route.topic.version === version && this.topic) return this.topic;
      const arn =
        route.topic.topicArn ??
        Stack.of(this).formatArn({ service: 'sns', resource: eventTopicName(route.topic.app, route.topic.version) });
      const known = topics.get(arn);
      if (known) return known;
      const imported = sns.Topic.fromTopicArn(this, `From-${route.topic.app}-${route.topic.version}`, arn);
      topics.set(arn, imported);
      return imported;
    };
    for (const route of this.routes) {
      const queue = props.queues[route.queue] as sqs.IQueue;
      topicOf(route).addSubscription(
        new subscriptions.SqsSubscription(queue, {
          rawMessageDelivery: true,
          filterPolicyWithMessageBody: {
            event: sns.FilterOrPolicy.filter(sns.SubscriptionFilter.stringFilter({ allowlist: [...route.events] })),
          },
        }),
      );
    }
  }
}

/**
 * Lets each account of `subscriberAccounts` subscribe its own SQS queues to the topic (what a
 * subscribing app's stack does there), and nothing else: no publish, no other protocol, no queue of
 * a third account. A subscription its queue's owner makes needs no confirmation.
 */
function shareTopic(topic: sns.Topic, accounts: readonly string[]): void {
  const partition = Stack.of(topic).partition;
  for (const account of accounts) {
    topic.addToResourcePolicy(
      new iam.PolicyStatement({
        sid: `SubscribeFrom${account}`,
        principals: [new iam.AccountPrincipal(account)],
        actions: ['sns:Subscribe'],
        resources: [topic.topicArn],
        conditions: {
          StringEquals: { 'sns:Protocol': 'sqs' },
          ArnLike: { 'sns:Endpoint': `arn:${partition}:sqs:*:${account}:*` },
        },
      }),
    );
  }
}
