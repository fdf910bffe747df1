import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import { ArnFormat, RemovalPolicy, Stack, Tags } from 'aws-cdk-lib';
import type * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as scheduler from 'aws-cdk-lib/aws-scheduler';
import * as sns from 'aws-cdk-lib/aws-sns';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { resolveConfig, type TaskworkerConfig, type TaskworkerConfigInput, validateVersion } from '../lib/config/app-config';
import { ConfigError } from '../lib/errors';
import { PAYLOAD_PREFIX, payloadBucketName, RESULT_PREFIX } from '../lib/layout/payloads';
import { archiveQueueName, queueResourceName } from '../lib/layout/queues';
import { JOBS_BY_TAG_INDEX, tableNames } from '../lib/layout/tables';
import { eventTopicName } from '../lib/layout/topics';
import { checkCrontabs } from '../lib/policy/cron-expressions';
import { buildTasksBundleSync, loadConfigModuleSync } from '../lib/tasks/build';
import { loadTaskBundle } from '../lib/tasks/bundle';
import type { TaskRegistry } from '../lib/tasks/task';
import { type DispatcherCodeProps, dispatcherCode } from './artifact';
import { type DispatcherLogLevel, TaskworkerDispatcher } from './dispatcher-function';
import { EMIT_ACTIONS, TaskworkerEvents } from './events';
import { TaskworkerMonitoring } from './monitoring';
import { PAYLOAD_PUT_ACTIONS, RESULT_READ_ACTIONS, TaskworkerPayloads } from './payloads';
import { PUBLISHER_ACTIONS, TaskworkerPublisherPolicy } from './publisher-policy';
import { TaskworkerQueues } from './queues';
import { TaskworkerSchedules } from './recurring-schedules';
import { TaskworkerTables } from './tables';

export interface TaskworkerVersionProps {
  /**
   * The app config: the path of its module (`taskworker.config.ts`, or a JSON file), relative to
   * the CDK app's working directory (your project, where `cdk.json` is) or absolute; or the config
   * itself. The dispatcher's code is built from this module and the tasks directory.
   */
  readonly config: string | TaskworkerConfigInput;
  /** Release version, e.g. `v42`: in every resource name, so versions live side by side. */
  readonly version: string;
  /**
   * The task modules' directory, relative to the working directory or absolute.
   * @default the config's `tasksDir`, relative to the config module (to the working directory when `config` is an object)
   */
  readonly tasksDir?: string;
  /** Replaces the built dispatcher code (tests). @default the artifact built from the config and tasks */
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
   * Keep the archive, DLQs and tables when the version is destroyed, so nothing archived or
   * recorded is lost with it. `false` destroys everything with it.
   * @default true
   */
  readonly retainData?: boolean;
  /** The dispatcher's reserved concurrency. @default config.dispatcher.maxConcurrency */
  readonly reservedConcurrency?: number;
  /** @default 'INFO' */
  readonly logLevel?: DispatcherLogLevel;
  /**
   * The config's recurring tasks: `'enabled'` schedules them in EventBridge Scheduler, `'disabled'`
   * creates them switched off. During a release only one version's should be enabled (each version
   * has its own jobs table, so two enabled versions run every tick twice): deploy the new version
   * with `'disabled'`, then enable it and disable (or destroy) the old one.
   * @default 'enabled'
   */
  readonly schedules?: 'enabled' | 'disabled';
}

export interface GrantPublishOptions {
  /**
   * Also let the grantee write the `queued` record a `Publisher` with `recordQueued` writes
   * (`dynamodb:UpdateItem` on the jobs table).
   * @default false
   */
  readonly recordQueued?: boolean;
  /**
   * Also let the grantee publish jobs to run later (`delaySeconds` or `runAt`) to queues tracked
   * `full`: the publisher records each `scheduled` with its due time as it publishes it
   * (`dynamodb:UpdateItem` on the jobs table, one write per delayed publish). Without it such a
   * publish still sends the job, and warns once that it could not record it.
   * @default false
   */
  readonly delay?: boolean;
  /**
   * Also let the grantee cancel jobs parked until later (`Publisher.cancel`: `dynamodb:GetItem` and
   * `dynamodb:UpdateItem` on the jobs table).
   * @default false
   */
  readonly cancel?: boolean;
  /**
   * Also let the grantee complete the tokens jobs wait for (`Publisher.completeToken`:
   * `dynamodb:GetItem` and `dynamodb:UpdateItem` on the jobs table).
   * @default false
   */
  readonly tokens?: boolean;
  /**
   * Also let the grantee wait for results (`Publisher.result`: `dynamodb:GetItem` on the jobs table,
   * and `s3:GetObject` on the version's bucket under `results/`, where a result over 1 KB is kept).
   * @default false
   */
  readonly results?: boolean;
  /**
   * Also let the grantee publish jobs that wait for others and find jobs by tag (`dependsOn`,
   * `chain`, `chord`, `jobsByTag`: `dynamodb:UpdateItem` to record waiting jobs and index tags,
   * `dynamodb:BatchGetItem` to check dependencies, `dynamodb:Query` on the jobs table's `byTag` index).
   * @default false
   */
  readonly flows?: boolean;
  /**
   * Also let the grantee emit the app's events (`Publisher.emit`: `sns:Publish` on the version's
   * topic, `<app>-<version>-events`).
   * @default false
   */
  readonly events?: boolean;
  /**
   * Also let the grantee publish payloads over `payloads.offloadAboveBytes` (`s3:PutObject` on the
   * version's payload bucket, under `payloads/` only): without it such a publish fails, naming S3's
   * AccessDenied, and sends nothing.
   * @default false
   */
  readonly largePayloads?: boolean;
}

