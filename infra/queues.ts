import { Duration, type RemovalPolicy, Validations } from 'aws-cdk-lib';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import type { TaskworkerConfig } from '../lib/config/app-config';
import { type QueueSpec, queueLayout } from '../lib/layout/queues';
import { QUEUE_DEFAULTS, REMOVAL_POLICIES } from './defaults';

export interface TaskworkerQueuesProps {
  /** The resolved app config (`resolveConfig`); its queues become SQS queues. */
  readonly config: TaskworkerConfig;
  /** Release version; part of every queue name. */
  readonly version: string;
  /**
   * Removal policy of every queue.
   * @default work queues are destroyed with the stack; DLQs and the archive are retained
   */
  readonly removalPolicy?: RemovalPolicy;
}

/**
 * Every SQS queue of one release version, from the layout `taskworker dev` also creates
 * (`lib/layout/queues.ts`): per configured queue a main queue with its redrive policy and
 * dead-letter queue, plus the version's archive queue. All encrypted, all TLS-only.
 *
 * @example
 * ```ts
 * const queues = new TaskworkerQueues(stack, 'Queues', { config, version: 'v1' });
 * queues.queues.default?.grantSendMessages(publisherRole);
 * ```
 */
export class TaskworkerQueues extends Construct {
  /** Main queues by configured queue name. */
  public readonly queues: Readonly<Record<string, sqs.IQueue>>;
  /** Dead-letter queues by configured queue name. */
  public readonly deadLetterQueues: Readonly<Record<string, sqs.IQueue>>;
  /** Where the dispatcher parks jobs it gives up on, with the reason. */
  public readonly archive: sqs.IQueue;
  /** The layout the queues were made from. */
  public readonly layout: readonly QueueSpec[];

  constructor(scope: Construct, id: string, props: TaskworkerQueuesProps) {
    super(scope, id);
    this.layout = queueLayout(props.config, props.version);
    const byName = new Map<string, sqs.Queue>();
    const queues: Record<string, sqs.IQueue> = {};
    const deadLetterQueues: Record<string, sqs.IQueue> = {};
    let archive: sqs.IQueue | undefined;

    // The layout lists each dead-letter queue before the queue that points at it.
    for (const spec of this.layout) {
      const deadLetter = spec.redrive ? byName.get(spec.redrive.deadLetterResourceName) : undefined;
      if (spec.redrive && !deadLetter) throw new Error(`queue layout lists ${spec.resourceName} before its DLQ`);
      const queue = new sqs.Queue(this, constructId(spec), {
        ...QUEUE_DEFAULTS,
        queueName: spec.resourceName,
        visibilityTimeout: Duration.seconds(spec.visibilityTimeoutSeconds),
        retentionPeriod: Duration.seconds(spec.retentionSeconds),
        removalPolicy: props.removalPolicy ?? (spec.role === 'main' ? REMOVAL_POLICIES.workQueues : REMOVAL_POLICIES.parkedQueues),
        ...(spec.redrive && deadLetter ? { deadLetterQueue: { queue: deadLetter, maxReceiveCount: spec.redrive.maxReceiveCount } } : {}),
      });
      byName.set(spec.resourceName, queue);
      if (spec.role === 'main') queues[spec.queue as string] = queue;
      else if (spec.role === 'dead-letter') deadLetterQueues[spec.queue as string] = queue;
      else {
        archive = queue;
        Validations.of(queue).acknowledge({
          id: 'AwsSolutions-SQS3',
          reason:
            'The archive is the end of the line: the dispatcher writes exhausted, timed-out and invalid jobs here with the reason, and nothing consumes it automatically, so a DLQ behind it would never receive anything. The archive-depth alarm watches it.',
        });
      }
    }
    if (!archive) throw new Error('queue layout has no archive queue');
    this.queues = queues;
    this.deadLetterQueues = deadLetterQueues;
    this.archive = archive;
  }

  /** Every queue of the version: main queues, DLQs, archive. */
  get all(): sqs.IQueue[] {
    return [...Object.values(this.queues), ...Object.values(this.deadLetterQueues), this.archive];
  }
}

/** Construct ids from configured names (stable across deploys: renaming a queue replaces it). */
function constructId(spec: QueueSpec): string {
  const base = (spec.queue ?? 'archive')
    .split('_')
    .map((w) => (w[0]?.toUpperCase() ?? '') + w.slice(1))
    .join('');
  return spec.role === 'main' ? `${base}Queue` : spec.role === 'dead-letter' ? `${base}DeadLetterQueue` : 'ArchiveQueue';
}
