import { MAX_RETENTION_SECONDS } from './sqs-limits';

/** A message moved to a DLQ keeps its first enqueue time, so the DLQ must retain it at least a day longer. */
export const MAX_QUEUE_RETENTION_SECONDS = MAX_RETENTION_SECONDS - 86_400;

/** SQS queue name of a configured queue: `<app>-<version>-<queue>`. */
export function queueResourceName(app: string, version: string, queue: string): string {
  return `${app}-${version}-${queue}`;
}

/** SQS queue name of a queue's dead-letter queue. */
export function deadLetterQueueName(app: string, version: string, queue: string): string {
  return `${queueResourceName(app, version, queue)}-dlq`;
}

/** SQS queue name of the version's archive queue. */
export function archiveQueueName(app: string, version: string): string {
  return `${app}-${version}-archive`;
}

/** One SQS queue of a version, with the attributes both the CDK stack and `taskworker dev` give it. */
export interface QueueSpec {
  readonly resourceName: string;
  readonly role: 'main' | 'dead-letter' | 'archive';
  /** The configured queue this belongs to (main and dead-letter queues). */
  readonly queue?: string;
  readonly visibilityTimeoutSeconds: number;
  readonly retentionSeconds: number;
  readonly redrive?: { readonly deadLetterResourceName: string; readonly maxReceiveCount: number };
}

/** Visibility of queues nobody processes in a loop (DLQs, archive): long enough for a manual look. */
const PARKED_VISIBILITY_SECONDS = 30;

/**
 * Every queue of one release version: per configured queue a main queue with a redrive policy
 * and its dead-letter queue, plus the version's archive queue. Dead-letter queues are listed
 * before the queues that point at them.
 */
export function queueLayout(
  // Structural (the config module imports this one's names and limits, so no import back).
  config: {
    readonly app: string;
    readonly queues: ReadonlyArray<{
      readonly name: string;
      readonly visibilityTimeoutSeconds: number;
      readonly retentionSeconds: number;
      readonly maxReceiveCount: number;
    }>;
  },
  version: string,
): QueueSpec[] {
  const specs: QueueSpec[] = [];
  for (const q of config.queues) {
    const deadLetterResourceName = deadLetterQueueName(config.app, version, q.name);
    specs.push({
      resourceName: deadLetterResourceName,
      role: 'dead-letter',
      queue: q.name,
      visibilityTimeoutSeconds: PARKED_VISIBILITY_SECONDS,
      retentionSeconds: MAX_RETENTION_SECONDS,
    });
    specs.push({
      resourceName: queueResourceName(config.app, version, q.name),
      role: 'main',
      queue: q.name,
      visibilityTimeoutSeconds: q.visibilityTimeoutSeconds,
      retentionSeconds: q.retentionSeconds,
      redrive: { deadLetterResourceName, maxReceiveCount: q.maxReceiveCount },
    });
  }
  specs.push({
    resourceName: archiveQueueName(config.app, version),
    role: 'archive',
    visibilityTimeoutSeconds: PARKED_VISIBILITY_SECONDS,
    retentionSeconds: MAX_RETENTION_SECONDS,
  });
  return specs;
}