/**
 * One release version of a taskworker app, in your own stack: its queues (each with a DLQ), the
 * archive queue, the jobs and stats tables, the dispatcher function on its schedule, alarms, a
 * dashboard and a publisher policy. Deploy the next version beside it, move publishers over, let
 * this one drain (`taskworker status --version …` says `drained`), remove it.
 *
 * @example
 * ```ts
 * import { App, Stack } from 'aws-cdk-lib';
 * import { TaskworkerVersion } from 'taskworker/cdk';
 *
 * const app = new App();
 * const stack = new Stack(app, 'Orders');
 * const v1 = new TaskworkerVersion(stack, 'TasksV1', { config: './taskworker.config.ts', version: 'v1' });
 * v1.grantPublish(apiRole);
 * ```
 */
export class TaskworkerVersion extends Construct {
  /** The resolved config the version was made from. */
  public readonly config: TaskworkerConfig;
  public readonly version: string;
  /** Work queues by configured queue name. */
  public readonly queues: Readonly<Record<string, sqs.IQueue>>;
  /** Each work queue's dead-letter queue, by configured queue name. */
  public readonly deadLetterQueues: Readonly<Record<string, sqs.IQueue>>;
  /** Where the dispatcher parks the jobs it gives up on, with the reason. */
  public readonly archive: sqs.IQueue;
  public readonly jobsTable: dynamodb.ITable;
  public readonly statsTable: dynamodb.ITable;
  public readonly dispatcher: lambda.IFunction;
  /** The doorbell functions by queue name: each wakes the version when its queue gets a message (`wakeUp: 'doorbell'`). */
  public readonly doorbells: Readonly<Record<string, lambda.IFunction>>;
  public readonly dispatcherRole: iam.IRole;
  public readonly alarms: readonly cloudwatch.IAlarm[];
  public readonly dashboard: cloudwatch.Dashboard;
  /** The managed policy publishers attach: SendMessage to this version's work queues, nothing else. */
  public readonly publisherPolicy: iam.ManagedPolicy;
  /** The topic alarms notify, when one was given or created. */
  public readonly alarmTopic: sns.ITopic | undefined;
  /** One EventBridge Scheduler schedule per entry of the config's `schedules`. */
  public readonly schedules: readonly scheduler.CfnSchedule[];
  /** The topic the app's events are emitted to, when its config declares events. */
  public readonly eventTopic: sns.ITopic | undefined;
  /** The bucket payloads too large for a message are kept in (claim checks), and the ARN of its objects. */
  public readonly payloads: TaskworkerPayloads;

