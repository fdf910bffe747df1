import { CfnOutput, RemovalPolicy, Stack, type StackProps, Tags } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sns from 'aws-cdk-lib/aws-sns';
import type { Construct } from 'constructs';
import { type TaskworkerConfig, validateVersion } from '../lib/config';
import { dispatcherCode } from './artifact';
import { type DispatcherLogLevel, TaskworkerDispatcher } from './dispatcher';
import { TaskworkerMonitoring } from './monitoring';
import { TaskworkerPublisherPolicy } from './publisher-policy';
import { TaskworkerQueues } from './queues';
import { TaskworkerTables } from './tables';

export interface TaskworkerStackProps extends StackProps {
  /** The resolved app config (`resolveConfig`): queues, dispatcher settings. */
  readonly config: TaskworkerConfig;
  /** Release version, e.g. `v42`: in every resource name, so versions live side by side. */
  readonly version: string;
  /** The config module the dispatcher artifact is built from (it must hold `config`). */
  readonly configFile: string;
  /** Replaces the built artifact (tests). @default dispatcherCode({ configFile }) */
  readonly code?: lambda.Code;
  /**
   * Alarm notifications: an existing topic, `'create'` for a new encrypted topic (exposed as
   * `alarmTopic`; subscribe to it), or none.
   * @default no alarm actions
   */
  readonly alarmTopic?: sns.ITopic | 'create';
  /** An existing topic for alarm notifications, by ARN (instead of `alarmTopic`). */
  readonly alarmTopicArn?: string;
  /**
   * Keep the archive, DLQs and tables when the stack is destroyed, so nothing archived or
   * recorded is lost with the version. `false` destroys everything with the stack.
   * @default true
   */
  readonly retainData?: boolean;
  /** The dispatcher's reserved concurrency. @default config.dispatcher.maxConcurrency */
  readonly reservedConcurrency?: number;
  /** @default 'INFO' */
  readonly logLevel?: DispatcherLogLevel;
}

/** Stack name of a version: `Taskworker-<version>`. */
export function stackName(version: string): string {
  return `Taskworker-${validateVersion(version)}`;
}

/**
 * One release version of a taskworker app: its queues, tables, dispatcher on a schedule,
 * alarms, dashboard and publisher policy. Deploy the next version beside it, move publishers
 * over, let this one drain, destroy it.
 *
 * @example
 * ```ts
 * const app = new App();
 * new TaskworkerStack(app, stackName('v1'), { config: resolveConfig(input), version: 'v1', configFile: 'taskworker.config.ts' });
 * ```
 */
export class TaskworkerStack extends Stack {
  public readonly queues: TaskworkerQueues;
  public readonly tables: TaskworkerTables;
  public readonly dispatcher: TaskworkerDispatcher;
  public readonly monitoring: TaskworkerMonitoring;
  public readonly publisherPolicy: iam.ManagedPolicy;
  /** The topic alarms notify, when one was given or created. */
  public readonly alarmTopic: sns.ITopic | undefined;

