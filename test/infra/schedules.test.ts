import { Match } from 'aws-cdk-lib/assertions';
import { SCHEDULE_TARGET_ACTIONS } from '../../infra/recurring-schedules';
import exampleConfig from '../../taskworker.config';
import { logicalId, synthStack } from '../helpers/infra';

describe('TaskworkerSchedules', () => {
  const { template, stack } = synthStack();
  const schedules = template.findResources('AWS::Scheduler::Schedule');
  const lowPriority = logicalId(stack, stack.taskworker.queues.low_priority as never);

  it("schedules the example's recurring task in a group of the version, in its time zone, to its task's queue", () => {
    expect(Object.keys(schedules)).toHaveLength(1);
    template.hasResourceProperties('AWS::Scheduler::ScheduleGroup', { Name: 'taskworker-v1' });
    template.hasResourceProperties('AWS::Scheduler::Schedule', {
      Name: 'refresh-index',
      GroupName: 'taskworker-v1',
      ScheduleExpression: 'cron(0,5,10,15,20,25,30,35,40,45,50,55 * * * ? *)',
      ScheduleExpressionTimezone: 'Europe/Berlin',
      FlexibleTimeWindow: { Mode: 'OFF' },
      State: 'ENABLED',
      Target: Match.objectLike({ Arn: { 'Fn::GetAtt': [lowPriority, 'Arn'] } }),
    });
  });

  it('sends an envelope whose job id is the schedule name and the tick time, so a tick delivered twice is one job', () => {
    const target = (Object.values(schedules)[0] as { Properties: { Target: { Input: string } } }).Properties.Target;
    expect(JSON.parse(target.Input)).toEqual({
      v: 1,
      task: 'rebuild-index',
      payload: { shard: 0 },
      id: 'schedule:refresh-index:<aws.scheduler.scheduled-time>',
      appData: { schedule: 'refresh-index', scheduledTime: '<aws.scheduler.scheduled-time>' },
    });
  });

  it('uses a role only the scheduler of this account assumes, allowed only to send to the target queue', () => {
    const roleId = (Object.values(schedules)[0] as { Properties: { Target: { RoleArn: { 'Fn::GetAtt': [string] } } } }).Properties.Target
      .RoleArn['Fn::GetAtt'][0];
    const role = template.findResources('AWS::IAM::Role')[roleId] as { Properties: { AssumeRolePolicyDocument: unknown } };
    expect(role.Properties.AssumeRolePolicyDocument).toEqual({
      Version: '2012-10-17',
      Statement: [
        {
          Action: 'sts:AssumeRole',
          Effect: 'Allow',
          Principal: { Service: 'scheduler.amazonaws.com' },
          Condition: { StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } } },
        },
      ],
    });
    const policies = Object.values(template.findResources('AWS::IAM::Policy')) as Array<{
      Properties: { Roles: Array<{ Ref: string }>; PolicyDocument: { Statement: unknown[] } };
    }>;
    const statements = policies
      .filter((p) => p.Properties.Roles.some((r) => r.Ref === roleId))
      .flatMap((p) => p.Properties.PolicyDocument.Statement);
    expect(statements).toEqual([{ Action: SCHEDULE_TARGET_ACTIONS[0], Effect: 'Allow', Resource: { 'Fn::GetAtt': [lowPriority, 'Arn'] } }]);
  });

  it("creates a version's schedules switched off when told to (a release's overlap)", () => {
    const off = synthStack({ version: 'v2', props: { schedules: 'disabled' } });
    off.template.hasResourceProperties('AWS::Scheduler::Schedule', { Name: 'refresh-index', State: 'DISABLED' });
  });

  it('has nothing to schedule without schedules', () => {
    const none = synthStack({ config: { ...exampleConfig, schedules: [] } });
    expect(Object.keys(none.template.findResources('AWS::Scheduler::Schedule'))).toEqual([]);
    expect(Object.keys(none.template.findResources('AWS::Scheduler::ScheduleGroup'))).toEqual([]);
  });

  it('fails the synth naming the field: an unknown task, a payload the task refuses, a bad crontab, an unknown queue', () => {
    const withSchedule = (schedule: Record<string, unknown>) => () =>
      synthStack({
        config: { ...exampleConfig, schedules: [{ name: 's', task: 'rebuild-index', cron: '0 * * * *', ...schedule } as never] },
      });
    expect(withSchedule({ task: 'no-such-task' })).toThrow(/schedules\[0\]\.task = "no-such-task": expected a registered task/);
    expect(withSchedule({ cron: '0 25 * * *' })).toThrow(/schedules\[0\]\.cron = "0 25 \* \* \*": expected a valid crontab/);
    expect(withSchedule({ cron: '0 0 1 * MON' })).toThrow(/schedules\[0\]\.cron .*not both/);
    expect(withSchedule({ queue: 'nowhere' })).toThrow(/schedules\[0\]\.queue = "nowhere": expected one of the configured queues/);
    expect(withSchedule({ task: 'send-notification', payload: { user: 42 } })).toThrow(/schedules\[0\]\.payload = .*validate accepts/);
  });
});
