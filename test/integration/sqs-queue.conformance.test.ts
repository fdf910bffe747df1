import { CreateQueueCommand, GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { SqsQueueClient } from '../../lib/adapters/sqs';
import { queueClientConformance } from '../conformance/queue-client';
import { type EmulatorHarness, startHarness, stopHarness } from '../helpers/emulators';

let harness: EmulatorHarness | undefined;

queueClientConformance(
  'SQS adapter on fauxqs',
  async () => {
    const h = await startHarness();
    harness = h;
    const arnOf = async (url: string) =>
      (await h.sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }))).Attributes?.QueueArn as string;
    const urls = new Map<string, string>();
    return {
      client: new SqsQueueClient(h.sqs),
      createQueue: async (name, options = {}) => {
        const attributes: Record<string, string> = {};
        if (options.visibilityTimeoutSeconds !== undefined) attributes.VisibilityTimeout = String(options.visibilityTimeoutSeconds);
        if (options.deadLetter) {
          attributes.RedrivePolicy = JSON.stringify({
            deadLetterTargetArn: await arnOf(urls.get(options.deadLetter.name) as string),
            maxReceiveCount: options.deadLetter.maxReceiveCount,
          });
        }
        const out = await h.sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: attributes }));
        urls.set(name, out.QueueUrl as string);
        return out.QueueUrl as string;
      },
      wait: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
    };
  },
  () => stopHarness(harness),
);
