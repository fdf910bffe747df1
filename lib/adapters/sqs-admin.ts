import { CreateQueueCommand, GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { TaskworkerConfig } from '../config';
import { queueLayout } from '../layout/queues';
import type { QueueUrls } from '../ports';

/**
 * Creates a version's queues (main queues with redrive, DLQs, archive) from the shared layout,
 * as the CDK stack does in AWS. Idempotent. Used by `taskworker dev` on the emulator.
 */
export async function createVersionQueues(
  sqs: SQSClient,
  config: TaskworkerConfig,
  version: string,
): Promise<QueueUrls & { deadLetter: Record<string, string> }> {
  const arns = new Map<string, string>();
  const queues: Record<string, string> = {};
  const deadLetter: Record<string, string> = {};
  let archive = '';
  for (const spec of queueLayout(config, version)) {
    const attributes: Record<string, string> = {
      VisibilityTimeout: String(spec.visibilityTimeoutSeconds),
      MessageRetentionPeriod: String(spec.retentionSeconds),
    };
    if (spec.redrive) {
      attributes.RedrivePolicy = JSON.stringify({
        deadLetterTargetArn: arns.get(spec.redrive.deadLetterResourceName),
        maxReceiveCount: spec.redrive.maxReceiveCount,
      });
    }
    const created = await sqs.send(new CreateQueueCommand({ QueueName: spec.resourceName, Attributes: attributes }));
    const url = created.QueueUrl as string;
    const arn = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }));
    arns.set(spec.resourceName, arn.Attributes?.QueueArn as string);
    if (spec.role === 'main') queues[spec.queue as string] = url;
    else if (spec.role === 'dead-letter') deadLetter[spec.queue as string] = url;
    else archive = url;
  }
  return { queues, archive, deadLetter };
}
