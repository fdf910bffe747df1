import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { buildApp } from '../../infra/app';
import { ConfigError } from '../../lib/errors';

/** The CDK app as `cdk synth -c key=value …` builds it (bundling skipped). */
function appWith(context: Record<string, unknown>) {
  return buildApp(new App({ outdir: mkdtempSync(join(tmpdir(), 'tw-app-')), context: { 'aws:cdk:bundling-stacks': [], ...context } }));
}

describe('infra/app.ts context options', () => {
  it('builds Taskworker-<app>-<version> from taskworker.config.ts by default', async () => {
    const { app, stack } = await appWith({ version: 'v12' });
    expect(app.node.children.map((c) => c.node.id)).toEqual(['Taskworker-taskworker-v12']);
    Template.fromStack(stack).hasResourceProperties('AWS::SQS::Queue', { QueueName: 'taskworker-v12-high_priority' });
  });

  it('reads another config module with -c config=…', async () => {
    const { stack } = await appWith({ version: 'v1', config: 'test/fixtures/taskworker.config.ts' });
    Template.fromStack(stack).hasResourceProperties('AWS::SQS::Queue', { QueueName: 'twtest-v1-urgent', VisibilityTimeout: 5 });
  });

  it('sends alarms to a topic given by ARN, or to a new one', async () => {
    const arn = 'arn:aws:sns:us-east-1:123456789012:oncall';
    const given = Template.fromStack((await appWith({ version: 'v1', alarmTopic: arn })).stack);
    given.allResourcesProperties('AWS::CloudWatch::Alarm', { AlarmActions: [arn] });
    const created = Template.fromStack((await appWith({ version: 'v1', alarmTopic: 'create' })).stack);
    // The alarm topic, beside the example app's event topic.
    expect(Object.keys(created.findResources('AWS::SNS::Topic', { Properties: { TopicName: 'taskworker-v1-alarms' } }))).toHaveLength(1);
    created.resourceCountIs('AWS::SNS::Topic', 2);
  });

  it('destroys data with the stack only when told: -c retainData=false', async () => {
    const throwaway = Template.fromStack((await appWith({ version: 'v1', retainData: 'false' })).stack);
    throwaway.allResources('AWS::DynamoDB::Table', { DeletionPolicy: 'Delete' });
    const kept = Template.fromStack((await appWith({ version: 'v1', retainData: 'true' })).stack);
    kept.allResources('AWS::DynamoDB::Table', { DeletionPolicy: 'Retain' });
  });

  it.each([
    [{}, /Invalid config version \(cdk -c version=…\) = undefined/],
    [{ version: 'v1', alarmTopic: 'ops-team' }, /alarmTopic \(cdk -c alarmTopic=…\) = "ops-team": expected "create" or an SNS topic ARN/],
    [{ version: 'v1', retainData: 'no' }, /retainData \(cdk -c retainData=…\) = "no": expected true or false/],
    [{ version: 'v1', config: '' }, /config \(cdk -c config=…\) = "": expected a non-empty string/],
  ])('rejects bad context %j, naming the option', (context, message) => {
    expect(() => appWith(context)).toThrow(ConfigError);
    expect(() => appWith(context)).toThrow(message);
  });
});