  constructor(scope: Construct, id: string, props: TaskworkerVersionProps) {
    super(scope, id);
    // Validated before anything is named after it.
    const version = validateVersion(props.version);
    const source = configSource(props);
    const config = resolveConfig(source.input);
    checkCrontabs(config);
    this.config = config;
    this.version = version;
    Tags.of(this).add('taskworker:app', config.app);
    Tags.of(this).add('taskworker:version', version);
    const dataRemoval = props.retainData === false ? RemovalPolicy.DESTROY : undefined;

    const queues = new TaskworkerQueues(this, 'Queues', { config, version, ...(dataRemoval ? { removalPolicy: dataRemoval } : {}) });
    const tables = new TaskworkerTables(this, 'Tables', { config, version, ...(dataRemoval ? { removalPolicy: dataRemoval } : {}) });
    const payloads = new TaskworkerPayloads(this, 'Payloads', { config, version, ...(dataRemoval ? { removalPolicy: dataRemoval } : {}) });
    this.payloads = payloads;
    const dispatcher = new TaskworkerDispatcher(this, 'Dispatcher', {
      config,
      version,
      code: props.code ?? dispatcherCode(source.code(config)),
      queues: queues.queues,
      archive: queues.archive,
      jobsTable: tables.jobs,
      statsTable: tables.stats,
      payloads,
      ...(props.reservedConcurrency !== undefined ? { reservedConcurrency: props.reservedConcurrency } : {}),
      ...(props.logLevel ? { logLevel: props.logLevel } : {}),
    });
    if (props.alarmTopic && props.alarmTopicArn) {
      throw new ConfigError('alarmTopicArn', props.alarmTopicArn, 'no alarmTopic beside it (give one or the other)');
    }
    this.alarmTopic =
      props.alarmTopic === 'create'
        ? this.createAlarmTopic(config, version)
        : (props.alarmTopic ?? (props.alarmTopicArn ? sns.Topic.fromTopicArn(this, 'AlarmTopic', props.alarmTopicArn) : undefined));
    const monitoring = new TaskworkerMonitoring(this, 'Monitoring', {
      config,
      version,
      queues: queues.queues,
      deadLetterQueues: queues.deadLetterQueues,
      archive: queues.archive,
      dispatcher: dispatcher.function,
      ...(this.alarmTopic ? { alarmTopic: this.alarmTopic } : {}),
    });
    const registry = lazyRegistry(config, source);
    const schedules = new TaskworkerSchedules(this, 'Schedules', {
      config,
      version,
      queues: queues.queues,
      taskQueue: (task) => registry().get(task)?.queue,
      enabled: props.schedules !== 'disabled',
    });
    const events =
      config.events.length > 0 || config.subscriptions.length > 0
        ? new TaskworkerEvents(this, 'Events', { config, version, queues: queues.queues, registry: registry() })
        : undefined;
    this.eventTopic = events?.topic;
    this.publisherPolicy = new TaskworkerPublisherPolicy(this, 'Publisher', {
      queues: Object.values(queues.queues),
      managedPolicyName: `${config.app}-${version}-publisher`,
    }).policy;

    this.queues = queues.queues;
    this.deadLetterQueues = queues.deadLetterQueues;
    this.archive = queues.archive;
    this.jobsTable = tables.jobs;
    this.statsTable = tables.stats;
    this.dispatcher = dispatcher.function;
    this.doorbells = dispatcher.doorbells;
    this.dispatcherRole = dispatcher.role;
    this.alarms = monitoring.alarms;
    this.schedules = schedules.schedules;
    this.dashboard = monitoring.dashboard;
  }

  /**
   * Lets `grantee` publish to this version's work queues (and, with `recordQueued` or `delay`, write
   * the job records a publisher writes). The ARNs are built from the resource names in the grantee's own stack, so a role
   * in another stack gets a policy there that refers to nothing of this one: no cross-stack export,
   * nothing that keeps this version from being destroyed when its time comes.
   */
  grantPublish(grantee: iam.IGrantable, options: GrantPublishOptions = {}): iam.Grant {
    const { app } = this.config;
    const stack = Stack.of(Construct.isConstruct(grantee) ? grantee : this);
    const arn = (service: string, resource: string, resourceName?: string) =>
      stack.formatArn({ service, resource, ...(resourceName ? { resourceName, arnFormat: ArnFormat.SLASH_RESOURCE_NAME } : {}) });
    let grant = iam.Grant.addToPrincipal({
      grantee,
      actions: PUBLISHER_ACTIONS,
      resourceArns: this.config.queues.map((q) => arn('sqs', queueResourceName(app, this.version, q.name))),
    });
    if (options.events) {
      if (this.config.events.length === 0)
        throw new ConfigError('grantPublish.events', true, 'an app that declares events (config events)');
      grant = grant.combine(
        iam.Grant.addToPrincipal({ grantee, actions: EMIT_ACTIONS, resourceArns: [arn('sns', eventTopicName(app, this.version))] }),
      );
    }
    // By name, like the queues: the bucket's name is the one the publisher derives from its queue URLs.
    const objects = (prefix: string) =>
      `${stack.formatArn({ service: 's3', region: '', account: '', resource: payloadBucketName(app, this.version, stack.account, stack.region) })}/${prefix}*`;
    if (options.largePayloads) {
      grant = grant.combine(iam.Grant.addToPrincipal({ grantee, actions: PAYLOAD_PUT_ACTIONS, resourceArns: [objects(PAYLOAD_PREFIX)] }));
    }
    if (options.results) {
      // A result over 1 KB is kept in the bucket: reading it back is one GetObject under results/.
      grant = grant.combine(iam.Grant.addToPrincipal({ grantee, actions: RESULT_READ_ACTIONS, resourceArns: [objects(RESULT_PREFIX)] }));
    }
    const tableActions = [
      ...(options.cancel || options.tokens || options.results ? ['dynamodb:GetItem'] : []),
      ...(options.recordQueued || options.delay || options.cancel || options.tokens || options.flows ? ['dynamodb:UpdateItem'] : []),
      ...(options.flows ? ['dynamodb:BatchGetItem'] : []),
    ];
    if (tableActions.length === 0) return grant;
    const jobsTable = tableNames(app, this.version).jobs;
    const withTable = grant.combine(
      iam.Grant.addToPrincipal({ grantee, actions: tableActions, resourceArns: [arn('dynamodb', 'table', jobsTable)] }),
    );
    if (!options.flows) return withTable;
    return withTable.combine(
      iam.Grant.addToPrincipal({
        grantee,
        actions: ['dynamodb:Query'],
        resourceArns: [arn('dynamodb', 'table', `${jobsTable}/index/${JOBS_BY_TAG_INDEX}`)],
      }),
    );
  }

