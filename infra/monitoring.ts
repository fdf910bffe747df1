import { type CfnResource, Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as actions from 'aws-cdk-lib/aws-cloudwatch-actions';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as sns from 'aws-cdk-lib/aws-sns';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import type { TaskworkerConfig } from '../lib/config/app-config';
import { INVOCATION_METRICS, JOB_METRICS, METRIC_DIMENSIONS, METRICS_NAMESPACE, outcomeMetric } from '../lib/wire/metric-names';
import { DASHBOARD_TAGS, ignoreCfnLintChecks } from './cfn-lint';

export interface TaskworkerMonitoringProps {
  readonly config: TaskworkerConfig;
  readonly version: string;
  /** Main queues by configured queue name. */
  readonly queues: Readonly<Record<string, sqs.IQueue>>;
  /** Dead-letter queues by configured queue name. */
  readonly deadLetterQueues: Readonly<Record<string, sqs.IQueue>>;
  readonly archive: sqs.IQueue;
  readonly dispatcher: lambda.IFunction;
  /** Where alarms (and their recovery) are sent. @default no actions: alarms show in the console only */
  readonly alarmTopic?: sns.ITopic;
  /** @default `<app>-<version>` */
  readonly dashboardName?: string;
}

/**
 * Alarms and a dashboard for one version. Alarms: anything in the archive, anything in a DLQ,
 * a queue's oldest message older than its SLA for 3 minutes, dispatcher errors, throttles, and a
 * dispatcher running into its settle margin. The dashboard shows per queue depth, age against
 * the SLA, job outcomes and wait/run time (the dispatcher's EMF metrics), and the dispatcher.
 *
 * @example
 * ```ts
 * new TaskworkerMonitoring(stack, 'Monitoring', { config, version: 'v1', ...queues, dispatcher: dispatcher.function, alarmTopic });
 * ```
 */
export class TaskworkerMonitoring extends Construct {
  public readonly alarms: readonly cloudwatch.IAlarm[];
  public readonly dashboard: cloudwatch.Dashboard;

  constructor(scope: Construct, id: string, props: TaskworkerMonitoringProps) {
    super(scope, id);
    const { config, version } = props;
    const alarms: cloudwatch.Alarm[] = [];
    const alarm = (alarmId: string, metric: cloudwatch.Metric, options: Omit<cloudwatch.CreateAlarmOptions, 'alarmName'>) => {
      const created = metric.createAlarm(this, alarmId, {
        alarmName: `${config.app}-${version}-${alarmId}`,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
        ...options,
      });
      alarms.push(created);
      return created;
    };
    const oneMinuteMax = { period: Duration.minutes(1), statistic: cloudwatch.Stats.MAXIMUM };

    alarm('archive-not-empty', props.archive.metricApproximateNumberOfMessagesVisible(oneMinuteMax), {
      alarmDescription: `Jobs were archived (exhausted, timed out, invalid or unknown). Inspect them with taskworker archive --version ${version}.`,
      threshold: 0,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 1,
    });
    for (const q of config.queues) {
      const queue = props.queues[q.name];
      const deadLetter = props.deadLetterQueues[q.name];
      if (!queue || !deadLetter) throw new Error(`TaskworkerMonitoring: no queue or DLQ given for ${q.name}`);
      alarm(`${q.name}-dlq-not-empty`, deadLetter.metricApproximateNumberOfMessagesVisible(oneMinuteMax), {
        alarmDescription: `Messages of ${q.name} were received ${q.maxReceiveCount} times without settling (a dispatcher crashed on them) and moved to the DLQ.`,
        threshold: 0,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 1,
      });
      alarm(`${q.name}-older-than-sla`, queue.metricApproximateAgeOfOldestMessage(oneMinuteMax), {
        alarmDescription: `The oldest message of ${q.name} has waited longer than its SLA (${q.slaSeconds} s) for 3 minutes: dispatchers are not keeping up.`,
        threshold: q.slaSeconds,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 3,
        datapointsToAlarm: 3,
      });
    }
    const fiveMinuteSum = { period: Duration.minutes(5), statistic: cloudwatch.Stats.SUM };
    alarm('dispatcher-errors', props.dispatcher.metricErrors(fiveMinuteSum), {
      alarmDescription: 'A dispatcher invocation failed or timed out.',
      threshold: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      evaluationPeriods: 1,
    });
    alarm('dispatcher-throttles', props.dispatcher.metricThrottles(fiveMinuteSum), {
      alarmDescription: 'A scheduled dispatcher was throttled: reserved concurrency is below the dispatchers the schedule starts.',
      threshold: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      evaluationPeriods: 1,
    });
    // Every invocation runs until its timeout minus the settle margin, by design: a long duration
    // is normal. Ending inside the second half of the margin means settling overran it, the step
    // before a timeout that leaves a batch to come back after its visibility timeout.
    const timeoutMs = config.dispatcher.timeoutSeconds * 1000;
    const nearTimeoutMs = timeoutMs - Math.floor(config.dispatcher.settleMarginMs / 2);
    alarm(
      'dispatcher-near-timeout',
      props.dispatcher.metricDuration({ period: Duration.minutes(5), statistic: cloudwatch.Stats.MAXIMUM }),
      {
        alarmDescription: `A dispatcher ran past ${nearTimeoutMs} ms of its ${timeoutMs} ms timeout: settling overran the settle margin.`,
        threshold: nearTimeoutMs,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 1,
      },
    );
    if (props.alarmTopic) {
      const action = new actions.SnsAction(props.alarmTopic);
      for (const a of alarms) {
        a.addAlarmAction(action);
        a.addOkAction(action);
      }
    }
    this.alarms = alarms;
    this.dashboard = this.buildDashboard(props);
  }

  private buildDashboard(props: TaskworkerMonitoringProps): cloudwatch.Dashboard {
    const { config, version } = props;
    const period = Duration.minutes(1);
    const emf = (metricName: string, statistic: string, dimensions: Record<string, string> = {}, label?: string) =>
      new cloudwatch.Metric({
        namespace: METRICS_NAMESPACE,
        metricName,
        statistic,
        period,
        dimensionsMap: { [METRIC_DIMENSIONS.service]: config.app, [METRIC_DIMENSIONS.version]: version, ...dimensions },
        ...(label ? { label } : {}),
      });
    const dashboard = new cloudwatch.Dashboard(this, 'Dashboard', {
      dashboardName: props.dashboardName ?? `${config.app}-${version}`,
      defaultInterval: Duration.hours(3),
    });
    ignoreCfnLintChecks(dashboard.node.defaultChild as CfnResource, DASHBOARD_TAGS);
    dashboard.addWidgets(
      new cloudwatch.TextWidget({
        markdown: `# taskworker ${config.app} ${version}\nQueues by priority: ${config.queues.map((q) => `**${q.name}** (${q.priority}, SLA ${q.slaSeconds} s)`).join(', ')}.`,
        width: 24,
        height: 2,
      }),
    );
    for (const q of config.queues) {
      const queue = props.queues[q.name] as sqs.IQueue;
      const deadLetter = props.deadLetterQueues[q.name] as sqs.IQueue;
      const byQueue = { [METRIC_DIMENSIONS.queue]: q.name };
      dashboard.addWidgets(
        new cloudwatch.GraphWidget({
          title: `${q.name}: depth`,
          width: 6,
          left: [
            queue.metricApproximateNumberOfMessagesVisible({ period, statistic: cloudwatch.Stats.MAXIMUM, label: 'visible' }),
            queue.metricApproximateNumberOfMessagesNotVisible({ period, statistic: cloudwatch.Stats.MAXIMUM, label: 'in flight' }),
            deadLetter.metricApproximateNumberOfMessagesVisible({ period, statistic: cloudwatch.Stats.MAXIMUM, label: 'DLQ' }),
          ],
        }),
        new cloudwatch.GraphWidget({
          title: `${q.name}: age of oldest message (s)`,
          width: 6,
          left: [queue.metricApproximateAgeOfOldestMessage({ period, statistic: cloudwatch.Stats.MAXIMUM, label: 'oldest' })],
          leftAnnotations: [{ value: q.slaSeconds, label: `SLA ${q.slaSeconds} s`, color: cloudwatch.Color.RED }],
        }),
        new cloudwatch.GraphWidget({
          title: `${q.name}: outcomes`,
          width: 6,
          stacked: true,
          left: [
            emf(JOB_METRICS.succeeded, cloudwatch.Stats.SUM, byQueue, 'succeeded'),
            emf(JOB_METRICS.retried, cloudwatch.Stats.SUM, byQueue, 'retried'),
            emf(JOB_METRICS.archived, cloudwatch.Stats.SUM, byQueue, 'archived'),
            emf(JOB_METRICS.timedOut, cloudwatch.Stats.SUM, byQueue, 'timed out'),
            emf(JOB_METRICS.released, cloudwatch.Stats.SUM, byQueue, 'released'),
            emf(outcomeMetric('duplicate'), cloudwatch.Stats.SUM, byQueue, 'duplicates'),
          ],
        }),
        new cloudwatch.GraphWidget({
          title: `${q.name}: wait and run time (ms)`,
          width: 6,
          left: [
            emf(JOB_METRICS.waitTime, cloudwatch.Stats.p(50), byQueue, 'wait p50'),
            emf(JOB_METRICS.waitTime, cloudwatch.Stats.p(99), byQueue, 'wait p99'),
            emf(JOB_METRICS.runTime, cloudwatch.Stats.p(50), byQueue, 'run p50'),
            emf(JOB_METRICS.runTime, cloudwatch.Stats.p(99), byQueue, 'run p99'),
          ],
          leftAnnotations: [{ value: q.slaSeconds * 1000, label: 'SLA', color: cloudwatch.Color.RED }],
        }),
      );
    }
    dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: 'archive depth',
        width: 6,
        left: [props.archive.metricApproximateNumberOfMessagesVisible({ period, statistic: cloudwatch.Stats.MAXIMUM, label: 'archived' })],
      }),
      new cloudwatch.GraphWidget({
        title: 'dispatcher: invocations',
        width: 6,
        left: [
          props.dispatcher.metricInvocations({ period, label: 'invocations' }),
          props.dispatcher.metricErrors({ period, label: 'errors' }),
          props.dispatcher.metricThrottles({ period, label: 'throttles' }),
        ],
      }),
      new cloudwatch.GraphWidget({
        title: 'dispatcher: duration (ms)',
        width: 6,
        left: [props.dispatcher.metricDuration({ period, statistic: cloudwatch.Stats.MAXIMUM, label: 'max' })],
        leftAnnotations: [{ value: config.dispatcher.timeoutSeconds * 1000, label: 'timeout', color: cloudwatch.Color.RED }],
      }),
      new cloudwatch.GraphWidget({
        title: 'dispatcher: receives',
        width: 6,
        left: [
          emf(INVOCATION_METRICS.receives, cloudwatch.Stats.SUM, {}, 'receives'),
          emf(INVOCATION_METRICS.emptyReceives, cloudwatch.Stats.SUM, {}, 'empty'),
          emf(INVOCATION_METRICS.loopErrors, cloudwatch.Stats.SUM, {}, 'loop errors'),
        ],
      }),
    );
    return dashboard;
  }
}
