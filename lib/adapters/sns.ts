import { PublishCommand, SNSClient, type SNSClientConfig } from '@aws-sdk/client-sns';
import type { EventBus } from '../ports';
import { type HttpTimeouts, withHttpTimeouts } from './http-timeouts';
import { withRegionCheck } from './region';

/** SNS publishes answer in milliseconds; the limit only stops a stalled connection. */
export const SNS_TIMEOUTS: HttpTimeouts = { connectionTimeout: 3000, requestTimeout: 10_000 };

/**
 * Pass a ready client or a client config, never both. Endpoints follow the SDK
 * (`AWS_ENDPOINT_URL_SNS`, or fauxqs's one endpoint for SQS, SNS and S3 locally).
 */
export type SnsClientOption =
  | { readonly client: SNSClient; readonly clientConfig?: never }
  | { readonly client?: never; readonly clientConfig?: SNSClientConfig };

export function snsClientFrom(option: SnsClientOption = {}): SNSClient {
  return option.client ?? withRegionCheck(new SNSClient(withHttpTimeouts(option.clientConfig ?? {}, SNS_TIMEOUTS)), 'SNS');
}

/** {@link EventBus} on Amazon SNS: one `Publish` per event; SNS fans it out to the subscribed queues. */
export class SnsEventBus implements EventBus {
  readonly sns: SNSClient;

  constructor(option: SnsClientOption = {}) {
    this.sns = snsClientFrom(option);
  }

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