  constructor(scope: Construct, id: string, props: TaskworkerStackProps) {
    // Validated before anything is named after it.
    const version = validateVersion(props.version);
    super(scope, id, { description: `taskworker ${props.config.app} ${version}`, ...props });
    const { config } = props;
    Tags.of(this).add('taskworker:app', config.app);
    Tags.of(this).add('taskworker:version', version);
    const dataRemoval = props.retainData === false ? RemovalPolicy.DESTROY : undefined;

    this.queues = new TaskworkerQueues(this, 'Queues', { config, version, ...(dataRemoval ? { removalPolicy: dataRemoval } : {}) });
    this.tables = new TaskworkerTables(this, 'Tables', { config, version, ...(dataRemoval ? { removalPolicy: dataRemoval } : {}) });
    this.dispatcher = new TaskworkerDispatcher(this, 'Dispatcher', {
      config,
      version,
      code: props.code ?? dispatcherCode({ configFile: props.configFile }),
      queues: this.queues.queues,
      archive: this.queues.archive,
      jobsTable: this.tables.jobs,
      statsTable: this.tables.stats,
      ...(props.reservedConcurrency !== undefined ? { reservedConcurrency: props.reservedConcurrency } : {}),
      ...(props.logLevel ? { logLevel: props.logLevel } : {}),
    });
    if (props.alarmTopic && props.alarmTopicArn) throw new Error('TaskworkerStack: give alarmTopic or alarmTopicArn, not both');
    this.alarmTopic =
      props.alarmTopic === 'create'
        ? this.createAlarmTopic(config, version)
        : (props.alarmTopic ?? (props.alarmTopicArn ? sns.Topic.fromTopicArn(this, 'AlarmTopic', props.alarmTopicArn) : undefined));
    this.monitoring = new TaskworkerMonitoring(this, 'Monitoring', {
      config,
      version,
      queues: this.queues.queues,
      deadLetterQueues: this.queues.deadLetterQueues,
      archive: this.queues.archive,
      dispatcher: this.dispatcher.function,
      ...(this.alarmTopic ? { alarmTopic: this.alarmTopic } : {}),
    });
    this.publisherPolicy = new TaskworkerPublisherPolicy(this, 'Publisher', {
      queues: Object.values(this.queues.queues),
      managedPolicyName: `${config.app}-${version}-publisher`,
    }).policy;

    for (const q of config.queues) {
      new CfnOutput(this, `QueueUrl${pascal(q.name)}`, {
        description: `URL of queue ${q.name}`,
        value: (this.queues.queues[q.name] as { queueUrl: string }).queueUrl,
      });
      new CfnOutput(this, `DeadLetterQueueUrl${pascal(q.name)}`, {
        description: `URL of the DLQ of ${q.name}`,
        value: (this.queues.deadLetterQueues[q.name] as { queueUrl: string }).queueUrl,
      });
    }
    new CfnOutput(this, 'ArchiveQueueUrl', { description: 'URL of the archive queue', value: this.queues.archive.queueUrl });
    new CfnOutput(this, 'JobsTableName', { description: 'Job records', value: this.tables.jobs.tableName });
    new CfnOutput(this, 'StatsTableName', { description: 'Per-queue daily stats', value: this.tables.stats.tableName });
    new CfnOutput(this, 'PublisherPolicyArn', {
      description: "Managed policy to attach to publishers: SendMessage to this version's queues only",
      value: this.publisherPolicy.managedPolicyArn,
    });
    new CfnOutput(this, 'DispatcherFunctionName', { value: this.dispatcher.function.functionName });
    new CfnOutput(this, 'DashboardName', { value: this.monitoring.dashboard.dashboardName });
    if (this.alarmTopic) new CfnOutput(this, 'AlarmTopicArn', { value: this.alarmTopic.topicArn });
  }

  /** An SNS topic CloudWatch can publish to: encrypted with a key whose policy lets CloudWatch use it, TLS only. */
  private createAlarmTopic(config: TaskworkerConfig, version: string): sns.Topic {
    const key = new kms.Key(this, 'AlarmTopicKey', {
      description: `taskworker ${config.app} ${version} alarm topic`,
      enableKeyRotation: true,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    // The AWS-managed SNS key cannot be used: its policy does not let CloudWatch encrypt with it.
    key.grant(new iam.ServicePrincipal('cloudwatch.amazonaws.com'), 'kms:Decrypt', 'kms:GenerateDataKey*');
    return new sns.Topic(this, 'AlarmTopic', {
      topicName: `${config.app}-${version}-alarms`,
      displayName: `taskworker ${config.app} ${version} alarms`,
      masterKey: key,
      enforceSSL: true,
    });
  }
}

function pascal(name: string): string {
  return name
    .split('_')
    .map((w) => (w[0]?.toUpperCase() ?? '') + w.slice(1))
    .join('');
}
