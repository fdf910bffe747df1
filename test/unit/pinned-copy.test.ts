import { pinnedCopy } from '../../lib/wire/event';

/** A copy of a message (a dev's restart puts its queues back this way) must stay the same job or event. */
describe('the body of a message’s copy', () => {
  const meta = { messageId: 'm-1', sentTimestamp: 1_700_000_000_000 };

  it('a job that took its id and publish time from SQS gets them written in', () => {
    expect(JSON.parse(pinnedCopy('{"task":"send-email","payload":{"to":"a"}}', meta))).toEqual({
      task: 'send-email',
      payload: { to: 'a' },
      id: 'm-1',
      publishedAt: 1_700_000_000_000,
    });
  });

  it('an event that took its id and emit time from SQS gets them written in', () => {
    expect(JSON.parse(pinnedCopy('{"event":"order.placed","payload":null}', meta))).toEqual({
      event: 'order.placed',
      payload: null,
      id: 'm-1',
      emittedAt: 1_700_000_000_000,
    });
  });

  it.each([
    '{"task":"send-email","id":"j-1","publishedAt":5}',
    '{"event":"order.placed","id":"e-1","emittedAt":5}',
    'not json at all',
    '{"task":"bad name!"}',
  ])('%s is kept as it is', (body) => {
    expect(pinnedCopy(body, meta)).toBe(body);
  });
});
