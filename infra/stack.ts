import { CfnOutput, Stack, type StackProps } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { resolveConfig, validateVersion } from '../lib/config/app-config';
import { loadConfigModuleSync } from '../lib/tasks/build';
import { inProject, TaskworkerVersion, type TaskworkerVersionProps } from './version';

export type TaskworkerStackProps = StackProps & TaskworkerVersionProps;

/** Stack name of an app's version: `Taskworker-<app>-<version>`, so two apps in one account never collide. */
export function stackName(app: string, version: string): string {
  return `Taskworker-${app}-${validateVersion(version)}`;
}

/**
 * One stack per release version, for those who want one: a {@link TaskworkerVersion} and, as
 * outputs, what publishers and operators need (queue URLs, the publisher policy, the tables).
 * To put a version into a stack of your own, use {@link TaskworkerVersion} directly.
 *
 * @example
 * ```ts
 * const app = new App();
 * new TaskworkerStack(app, stackName('orders', 'v1'), { config: './taskworker.config.ts', version: 'v1' });
 * ```
 */
export class TaskworkerStack extends Stack {
  public readonly taskworker: TaskworkerVersion;

  /** A stack named after the app and version (`Taskworker-<app>-<version>`). */
  static forVersion(scope: Construct, props: TaskworkerStackProps): TaskworkerStack {
    const input = typeof props.config === 'string' ? loadConfigModuleSync(inProject('config', props.config)) : props.config;
    return new TaskworkerStack(scope, stackName(resolveConfig(input).app, props.version), props);
  }

  constructor(scope: Construct, id: string, props: TaskworkerStackProps) {
    super(scope, id, props);
    const version = new TaskworkerVersion(this, 'Taskworker', props);
    this.taskworker = version;
    this.templateOptions.description = `taskworker ${version.config.app} ${version.version}`;

    for (const q of version.config.queues) {
      new CfnOutput(this, `QueueUrl${pascal(q.name)}`, {
        description: `URL of queue ${q.name}`,
        value: (version.queues[q.name] as { queueUrl: string }).queueUrl,
      });
      new CfnOutput(this, `DeadLetterQueueUrl${pascal(q.name)}`, {
        description: `URL of the DLQ of ${q.name}`,
        value: (version.deadLetterQueues[q.name] as { queueUrl: string }).queueUrl,
      });
    }
    new CfnOutput(this, 'ArchiveQueueUrl', { description: 'URL of the archive queue', value: version.archive.queueUrl });
    new CfnOutput(this, 'JobsTableName', { description: 'Job records', value: version.jobsTable.tableName });
    new CfnOutput(this, 'StatsTableName', { description: 'Per-queue daily stats', value: version.statsTable.tableName });
    new CfnOutput(this, 'PublisherPolicyArn', {
      description: "Managed policy to attach to publishers: SendMessage to this version's queues only",
      value: version.publisherPolicy.managedPolicyArn,
    });
    new CfnOutput(this, 'PayloadBucketName', {
      description: 'Where payloads too large for a message are kept (payloadRef.bucket), under payloads/',
      value: version.payloads.bucket.bucketName,
    });
    new CfnOutput(this, 'DispatcherFunctionName', { value: version.dispatcher.functionName });
    new CfnOutput(this, 'DashboardName', { value: version.dashboard.dashboardName });
    if (version.alarmTopic) new CfnOutput(this, 'AlarmTopicArn', { value: version.alarmTopic.topicArn });
    if (version.eventTopic)
      new CfnOutput(this, 'EventTopicArn', { description: 'Where the app emits its events', value: version.eventTopic.topicArn });
  }
}

function pascal(name: string): string {
  return name
    .split('_')
    .map((w) => (w[0]?.toUpperCase() ?? '') + w.slice(1))
    .join('');
}
