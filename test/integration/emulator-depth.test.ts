/**
 * The local SQS emulator's depths as SQS gives them (lib/local/emulators.ts): a message whose
 * visibility timeout lapsed, or whose delay passed, counts as visible although nothing has received
 * from its queue since. An idle version's scheduled dispatcher reads these depths to decide whether
 * anything waits; fauxqs alone kept such messages in flight (or delayed) until the next receive, so
 * locally a retry on a `wakeUp: 'schedule'` queue never came back.
 */
import {
  ChangeMessageVisibilityCommand,
  CreateQueueCommand,
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { type Emulators, startEmulators } from '../../lib/local/emulators';
import { eventually } from '../helpers/run';

let emulators: Emulators;
let sqs: SQSClient;

beforeAll(async () => {
  emulators = await startEmulators();
  sqs = new SQSClient({
    region: 'us-east-1',
    endpoint: emulators.sqsEndpoint,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
});
afterAll(async () => {
  sqs.destroy();
  await emulators.stop();
});

async function depth(url: string) {
  const { Attributes: a = {} } = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: url,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible', 'ApproximateNumberOfMessagesDelayed'],
    }),
  );
  return {
    visible: Number(a.ApproximateNumberOfMessages),
    inFlight: Number(a.ApproximateNumberOfMessagesNotVisible),
    delayed: Number(a.ApproximateNumberOfMessagesDelayed),
  };
}

describe('the local SQS emulator counts', () => {
  it('a message whose visibility lapsed as visible, with no receive since', async () => {
    const { QueueUrl: url = '' } = await sqs.send(new CreateQueueCommand({ QueueName: 'depth-lapsed' }));
    await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'retry me' }));
    // Received under a long visibility, so the in-flight count is read before anything lapses however
    // slow this machine is; then the visibility is cut to 1 s, and it lapses with no receive since.
    const { Messages = [] } = await sqs.send(new ReceiveMessageCommand({ QueueUrl: url, VisibilityTimeout: 300 }));
    expect(Messages).toHaveLength(1);
    expect(await depth(url)).toEqual({ visible: 0, inFlight: 1, delayed: 0 });
    await sqs.send(new ChangeMessageVisibilityCommand({ QueueUrl: url, ReceiptHandle: Messages[0]?.ReceiptHandle, VisibilityTimeout: 1 }));

    await eventually('the lapsed message to count as visible', async () => (await depth(url)).visible === 1, 10_000);

    expect(await depth(url)).toEqual({ visible: 1, inFlight: 0, delayed: 0 });
    // And a receive takes it, as the count said.
    const again = await sqs.send(new ReceiveMessageCommand({ QueueUrl: url, VisibilityTimeout: 30 }));
    expect(again.Messages?.map((m) => m.Body)).toEqual(['retry me']);
    expect(await depth(url)).toEqual({ visible: 0, inFlight: 1, delayed: 0 });
    await sqs.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: again.Messages?.[0]?.ReceiptHandle }));
  });

  it('a delayed message whose delay passed as visible', async () => {
    const { QueueUrl: url = '' } = await sqs.send(new CreateQueueCommand({ QueueName: 'depth-delayed' }));
    // One message delayed 15 minutes (SQS's most) stays delayed whatever this machine's speed; the
    // other, delayed 1 s, is counted visible once due, with no receive since.
    await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'much later', DelaySeconds: 900 }));
    expect(await depth(url)).toEqual({ visible: 0, inFlight: 0, delayed: 1 });
    await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'later', DelaySeconds: 1 }));

    await eventually('the due message to count as visible', async () => (await depth(url)).visible === 1, 10_000);

    expect(await depth(url)).toEqual({ visible: 1, inFlight: 0, delayed: 1 });
  });
});
