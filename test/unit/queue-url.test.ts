import { accountAndRegionOf } from '../../lib/layout/queue-url';
import { topicArnNear } from '../../lib/layout/topics';

describe('the account and region a queue URL names (the topic and bucket found beside the queues)', () => {
  it.each([
    ['https://sqs.eu-west-1.amazonaws.com/123456789012/shop-v1-work', { account: '123456789012', region: 'eu-west-1' }],
    ['https://eu-west-1.queue.amazonaws.com/123456789012/shop-v1-work', { account: '123456789012', region: 'eu-west-1' }],
    ['http://sqs.us-east-1.localhost:4566/000000000000/shop-v1-work', { account: '000000000000', region: 'us-east-1' }],
    ['memory://queues/work', undefined],
    ['https://example.com/not-an-account/q', undefined],
  ])('%s', (url, expected) => {
    expect(accountAndRegionOf(url)).toEqual(expected);
  });

  it('gives the event topic in the partition of its region, or names the field to set', () => {
    expect(topicArnNear('https://sqs.cn-north-1.amazonaws.com.cn/123456789012/q', 'shop', 'v1')).toBe(
      'arn:aws-cn:sns:cn-north-1:123456789012:shop-v1-events',
    );
    expect(topicArnNear('https://sqs.us-east-1.amazonaws.com/123456789012/q', 'shop', 'v1')).toBe(
      'arn:aws:sns:us-east-1:123456789012:shop-v1-events',
    );
    expect(() => topicArnNear('memory://queues/work', 'shop', 'v1')).toThrow(/topicArn.*explicit events.topicArn/);
  });
});
