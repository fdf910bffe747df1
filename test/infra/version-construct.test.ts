/**
 * `TaskworkerVersion` in a stack of the user's own, as `taskworker/cdk` gives it: paths against
 * the user's project, members to wire the rest of their app to, and grants that do not tie the
 * version's lifetime to the stacks that publish to it.
 */
import { join } from 'node:path';
import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as iam from 'aws-cdk-lib/aws-iam';
import { AwsSolutionsChecks } from 'cdk-nag';
import { TaskworkerVersion } from 'taskworker/cdk';
import { ConfigError } from '../../lib/errors';

const FIXTURE_CONFIG = join('test', 'fixtures', 'taskworker.config.ts');
const noBundling = () => new App({ context: { 'aws:cdk:bundling-stacks': [] } });

describe('TaskworkerVersion in the user’s own stack', () => {
  it('reads a config path relative to the project (the working directory), and exposes what it made', () => {
    const stack = new Stack(noBundling(), 'Orders');
    const v1 = new TaskworkerVersion(stack, 'TasksV1', { config: `./${FIXTURE_CONFIG}`, version: 'v1' });
    expect(Object.keys(v1.queues)).toEqual(['urgent', 'routine', 'bulk']);
    expect(v1.queueNames()).toEqual({
      queues: { urgent: 'twtest-v1-urgent', routine: 'twtest-v1-routine', bulk: 'twtest-v1-bulk' },
      archive: 'twtest-v1-archive',
    });
    const template = Template.fromStack(stack);
    template.hasResourceProperties('AWS::SQS::Queue', { QueueName: 'twtest-v1-urgent' });
    template.hasResourceProperties('AWS::Lambda::Function', { FunctionName: 'twtest-v1-dispatcher' });
    // A construct in someone's stack adds no outputs of its own.
    expect(template.toJSON().Outputs).toBeUndefined();
  });

  it('holds two versions side by side in one stack', () => {
    const stack = new Stack(noBundling(), 'Orders');
    new TaskworkerVersion(stack, 'V1', { config: FIXTURE_CONFIG, version: 'v1' });
    new TaskworkerVersion(stack, 'V2', { config: FIXTURE_CONFIG, version: 'v2' });
    const names = Object.values(Template.fromStack(stack).findResources('AWS::SQS::Queue')).map(
      (q) => (q as { Properties: { QueueName: string } }).Properties.QueueName,
    );
    expect(names.filter((n) => n.includes('-v1-'))).toHaveLength(7);
    expect(names.filter((n) => n.includes('-v2-'))).toHaveLength(7);
  });

  it('names the field and the resolved path when the config is not there', () => {
    const attempt = () =>
      new TaskworkerVersion(new Stack(noBundling(), 'Orders'), 'V1', { config: './config/taskworker.config.ts', version: 'v1' });
    expect(attempt).toThrow(ConfigError);
    expect(attempt).toThrow(`config = "./config/taskworker.config.ts": expected a config module (resolved against ${process.cwd()}`);
  });

  it('takes a config object with a tasks directory, and says when the directory is missing', () => {
    const config = { app: 'inline', queues: [{ name: 'default', priority: 1 }] };
    const stack = new Stack(noBundling(), 'Orders');
    const v = new TaskworkerVersion(stack, 'V1', { config, version: 'v1', tasksDir: 'examples/tasks' });
    expect(v.config.app).toBe('inline');
    expect(() => new TaskworkerVersion(new Stack(noBundling(), 'Other'), 'V1', { config, version: 'v1' })).toThrow(
      /config.tasksDir = "tasks": expected a directory of task modules/,
    );
  });

  it('grants a role in another stack publishing without any cross-stack export', () => {
    const app = noBundling();
    const tasks = new Stack(app, 'Tasks');
    const api = new Stack(app, 'Api');
    const role = new iam.Role(api, 'ApiRole', { assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com') });
    const v1 = new TaskworkerVersion(tasks, 'V1', { config: FIXTURE_CONFIG, version: 'v1' });
    v1.grantPublish(role, { recordQueued: true });
    const assembly = app.synth();
    const tasksTemplate = assembly.getStackByName('Tasks').template as { Outputs?: Record<string, unknown> };
    const apiTemplate = JSON.stringify(assembly.getStackByName('Api').template);
    expect(tasksTemplate.Outputs ?? {}).toEqual({});
    expect(apiTemplate).not.toContain('Fn::ImportValue');
    expect(assembly.getStackByName('Api').dependencies.map((d) => d.id)).not.toContain('Tasks');
    const policy = Template.fromStack(api).findResources('AWS::IAM::Policy');
    const statements = Object.values(policy).flatMap(
      (p) => (p as { Properties: { PolicyDocument: { Statement: Array<{ Action: unknown }> } } }).Properties.PolicyDocument.Statement,
    );
    expect(statements.map((s) => s.Action)).toEqual([['sqs:SendMessage', 'sqs:GetQueueUrl'], 'dynamodb:UpdateItem']);
    expect(JSON.stringify(statements)).toContain('twtest-v1-urgent');
    expect(JSON.stringify(statements)).not.toContain('twtest-v1-urgent-dlq');
  });

  it('grants what each publisher option needs on the jobs table and nothing more', () => {
    const actionsFor = (options: Parameters<TaskworkerVersion['grantPublish']>[1]) => {
      const stack = new Stack(noBundling(), 'Grants');
      const role = new iam.Role(stack, 'Publisher', { assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com') });
      new TaskworkerVersion(stack, 'V1', { config: FIXTURE_CONFIG, version: 'v1' }).grantPublish(role, options);
      const policies = Object.values(Template.fromStack(stack).findResources('AWS::IAM::Policy')) as Array<{
        Properties: { Roles: Array<{ Ref: string }>; PolicyDocument: { Statement: Array<{ Action: unknown; Resource: unknown }> } };
      }>;
      return policies
        .filter((p) => JSON.stringify(p.Properties.Roles).includes('Publisher'))
        .flatMap((p) => p.Properties.PolicyDocument.Statement)
        .filter((st) => JSON.stringify(st.Resource).includes('twtest-v1-jobs'))
        .flatMap((st) => [st.Action].flat());
    };
    expect(actionsFor({})).toEqual([]);
    expect(actionsFor({ results: true })).toEqual(['dynamodb:GetItem']);
    expect(actionsFor({ cancel: true })).toEqual(['dynamodb:GetItem', 'dynamodb:UpdateItem']);
    expect(actionsFor({ recordQueued: true })).toEqual(['dynamodb:UpdateItem']);
    expect(actionsFor({ flows: true })).toEqual(['dynamodb:UpdateItem', 'dynamodb:BatchGetItem', 'dynamodb:Query']);
  });

  it('passes cdk-nag AwsSolutions in the user’s stack (the one acknowledged finding aside)', () => {
    const app = noBundling();
    const stack = new Stack(app, 'Orders');
    new TaskworkerVersion(stack, 'V1', { config: FIXTURE_CONFIG, version: 'v1', alarmTopic: 'create' });
    const report = new AwsSolutionsChecks(app).validateScope(stack);
    expect(report.violations).toEqual([]);
  });
});
