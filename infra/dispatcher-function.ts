import { ArnFormat, type CfnResource, Duration, Stack } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import type { TaskworkerConfig } from '../lib/config/app-config';
import { canScaleOut, SCHEDULE_SOURCE } from '../lib/invocation/scaling';
import { RESULT_PREFIX } from '../lib/layout/payloads';
import { JOBS_DUE_INDEX } from '../lib/layout/tables';
import { DOORBELL_MAX_CONCURRENCY, doorbellBatchSize, doorbellQueues, doorbellTimeoutSeconds } from '../lib/wake-up';
import { METRICS_NAMESPACE } from '../lib/wire/metric-names';
import { ignoreCfnLintChecks, REDUNDANT_ROLE_DEPENDENCY } from './cfn-lint';
import { FUNCTION_DEFAULTS, LOG_RETENTION, REMOVAL_POLICIES, SCHEDULE_RATE } from './defaults';
import { grantSubscribedEventPayloads, PAYLOAD_READ_ACTIONS, RESULT_PUT_ACTIONS, type TaskworkerPayloads } from './payloads';

/** What the dispatcher does on its work queues: receive, settle (delete, change visibility), probe depth. */
export const WORK_QUEUE_ACTIONS = ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:ChangeMessageVisibility', 'sqs:GetQueueAttributes'];
/** The archive is written to (SendMessageBatch is authorised by SendMessage), never read by the dispatcher. */
export const ARCHIVE_ACTIONS = ['sqs:SendMessage'];
/** Job records: record, claim, complete, fail (lib/adapters/dynamo-job-claims.ts). Listing is the operator CLI's. */
export const JOBS_TABLE_ACTIONS = ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'];
/** The sweep of parked jobs reads the sparse due index. */
export const SWEEP_ACTIONS = ['dynamodb:Query'];
/** Daily stats: one atomic ADD per queue per batch. */
export const STATS_TABLE_ACTIONS = ['dynamodb:GetItem', 'dynamodb:UpdateItem'];
/** The scheduled invocation turns the doorbells' triggers off while it works a backlog, and on again. */
export const DOORBELL_SWITCH_ACTIONS = ['lambda:UpdateEventSourceMapping'];
/** Scaling out: the scheduled invocation starts more invocations of this same function (asynchronously). */
export const SELF_INVOKE_ACTIONS = ['lambda:InvokeFunction'];

export type DispatcherLogLevel = 'DEBUG' | 'INFO' | 'WARN' | 'ERROR';

export interface TaskworkerDispatcherProps {
  readonly config: TaskworkerConfig;
  readonly version: string;
  /** The artifact (`dispatcherCode()`): index.js + tasks.cjs. */
  readonly code: lambda.Code;
  /** Main queues by configured queue name; every configured queue must be present. */
  readonly queues: Readonly<Record<string, sqs.IQueue>>;
  readonly archive: sqs.IQueue;
  readonly jobsTable: dynamodb.ITable;
  readonly statsTable: dynamodb.ITable;
  /** The version's payload bucket (claim checks): its name for the functions, and its objects the roles may read and delete. */
  readonly payloads?: TaskworkerPayloads;
  /**
   * Concurrent dispatchers at most (the function's reserved concurrency). The schedule starts one
   * a minute and each runs up to the configured timeout, so up to `timeout / 60 s` overlap; the
   * scheduled dispatcher starts more when a backlog builds, up to this less one.
   * @default config.dispatcher.maxConcurrency
   */
  readonly reservedConcurrency?: number;
  /** @default 'INFO' */
  readonly logLevel?: DispatcherLogLevel;
  /** @default one month */
  readonly logRetention?: logs.RetentionDays;
  /** @default every minute */
  readonly schedule?: events.Schedule;
  /** @default `<app>-<version>-dispatcher` */
  readonly functionName?: string;
}

/**
 * The dispatcher Lambda (nodejs24.x, arm64; timeout and memory from the config) started by an
 * EventBridge schedule every minute; each invocation reads the queues' depths, ends at once when
 * nothing waits, and otherwise loops until its time is nearly spent or it has been idle a while.
 * Each `wakeUp: 'doorbell'` queue has a doorbell: the same code in a function timed out within the
 * queue's visibility, invoked by an SQS trigger (MaximumConcurrency 2, partial batch responses) the
 * moment a message arrives in an idle version (lib/invocation/doorbell.ts). When the queues hold a backlog,
 * the scheduled invocation starts more invocations of the function (asynchronously), bounded by
 * its reserved concurrency; those end when the backlog is gone (lib/invocation/scaling.ts). Its role can do
 * exactly what the dispatcher does, on this version's queues and tables and this function only.
 *
 * @example
 * ```ts
 * const dispatcher = new TaskworkerDispatcher(stack, 'Dispatcher', {
 *   config, version: 'v1', code: dispatcherCode({ configFile }),
 *   queues: queues.queues, archive: queues.archive, jobsTable: tables.jobs, statsTable: tables.stats,
 * });
 * ```
 */
