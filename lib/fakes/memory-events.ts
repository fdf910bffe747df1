import type { EventRoute } from '../events/routes';
import { eventTopicName } from '../layout/topics';
import type { EventBus, QueueClient, QueueUrls } from '../ports';

/**
 * An in-memory SNS for the test kit and unit tests: a publish to a topic puts the body in every
 * queue subscribed to it whose filter names the body's `event`, as SNS's raw delivery with a
 * MessageBody filter policy does (a body that is not a JSON object with an `event` reaches none).
 */
export class MemoryEventBus implements EventBus {
  readonly published: Array<{ readonly topicArn: string; readonly body: string; readonly attributes?: Readonly<Record<string, string>> }> =
    [];
  private sequence = 0;

  constructor(
    private readonly queues: QueueClient,
    private readonly urls: QueueUrls,
    private readonly routes: readonly EventRoute[],
    /** The ARN a route's topic has here, by app and version. */
    private readonly topicArnOf: (app: string, version: string) => string = memoryTopicArn,
  ) {}

  async publish(topicArn: string, body: string, attributes?: Readonly<Record<string, string>>): Promise<{ messageId: string }> {
    this.published.push({ topicArn, body, ...(attributes ? { attributes } : {}) });
    const event = eventOf(body);
    for (const route of this.routes) {
      const arn = route.topic.topicArn ?? this.topicArnOf(route.topic.app, route.topic.version);
      const url = this.urls.queues[route.queue];
      if (arn !== topicArn || event === undefined || !route.events.includes(event) || !url) continue;
      await this.queues.sendBatch(url, [{ id: '0', body, ...(attributes && Object.keys(attributes).length > 0 ? { attributes } : {}) }]);
    }
    this.sequence += 1;
    return { messageId: `memory-sns-${this.sequence}` };
  }
}

/** The topic ARN of an app's version in the in-memory account. */
export function memoryTopicArn(app: string, version: string): string {
  return `arn:aws:sns:us-east-1:000000000000:${eventTopicName(app, version)}`;
}

function eventOf(body: string): string | undefined {
  try {
    const parsed: unknown = JSON.parse(body);
    const event = typeof parsed === 'object' && parsed !== null ? (parsed as { event?: unknown }).event : undefined;
    return typeof event === 'string' ? event : undefined;
  } catch {
    return undefined;
  }
}
