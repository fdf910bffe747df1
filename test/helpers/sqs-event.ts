import type { ReceivedMessage } from '../../lib/ports';

/** Lambda's SQS event records for messages as an SQS trigger received them from `queue` (its name). */
export function triggerRecords(queue: string, messages: readonly ReceivedMessage[]) {
  return messages.map((m) => ({
    messageId: m.messageId,
    receiptHandle: m.receiptHandle,
    body: m.body,
    attributes: { ApproximateReceiveCount: String(m.receiveCount), SentTimestamp: String(m.sentTimestamp) },
    messageAttributes: {},
    md5OfBody: '',
    eventSource: 'aws:sqs' as const,
    eventSourceARN: `arn:aws:sqs:us-east-1:000000000000:${queue}`,
    awsRegion: 'us-east-1',
  }));
}