export class TaskworkerDispatcher extends Construct {
  public readonly function: lambda.IFunction;
  public readonly role: iam.IRole;
  public readonly logGroup: logs.ILogGroup;
  public readonly schedule: events.IRule;
  /** The doorbell functions, by queue name: one per `wakeUp: 'doorbell'` queue, its SQS trigger on that queue. */
  public readonly doorbells: Readonly<Record<string, lambda.IFunction>>;
  /** The function's timeout, for alarms on duration. */
  public readonly timeout: Duration;

  constructor(scope: Construct, id: string, props: TaskworkerDispatcherProps) {
    super(scope, id);
    const { config, version } = props;
    const missing = config.queues.map((q) => q.name).filter((name) => !props.queues[name]);
    if (missing.length > 0) throw new Error(`TaskworkerDispatcher: no queue given for ${missing.join(', ')}`);

    this.timeout = Duration.seconds(config.dispatcher.timeoutSeconds);
    const logGroup = new logs.LogGroup(this, 'Logs', {
      retention: props.logRetention ?? LOG_RETENTION,
      removalPolicy: REMOVAL_POLICIES.logs,
    });
    // Own roles, no AWS-managed policy: logs to their group, and the grants below. The doorbells'
    // role does the work and nothing else (no scaling out, no switching triggers).
    const workerRole = (id: string, what: string) => {
      const created = new iam.Role(this, id, {
        assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
        description: `taskworker ${config.app} ${version} ${what}`,
      });
      logGroup.grantWrite(created);
      const workQueues = config.queues.map((q) => props.queues[q.name] as sqs.IQueue);
      created.addToPrincipalPolicy(new iam.PolicyStatement({ actions: WORK_QUEUE_ACTIONS, resources: workQueues.map((q) => q.queueArn) }));
      created.addToPrincipalPolicy(new iam.PolicyStatement({ actions: ARCHIVE_ACTIONS, resources: [props.archive.queueArn] }));
      created.addToPrincipalPolicy(new iam.PolicyStatement({ actions: JOBS_TABLE_ACTIONS, resources: [props.jobsTable.tableArn] }));
      created.addToPrincipalPolicy(new iam.PolicyStatement({ actions: STATS_TABLE_ACTIONS, resources: [props.statsTable.tableArn] }));
      props.payloads?.grantObjects(created, PAYLOAD_READ_ACTIONS);
      props.payloads?.grantObjects(created, RESULT_PUT_ACTIONS, RESULT_PREFIX);
      if (props.payloads) grantSubscribedEventPayloads(created, config.subscriptions);
      return created;
    };
    const role = workerRole('Role', 'dispatcher');
    // The scheduled invocation sweeps parked jobs that are due: a Query of the due index, nothing else of the table's indexes.
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({ actions: SWEEP_ACTIONS, resources: [`${props.jobsTable.tableArn}/index/${JOBS_DUE_INDEX}`] }),
    );

    const functionName = props.functionName ?? `${config.app}-${version}-dispatcher`;
    const reservedConcurrency = props.reservedConcurrency ?? config.dispatcher.maxConcurrency;
    if (canScaleOut(reservedConcurrency, config.dispatcher.timeoutSeconds)) {
      // Room to scale out: it may invoke itself, and nothing else. The ARN is built from the name,
      // so the role's policy does not depend on the function (which depends on the role).
      const selfArn = Stack.of(this).formatArn({
        service: 'lambda',
        resource: 'function',
        resourceName: functionName,
        arnFormat: ArnFormat.COLON_RESOURCE_NAME,
      });
      role.addToPrincipalPolicy(new iam.PolicyStatement({ actions: SELF_INVOKE_ACTIONS, resources: [selfArn] }));
    }

