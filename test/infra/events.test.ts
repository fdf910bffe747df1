import { join } from 'node:path';
import { App, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as iam from 'aws-cdk-lib/aws-iam';
import { AwsSolutionsChecks } from 'cdk-nag';
import { TaskworkerVersion } from '../../infra/version';
import exampleConfig from '../../taskworker.config';
import billingConfig from '../fixtures/events/billing/taskworker.config';
import { EXAMPLE_CONFIG_FILE, synthStack } from '../helpers/infra';

const BILLING_CONFIG = join(__dirname, '..', 'fixtures', 'events', 'billing', 'taskworker.config.ts');

describe('events on AWS: the topic and the filtered subscriptions', () => {
  const { template } = synthStack({ version: 'v7' });
  const queueId = (name: string) =>
    Object.keys(template.findResources('AWS::SQS::Queue', { Properties: { QueueName: name } }))[0] as string;
  const topicId = Object.keys(
    template.findResources('AWS::SNS::Topic', { Properties: { TopicName: 'taskworker-v7-events' } }),
  )[0] as string;

  it('creates the version’s topic, encrypted with the AWS-managed SNS key, TLS only', () => {
    expect(topicId).toBeDefined();
    const topic = template.findResources('AWS::SNS::Topic')[topicId] as { Properties: { KmsMasterKeyId: unknown } };
    expect(JSON.stringify(topic.Properties.KmsMasterKeyId)).toContain(':alias/aws/sns');
    template.hasOutput('EventTopicArn', { Value: { Ref: topicId } });
    template.hasResourceProperties('AWS::SNS::TopicPolicy', {
      Topics: [{ Ref: topicId }],
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } }, Action: 'sns:Publish' }),
        ]),
      },
    });
  });

  it('subscribes each subscriber’s queue raw, filtered on the body’s event, and lets only that topic send to it', () => {
    const subscriptions = template.findResources('AWS::SNS::Subscription');
    const byQueue = Object.values(subscriptions).map((s) => {
      const p = (s as { Properties: Record<string, unknown> }).Properties;
      return {
        endpoint: (p.Endpoint as { 'Fn::GetAtt': string[] })['Fn::GetAtt'][0],
        topic: p.TopicArn,
        raw: p.RawMessageDelivery,
        scope: p.FilterPolicyScope,
        filter: p.FilterPolicy,
      };
    });
    const expected = (queue: string) => ({
      endpoint: queueId(`taskworker-v7-${queue}`),
      topic: { Ref: topicId },
      raw: true,
      scope: 'MessageBody',
      filter: { event: ['orders.placed'] },
    });
    expect(byQueue).toEqual(expect.arrayContaining([expected('high_priority'), expected('low_priority')]));
    expect(byQueue).toHaveLength(2);
    template.hasResourceProperties('AWS::SQS::QueuePolicy', {
      Queues: [{ Ref: queueId('taskworker-v7-high_priority') }],
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Action: 'sqs:SendMessage',
            Principal: { Service: 'sns.amazonaws.com' },
            Condition: { ArnEquals: { 'aws:SourceArn': { Ref: topicId } } },
          }),
        ]),
      },
    });
  });

  it('grantPublish({ events: true }) lets the grantee publish to the topic and nothing more on SNS', () => {
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const orders = new Stack(app, 'Orders');
    const version = new TaskworkerVersion(orders, 'TasksV7', { config: EXAMPLE_CONFIG_FILE, version: 'v7' });
    const role = new iam.Role(orders, 'Emitter', { assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com') });
    version.grantPublish(role, { events: true });
    const policies = Template.fromStack(orders).findResources('AWS::IAM::Policy', {
      Properties: { Roles: [{ Ref: orders.getLogicalId(role.node.defaultChild as never) }] },
    });
    const statements = Object.values(policies).flatMap(
      (p) =>
        (p as { Properties: { PolicyDocument: { Statement: Array<{ Action: unknown; Resource: unknown }> } } }).Properties.PolicyDocument
          .Statement,
    );
    const sns = statements.filter((s) => JSON.stringify(s.Action).includes('sns:'));
    expect(sns).toHaveLength(1);
    expect(sns[0]?.Action).toBe('sns:Publish');
    expect(JSON.stringify(sns[0]?.Resource)).toContain(':taskworker-v7-events');
    expect(() =>
      new TaskworkerVersion(new Stack(app, 'Billing'), 'V1', { config: BILLING_CONFIG, version: 'v1' }).grantPublish(role, {
        events: true,
      }),
    ).toThrow(/grantPublish.events.*an app that declares events/);
  });
});