  /** The version's queue names (`<app>-<version>-<queue>`), by configured queue, and its archive's. */
  queueNames(): { readonly queues: Readonly<Record<string, string>>; readonly archive: string } {
    const { app } = this.config;
    return {
      queues: Object.fromEntries(this.config.queues.map((q) => [q.name, queueResourceName(app, this.version, q.name)])),
      archive: archiveQueueName(app, this.version),
    };
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

/**
 * Where the config comes from: a module (read now; the artifact is built from it), or an object
 * given in the CDK app. Paths resolve against the working directory, the user's project.
 */
/**
 * The version's tasks, read from the task modules (built and loaded as the dispatcher does, which
 * also fails the synth for a schedule of an unknown task, a payload its `validate` refuses, or a
 * subscriber of an event the app cannot receive), built at most once and only when asked: for a
 * schedule that names no queue, or for the events' subscriptions.
 */
function lazyRegistry(config: TaskworkerConfig, source: ReturnType<typeof configSource>): () => TaskRegistry {
  let registry: TaskRegistry | undefined;
  return () => {
    registry ??= loadRegistry(config, source);
    return registry;
  };
}

function loadRegistry(config: TaskworkerConfig, source: ReturnType<typeof configSource>): TaskRegistry {
  const code = source.code(config);
  const scratch = mkdtempSync(join(tmpdir(), 'taskworker-tasks-'));
  try {
    const configFile = code.configFile ?? join(scratch, 'taskworker.config.json');
    if (!code.configFile) writeFileSync(configFile, JSON.stringify(config));
    const { tasksFile } = buildTasksBundleSync({
      configFile,
      ...(code.tasksDir ? { tasksDir: code.tasksDir } : {}),
      outFile: join(scratch, 'tasks.cjs'),
    });
    return loadTaskBundle(tasksFile).registry;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

function configSource(props: TaskworkerVersionProps): {
  readonly input: unknown;
  /** What the dispatcher's code is built from, once the config is resolved. */
  readonly code: (config: TaskworkerConfig) => DispatcherCodeProps;
} {
  const tasksDir = props.tasksDir === undefined ? undefined : existingDir('tasksDir', props.tasksDir);
  if (typeof props.config !== 'string') {
    const dir = tasksDir ?? existingDir('config.tasksDir', props.config.tasksDir ?? 'tasks');
    return { input: props.config, code: (config) => ({ config, tasksDir: dir }) };
  }
  const file = inProject('config', props.config);
  if (!existsSync(file)) throw new ConfigError('config', props.config, `a config module (resolved against ${process.cwd()}: ${file})`);
  return { input: loadConfigModuleSync(file), code: () => ({ configFile: file, ...(tasksDir ? { tasksDir } : {}) }) };
}

function existingDir(field: string, path: string): string {
  const dir = inProject(field, path);
  if (!existsSync(dir)) throw new ConfigError(field, path, `a directory of task modules (resolved against ${process.cwd()}: ${dir})`);
  return dir;
}

/** A path the user gave, against the working directory (the user's project), never the package. */
export function inProject(field: string, path: string): string {
  if (path.length === 0) throw new ConfigError(field, path, 'a path');
  return isAbsolute(path) ? path : resolve(process.cwd(), path);
}
