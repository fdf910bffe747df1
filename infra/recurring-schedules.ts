import { Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as scheduler from 'aws-cdk-lib/aws-scheduler';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import type { TaskworkerConfig } from '../lib/config/app-config';
import { ConfigError } from '../lib/errors';
import { eventBridgeExpression } from '../lib/policy/cron-expressions';
import { SCHEDULED_TIME_KEYWORD, tickBody } from '../lib/policy/recurring-ticks';

/** What the schedules' role may do: send a tick to a queue (SQS SSE with SQS-owned keys needs no KMS grant). */
export const SCHEDULE_TARGET_ACTIONS = ['sqs:SendMessage'];

export interface TaskworkerSchedulesProps {
  readonly config: TaskworkerConfig;
  readonly version: string;
  /** The version's work queues by configured name. */
  readonly queues: Readonly<Record<string, sqs.IQueue>>;
  /** The queue of a task a schedule names without a `queue` of its own. */
  readonly taskQueue: (task: string) => string | undefined;
  /** @default true */
  readonly enabled?: boolean;
}

/**
 * The config's recurring tasks as EventBridge Scheduler schedules, in a schedule group of the
 * version (`<app>-<version>`), so they are created and deleted with it. Each sends its task's
 * envelope to the task's queue with SendMessage; the job id is `schedule:<name>:<scheduled time>`,
 * so a tick delivered twice is one job. One role, assumable by the scheduler of this account only,
 * may send to exactly the queues the schedules target.
 */
export class TaskworkerSchedules extends Construct {
  public readonly schedules: readonly scheduler.CfnSchedule[];
  public readonly group: scheduler.CfnScheduleGroup | undefined;
  public readonly role: iam.IRole | undefined;

  constructor(scope: Construct, id: string, props: TaskworkerSchedulesProps) {
    super(scope, id);
    const { config, version } = props;
    if (config.schedules.length === 0) {
      this.schedules = [];
      this.group = undefined;
      this.role = undefined;
      return;
    }
    const targets = config.schedules.map((s, i) => {
      const name = s.queue ?? props.taskQueue(s.task);
      const queue = name === undefined ? undefined : props.queues[name];
      if (!queue) throw new ConfigError(`schedules[${i}].task`, s.task, 'a task of this version (its queue decides where the ticks go)');
      return queue;
    });
    const group = new scheduler.CfnScheduleGroup(this, 'Group', { name: `${config.app}-${version}` });
    const account = Stack.of(this).account;
    const role = new iam.Role(this, 'Role', {
      description: `EventBridge Scheduler: send ${config.app} ${version}'s recurring tasks to their queues`,
      assumedBy: new iam.ServicePrincipal('scheduler.amazonaws.com', {
        conditions: { StringEquals: { 'aws:SourceAccount': account } },
      }),
    });
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({ actions: SCHEDULE_TARGET_ACTIONS, resources: [...new Set(targets.map((q) => q.queueArn))] }),
    );
    this.group = group;
    this.role = role;
    this.schedules = config.schedules.map((s, i) => {
      const schedule = new scheduler.CfnSchedule(this, `Schedule${i}`, {
        name: s.name,
        groupName: group.name as string,
        description: `taskworker ${config.app} ${version}: ${s.task}`,
        scheduleExpression: eventBridgeExpression(s, `schedules[${i}].cron`),
        scheduleExpressionTimezone: s.timezone,
        flexibleTimeWindow: { mode: 'OFF' },
        state: props.enabled === false ? 'DISABLED' : 'ENABLED',
        target: {
          arn: (targets[i] as sqs.IQueue).queueArn,
          roleArn: role.roleArn,
          input: tickBody(s, SCHEDULED_TIME_KEYWORD),
        },
      });
      schedule.node.addDependency(group);
      return schedule;
    });
  }
}