    const queueUrls = Stack.of(this).toJsonString({
      queues: Object.fromEntries(config.queues.map((q) => [q.name, (props.queues[q.name] as sqs.IQueue).queueUrl])),
      archive: props.archive.queueUrl,
    });
    const environment = {
      ...FUNCTION_DEFAULTS.environment,
      TASKWORKER_VERSION: version,
      TASKWORKER_QUEUE_URLS: queueUrls,
      TASKWORKER_JOBS_TABLE: props.jobsTable.tableName,
      TASKWORKER_STATS_TABLE: props.statsTable.tableName,
      TASKWORKER_LOG_LEVEL: props.logLevel ?? 'INFO',
      TASKWORKER_MAX_CONCURRENCY: String(reservedConcurrency),
      ...(props.payloads ? { TASKWORKER_PAYLOAD_BUCKET: props.payloads.bucket.bucketName } : {}),
      POWERTOOLS_SERVICE_NAME: config.app,
      POWERTOOLS_METRICS_NAMESPACE: METRICS_NAMESPACE,
    };
    const fn = new lambda.Function(this, 'Function', {
      ...FUNCTION_DEFAULTS,
      functionName,
      description: `taskworker ${config.app} ${version}: runs the tasks published to this version's queues`,
      code: props.code,
      role,
      logGroup,
      timeout: this.timeout,
      memorySize: config.dispatcher.memoryMb,
      reservedConcurrentExecutions: reservedConcurrency,
      // A scheduled (or scaled-out) invocation that waited in Lambda's queue a minute is superseded by the next minute's.
      maxEventAge: Duration.minutes(1),
      environment,
    });
    ignoreCfnLintChecks(fn.node.defaultChild as CfnResource, REDUNDANT_ROLE_DEPENDENCY);

    // One doorbell function per doorbell queue: Lambda wants an SQS trigger's function timed out
    // within the queue's visibility timeout. Same code, role and logs as the dispatcher.
    const doorbells: Record<string, lambda.IFunction> = {};
    const mappings: lambda.EventSourceMapping[] = [];
    const doorbellRole = doorbellQueues(config).length > 0 ? workerRole('DoorbellRole', 'doorbells') : undefined;
    for (const queue of doorbellQueues(config)) {
      const doorbellName = `${config.app}-${version}-doorbell-${queue.name}`;
      const doorbell = new lambda.Function(this, `Doorbell-${queue.name}`, {
        ...FUNCTION_DEFAULTS,
        // Lambda function names stop at 64 characters; past that CloudFormation names it.
        ...(doorbellName.length <= 64 ? { functionName: doorbellName } : {}),
        description: `taskworker ${config.app} ${version}: wakes on ${queue.name}, runs its batch, then selects until idle`,
        code: props.code,
        role: doorbellRole as iam.Role,
        logGroup,
        timeout: Duration.seconds(doorbellTimeoutSeconds(config, queue)),
        memorySize: config.dispatcher.memoryMb,
        environment,
      });
      ignoreCfnLintChecks(doorbell.node.defaultChild as CfnResource, REDUNDANT_ROLE_DEPENDENCY);
      // The mapping alone, not SqsEventSource: that would grant its own consume actions on top of
      // the role's (ReceiveMessage, DeleteMessage, GetQueueAttributes: what Lambda's pollers use).
      const mapping = new lambda.EventSourceMapping(this, `Trigger-${queue.name}`, {
        target: doorbell,
        eventSourceArn: (props.queues[queue.name] as sqs.IQueue).queueArn,
        batchSize: doorbellBatchSize(config, queue),
        maxConcurrency: DOORBELL_MAX_CONCURRENCY,
        reportBatchItemFailures: true,
      });
      mappings.push(mapping);
      doorbells[queue.name] = doorbell;
    }
    this.doorbells = doorbells;
    if (mappings.length > 0) {
      // The scheduled dispatcher turns the triggers off while it works a backlog and on when done.
      // `queue=uuid`: a paused queue's trigger stays off whatever the fleet does (lib/track/operator-controls.ts).
      fn.addEnvironment(
        'TASKWORKER_DOORBELL_MAPPINGS',
        doorbellQueues(config)
          .map((q, i) => `${q.name}=${(mappings[i] as lambda.EventSourceMapping).eventSourceMappingId}`)
          .join(','),
      );
      role.addToPrincipalPolicy(
        new iam.PolicyStatement({ actions: DOORBELL_SWITCH_ACTIONS, resources: mappings.map((m) => m.eventSourceMappingArn) }),
      );
    }

    this.schedule = new events.Rule(this, 'Schedule', {
      description: `Starts a taskworker ${config.app} ${version} dispatcher every minute`,
      schedule: props.schedule ?? events.Schedule.rate(SCHEDULE_RATE),
      targets: [
        new targets.LambdaFunction(fn, {
          event: events.RuleTargetInput.fromObject({ source: SCHEDULE_SOURCE, app: config.app, version }),
          retryAttempts: 0,
          maxEventAge: Duration.minutes(1),
        }),
      ],
    });
    this.function = fn;
    this.role = role;
    this.logGroup = logGroup;
  }
}
