import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  QueueNameExists,
  SetQueueAttributesCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { TaskworkerConfig } from '../config/app-config';
import { queueLayout } from '../layout/queues';
import type { QueueUrls } from '../ports';

/**
 * Creates a version's queues (main queues with redrive, DLQs, archive) from the shared layout,
 * as the CDK stack does in AWS. Idempotent: a queue already there whose settings the config has
 * changed (visibility, retention, redrive) gets the new ones, as a deploy updates it. Used by
 * `taskworker dev` on the emulator.
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
    const url = await createOrUpdateQueue(sqs, spec.resourceName, attributes);
    const arn = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }));
    arns.set(spec.resourceName, arn.Attributes?.QueueArn as string);
    if (spec.role === 'main') queues[spec.queue as string] = url;
    else if (spec.role === 'dead-letter') deadLetter[spec.queue as string] = url;
    else archive = url;
  }
  return { queues, archive, deadLetter };
}

/** CreateQueue, or, for a queue already there with other settings, SetQueueAttributes on it. */
async function createOrUpdateQueue(sqs: SQSClient, name: string, attributes: Record<string, string>): Promise<string> {
  try {
    return (await sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: attributes }))).QueueUrl as string;
  } catch (error) {
    // fauxqs answers with the query protocol's code (AWS.SimpleQueueService.QueueNameExists), which
    // the SDK does not map to its class.
    const code = (error as { name?: unknown }).name;
    const exists = error instanceof QueueNameExists || (typeof code === 'string' && /(^|\.)QueueNameExists$/.test(code));
    if (!exists) throw error;
    const url = (await sqs.send(new GetQueueUrlCommand({ QueueName: name }))).QueueUrl as string;
    await sqs.send(new SetQueueAttributesCommand({ QueueUrl: url, Attributes: attributes }));
    return url;
  }
}
