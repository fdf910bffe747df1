import { PUBLISHER_ACTIONS } from '../../infra/publisher-policy';
import { synthStack } from '../helpers/infra';

describe('TaskworkerPublisherPolicy', () => {
  const { template, config } = synthStack({ version: 'v4' });
  const queueArn = (name: string) => ({
    'Fn::GetAtt': [Object.keys(template.findResources('AWS::SQS::Queue', { Properties: { QueueName: name } }))[0], 'Arn'],
  });

  it("lets its holder send to this version's work queues, and nothing else", () => {
    template.resourceCountIs('AWS::IAM::ManagedPolicy', 1);
    template.hasResourceProperties('AWS::IAM::ManagedPolicy', {
      ManagedPolicyName: 'taskworker-v4-publisher',
      PolicyDocument: {
        Statement: [
          {
            Effect: 'Allow',
            Action: PUBLISHER_ACTIONS,
            Resource: config.queues.map((q) => queueArn(`taskworker-v4-${q.name}`)),
          },
        ],
      },
    });
    expect(PUBLISHER_ACTIONS).toEqual(['sqs:SendMessage', 'sqs:GetQueueUrl']);
  });
});

describe('TaskworkerStack outputs', () => {
  const { template, config } = synthStack({ version: 'v4' });
  const id = (type: string, name: Record<string, string>) => Object.keys(template.findResources(type, { Properties: name }))[0];

  it('prints every queue URL, the archive URL, table names and the publisher policy ARN', () => {
    for (const q of config.queues) {
      const pascal = q.name
        .split('_')
        .map((w) => w[0]?.toUpperCase() + w.slice(1))
        .join('');
      template.hasOutput(`QueueUrl${pascal}`, { Value: { Ref: id('AWS::SQS::Queue', { QueueName: `taskworker-v4-${q.name}` }) } });
      template.hasOutput(`DeadLetterQueueUrl${pascal}`, {
        Value: { Ref: id('AWS::SQS::Queue', { QueueName: `taskworker-v4-${q.name}-dlq` }) },
      });
    }
    template.hasOutput('ArchiveQueueUrl', { Value: { Ref: id('AWS::SQS::Queue', { QueueName: 'taskworker-v4-archive' }) } });
    template.hasOutput('JobsTableName', { Value: { Ref: id('AWS::DynamoDB::Table', { TableName: 'taskworker-v4-jobs' }) } });
    template.hasOutput('StatsTableName', { Value: { Ref: id('AWS::DynamoDB::Table', { TableName: 'taskworker-v4-stats' }) } });
    template.hasOutput('PublisherPolicyArn', { Value: { Ref: Object.keys(template.findResources('AWS::IAM::ManagedPolicy'))[0] } });
    template.hasOutput('DispatcherFunctionName', {});
  });

  it('tags every resource with the app and the version', () => {
    template.hasResourceProperties('AWS::SQS::Queue', {
      Tags: [
        { Key: 'taskworker:app', Value: 'taskworker' },
        { Key: 'taskworker:version', Value: 'v4' },
      ],
    });
  });

  it('rejects a malformed version, naming the field', () => {
    expect(() => synthStack({ version: 'V1.0' })).toThrow(/Invalid config version = "V1.0": expected lowercase letters/);
  });
});
