import { PublishCommand, type SNSClient } from '@aws-sdk/client-sns';
import type { EventBus } from '../ports';

/** {@link EventBus} on Amazon SNS: one `Publish` per event; SNS fans it out to the subscribed queues. */
export class SnsEventBus implements EventBus {
  constructor(readonly sns: SNSClient) {}

  async publish(topicArn: string, body: string, attributes?: Readonly<Record<string, string>>): Promise<{ messageId: string }> {
    const MessageAttributes =
      attributes && Object.keys(attributes).length > 0
        ? Object.fromEntries(Object.entries(attributes).map(([name, value]) => [name, { DataType: 'String', StringValue: value }]))
        : undefined;
    const out = await this.sns.send(
      new PublishCommand({ TopicArn: topicArn, Message: body, ...(MessageAttributes ? { MessageAttributes } : {}) }),
    );
    return { messageId: out.MessageId ?? '' };
  }
}
