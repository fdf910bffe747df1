import { Match } from 'aws-cdk-lib/assertions';
import { JOB_METRICS } from '../../lib/wire/metric-names';
import { synthStack } from '../helpers/infra';

type Alarm = { Properties: Record<string, unknown> };

describe('TaskworkerMonitoring', () => {
  const { template, config } = synthStack({ version: 'v1' });
  const alarms = template.findResources('AWS::CloudWatch::Alarm') as Record<string, Alarm>;
  const alarm = (name: string) => Object.values(alarms).find((a) => a.Properties.AlarmName === `taskworker-v1-${name}`)?.Properties;
  const queueId = (name: string) => Object.keys(template.findResources('AWS::SQS::Queue', { Properties: { QueueName: name } }))[0];
  const queueDimension = (name: string) => [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [queueId(name), 'QueueName'] } }];

  it('alarms as soon as anything is archived', () => {
    expect(alarm('archive-not-empty')).toMatchObject({
      Namespace: 'AWS/SQS',
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Dimensions: queueDimension('taskworker-v1-archive'),
      ComparisonOperator: 'GreaterThanThreshold',
      Threshold: 0,
      TreatMissingData: 'notBreaching',
    });
  });

  it('alarms on any message in any DLQ', () => {
    for (const q of config.queues) {
      expect(alarm(`${q.name}-dlq-not-empty`)).toMatchObject({
        MetricName: 'ApproximateNumberOfMessagesVisible',
        Dimensions: queueDimension(`taskworker-v1-${q.name}-dlq`),
        Threshold: 0,
      });
    }
  });

  it("alarms when a queue's oldest message is older than that queue's SLA for 3 minutes", () => {
    for (const q of config.queues) {
      expect(alarm(`${q.name}-older-than-sla`)).toMatchObject({
        MetricName: 'ApproximateAgeOfOldestMessage',
        Dimensions: queueDimension(`taskworker-v1-${q.name}`),
        Statistic: 'Maximum',
        Period: 60,
        Threshold: q.slaSeconds,
        EvaluationPeriods: 3,
        DatapointsToAlarm: 3,
      });
    }
    expect(config.queues.map((q) => q.slaSeconds)).toEqual([10, 60, 300]);
  });

  it('alarms on dispatcher errors, throttles and a duration inside the settle margin', () => {
    expect(alarm('dispatcher-errors')).toMatchObject({ Namespace: 'AWS/Lambda', MetricName: 'Errors', Threshold: 1 });
    expect(alarm('dispatcher-throttles')).toMatchObject({ Namespace: 'AWS/Lambda', MetricName: 'Throttles', Threshold: 1 });
    // timeout 300 s, settle margin 5 s: an invocation still running 2.5 s before its timeout overran the margin
    expect(alarm('dispatcher-near-timeout')).toMatchObject({ MetricName: 'Duration', Statistic: 'Maximum', Threshold: 297_500 });
    expect(Object.keys(alarms)).toHaveLength(1 + 2 * config.queues.length + 3);
  });

  it('has no alarm actions unless a topic is given', () => {
    for (const a of Object.values(alarms)) expect(a.Properties.AlarmActions).toBeUndefined();
    const arn = 'arn:aws:sns:eu-west-1:123456789012:ops';
    const withTopic = synthStack({ props: { alarmTopicArn: arn } }).template;
    withTopic.allResourcesProperties('AWS::CloudWatch::Alarm', { AlarmActions: [arn], OKActions: [arn] });
  });

  it('can create an encrypted, TLS-only alarm topic that CloudWatch is allowed to encrypt for', () => {
    const { template: t } = synthStack({ props: { alarmTopic: 'create' } });
    const topicId = Object.keys(t.findResources('AWS::SNS::Topic'))[0] as string;
    const keyId = Object.keys(t.findResources('AWS::KMS::Key'))[0] as string;
    t.hasResourceProperties('AWS::SNS::Topic', { KmsMasterKeyId: { 'Fn::GetAtt': [keyId, 'Arn'] } });
    t.hasResourceProperties('AWS::KMS::Key', {
      EnableKeyRotation: true,
      KeyPolicy: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Principal: { Service: 'cloudwatch.amazonaws.com' },
            Action: Match.arrayWith(['kms:Decrypt', 'kms:GenerateDataKey*']),
          }),
        ]),
      },
    });
    t.hasResourceProperties('AWS::SNS::TopicPolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } })]),
      },
    });
    t.allResourcesProperties('AWS::CloudWatch::Alarm', { AlarmActions: [{ Ref: topicId }] });
    t.hasOutput('AlarmTopicArn', { Value: { Ref: topicId } });
  });

  it('builds a dashboard with depth, age against SLA, outcomes and wait/run time per queue', () => {
    template.resourceCountIs('AWS::CloudWatch::Dashboard', 1);
    const dashboard = Object.values(template.findResources('AWS::CloudWatch::Dashboard'))[0] as Alarm;
    expect(dashboard.Properties.DashboardName).toBe('taskworker-v1');
    const body = JSON.stringify(dashboard.Properties.DashboardBody);
    for (const q of config.queues) {
      expect(body).toContain(`${q.name}: depth`);
      expect(body).toContain(`${q.name}: age of oldest message (s)`);
      // EMF metrics with exactly the dimensions the dispatcher emits: service, version, queue
      expect(body).toContain(
        `[\\"Taskworker\\",\\"${JOB_METRICS.succeeded}\\",\\"queue\\",\\"${q.name}\\",\\"service\\",\\"taskworker\\",\\"version\\",\\"v1\\"`,
      );
      expect(body).toContain(`\\"value\\":${q.slaSeconds},\\"label\\":\\"SLA ${q.slaSeconds} s\\"`);
    }
    expect(body).toContain(JOB_METRICS.waitTime);
    expect(body).toContain(JOB_METRICS.runTime);
    expect(body).toContain('EmptyReceives');
    expect(body).toContain('JobsDuplicate');
  });
});