describe('events on AWS: a second app subscribing to the first', () => {
  it('subscribes its queue to the emitting app’s topic by name in its own account and region; it has no topic of its own', () => {
    const { template, stack } = synthStack({ version: 'v1', config: billingConfig, configFile: BILLING_CONFIG });
    template.resourceCountIs('AWS::SNS::Topic', 0);
    const [subscription] = Object.values(template.findResources('AWS::SNS::Subscription')) as Array<{
      Properties: Record<string, unknown>;
    }>;
    const topicArn = stack.resolve(Stack.of(stack).formatArn({ service: 'sns', resource: 'twshop-ev1-events' }));
    expect(subscription?.Properties).toMatchObject({
      TopicArn: topicArn,
      RawMessageDelivery: true,
      FilterPolicyScope: 'MessageBody',
      FilterPolicy: { event: ['orders.created'] },
    });
  });

  it('lets its dispatcher read the emitting app’s large events under payloads/events/ of that app’s bucket, and nothing else there; cdk-nag clean', () => {
    const { app, template, stack } = synthStack({ version: 'v1', config: billingConfig, configFile: BILLING_CONFIG });
    const roleId = Object.keys(template.findResources('AWS::IAM::Role')).find((id) => id.startsWith('TaskworkerDispatcherRole')) as string;
    const policies = Object.values(template.findResources('AWS::IAM::Policy')) as Array<{
      Properties: { Roles: Array<{ Ref: string }>; PolicyDocument: { Statement: Array<{ Action: unknown; Resource: unknown }> } };
    }>;
    const reads = policies
      .filter((p) => p.Properties.Roles.some((r) => r.Ref === roleId))
      .flatMap((p) => p.Properties.PolicyDocument.Statement)
      .filter((st) => JSON.stringify(st.Resource).includes('twshop-ev1'));
    expect(reads).toEqual([
      {
        Effect: 'Allow',
        Action: 's3:GetObject',
        Resource: stack.resolve(`arn:${stack.partition}:s3:::twshop-ev1-${stack.account}-${stack.region}/payloads/events/*`),
      },
    ]);
    const report = new AwsSolutionsChecks(app).validateScope(stack);
    expect(report.violations).toEqual([]);
  });

  it('fails the synth naming a subscriber of an event its app cannot receive', () => {
    expect(() =>
      synthStack({
        version: 'v1',
        config: { ...billingConfig, subscriptions: [{ app: 'twshop', version: 'ev1', events: ['orders.refunded'] }] },
        configFile: BILLING_CONFIG,
      }),
    ).toThrow(
      /Invalid task invoice: on = "orders.created": expected an event the app declares in events or receives through subscriptions \(orders.refunded\)/,
    );
  });
});

describe('events on AWS: subscribing apps in other accounts (subscriberAccounts)', () => {
  const ACCOUNTS = ['111122223333', '444455556666'];
  const { app, template, stack } = synthStack({ version: 'v7', config: { ...exampleConfig, subscriberAccounts: ACCOUNTS } });
  const topicId = Object.keys(
    template.findResources('AWS::SNS::Topic', { Properties: { TopicName: 'taskworker-v7-events' } }),
  )[0] as string;

  it('lets each account subscribe only its own SQS queues to the topic, and nothing else', () => {
    const policy = Object.values(template.findResources('AWS::SNS::TopicPolicy')).find(
      (p) => JSON.stringify((p as { Properties: { Topics: unknown } }).Properties.Topics) === JSON.stringify([{ Ref: topicId }]),
    ) as { Properties: { PolicyDocument: { Statement: Array<Record<string, unknown>> } } };
    const shared = policy.Properties.PolicyDocument.Statement.filter((s) => s.Effect === 'Allow');
    expect(shared).toEqual(
      ACCOUNTS.map((account) => ({
        Sid: `SubscribeFrom${account}`,
        Effect: 'Allow',
        Principal: { AWS: stack.resolve(new iam.AccountPrincipal(account).arn) },
        Action: 'sns:Subscribe',
        Resource: { Ref: topicId },
        Condition: {
          StringEquals: { 'sns:Protocol': 'sqs' },
          ArnLike: { 'sns:Endpoint': stack.resolve(`arn:${stack.partition}:sqs:*:${account}:*`) },
        },
      })),
    );
  });

  it('lets those accounts read large events’ payloads (payloads/events/ of the bucket) and no other object; cdk-nag clean', () => {
    const [bucketPolicy] = Object.values(template.findResources('AWS::S3::BucketPolicy')) as Array<{
      Properties: { PolicyDocument: { Statement: Array<Record<string, unknown>> } };
    }>;
    const allows = bucketPolicy?.Properties.PolicyDocument.Statement.filter((s) => s.Effect === 'Allow');
    expect(allows).toHaveLength(1);
    expect(allows?.[0]).toMatchObject({
      Sid: 'SubscribersReadEventPayloads',
      Action: 's3:GetObject',
      Principal: { AWS: ACCOUNTS.map((a) => stack.resolve(new iam.AccountPrincipal(a).arn)) },
    });
    expect(JSON.stringify(allows?.[0]?.Resource)).toMatch(/\/payloads\/events\/\*"\]\]\}$/);
    expect(new AwsSolutionsChecks(app).validateScope(stack).violations).toEqual([]);
  });

  it('adds no policy for an app that lists no account', () => {
    const plain = synthStack({ version: 'v7' }).template;
    const statements = Object.values(plain.findResources('AWS::SNS::TopicPolicy')).flatMap(
      (p) => (p as { Properties: { PolicyDocument: { Statement: Array<{ Effect: string }> } } }).Properties.PolicyDocument.Statement,
    );
    expect(statements.filter((s) => s.Effect === 'Allow')).toEqual([]);
  });

  it('refuses a bad account id, a repeated one, and accounts for an app that emits no event, naming the field', () => {
    const synth = (subscriberAccounts: unknown, config: object = exampleConfig) =>
      synthStack({ version: 'v7', config: { ...(config as typeof exampleConfig), subscriberAccounts: subscriberAccounts as string[] } });
    expect(() => synth(['12345'])).toThrow(/subscriberAccounts\[0\] = "12345": expected a 12-digit AWS account id/);
    expect(() => synth([111122223333])).toThrow(/subscriberAccounts\[0\] = 111122223333: expected a 12-digit AWS account id, as a string/);
    expect(() => synth(['111122223333', '111122223333'])).toThrow(
      /subscriberAccounts\[1\] = "111122223333": expected an account not already listed/,
    );
    expect(() => synth(['111122223333'], { ...exampleConfig, events: [] })).toThrow(
      /subscriberAccounts = \["111122223333"\]: expected an app that declares events/,
    );
  });
});
