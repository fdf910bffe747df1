import { EnvelopeError, type MalformedCode } from '../../lib/errors';
import { decodeEnvelope, encodeEnvelope, jsonDepth, MAX_JSON_DEPTH } from '../../lib/wire/envelope';

const meta = { messageId: 'msg-1', sentTimestamp: 1_700_000_000_000 };

function codeOf(body: string): MalformedCode {
  try {
    decodeEnvelope(body, meta);
  } catch (error) {
    if (error instanceof EnvelopeError) return error.code;
    throw error;
  }
  throw new Error('expected an EnvelopeError');
}

describe('envelope v1', () => {
  it('round-trips through encode and decode', () => {
    const body = encodeEnvelope({ task: 'send-email', payload: { to: 'a@b.c' }, id: 'job-1', appData: { env: 'prod' }, publishedAt: 5 });
    expect(JSON.parse(body)).toMatchObject({ v: 1 });
    expect(decodeEnvelope(body, meta)).toEqual({
      task: 'send-email',
      payload: { to: 'a@b.c' },
      id: 'job-1',
      appData: { env: 'prod' },
      publishedAt: 5,
    });
  });

  it('fills defaults from SQS for a minimal message from any SDK', () => {
    expect(decodeEnvelope('{"task":"send-email","payload":{"to":"x"}}', meta)).toEqual({
      task: 'send-email',
      payload: { to: 'x' },
      id: 'msg-1',
      appData: null,
      publishedAt: meta.sentTimestamp,
    });
    expect(decodeEnvelope('{"task":"ping"}', meta).payload).toBeNull();
  });

  it.each<[string, string, MalformedCode]>([
    ['not JSON', 'hello', 'not-json'],
    ['an array', '[1,2]', 'not-object'],
    ['a string', '"task"', 'not-object'],
    ['null', 'null', 'not-object'],
    ['no task', '{"payload":1}', 'bad-task-name'],
    ['an empty task', '{"task":""}', 'bad-task-name'],
    ['a numeric task', '{"task":7}', 'bad-task-name'],
    ['a path as task', '{"task":"../../etc/passwd"}', 'bad-task-name'],
    ['a module specifier as task', '{"task":"node:child_process"}', 'bad-task-name'],
    ['a future version', '{"task":"a","v":2}', 'bad-version'],
    ['a string version', '{"task":"a","v":"1"}', 'bad-version'],
    ['a numeric id', '{"task":"a","id":12}', 'bad-id'],
    ['a very long id', `{"task":"a","id":"${'x'.repeat(129)}"}`, 'bad-id'],
    ['a negative publishedAt', '{"task":"a","publishedAt":-1}', 'bad-published-at'],
    ['a string publishedAt', '{"task":"a","publishedAt":"yesterday"}', 'bad-published-at'],
    ['a publishedAt past what a Date holds', '{"task":"a","publishedAt":8640000000000001}', 'bad-published-at'],
    ['a string runAt', '{"task":"a","runAt":"tomorrow"}', 'bad-run-at'],
    ['a fractional runAt', '{"task":"a","runAt":1.5}', 'bad-run-at'],
    ['a runAt past what a Date holds', '{"task":"a","runAt":8640000000000001}', 'bad-run-at'],
    ['an infinite publishedAt', '{"task":"a","publishedAt":1e400}', 'bad-published-at'],
    ['deep nesting', `{"task":"a","payload":${'['.repeat(MAX_JSON_DEPTH + 5)}${']'.repeat(MAX_JSON_DEPTH + 5)}}`, 'too-deep'],
  ])('rejects %s', (_label, body, code) => {
    expect(codeOf(body)).toBe(code);
  });

  it.each([
    ['null', 'body is null, not an object'],
    ['[1]', 'body is an array, not an object'],
    ['"task"', 'body is a string, not an object'],
    ['{"task":"a","publishedAt":1e400}', 'publishedAt is Infinity;'],
    ['{"task":"a","publishedAt":8640000000000001}', 'publishedAt is 8640000000000001;'],
  ])('says what %s is in plain words', (body, words) => {
    expect(() => decodeEnvelope(body, meta)).toThrow(words);
  });

  it('accepts the last instant a Date holds', () => {
    expect(decodeEnvelope('{"task":"a","publishedAt":8640000000000000}', meta).publishedAt).toBe(8_640_000_000_000_000);
  });

  it('treats __proto__ keys as plain data and pollutes nothing', () => {
    const job = decodeEnvelope('{"task":"a","payload":{"__proto__":{"polluted":true}},"__proto__":{"task":"evil"}}', meta);
    expect(job.task).toBe('a');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('ignores an inherited task name', () => {
    expect(codeOf('{"constructor":{"name":"x"}}')).toBe('bad-task-name');
  });

  it('measures depth without recursion', () => {
    expect(jsonDepth({ a: [1, { b: 2 }] }, 10)).toBe(3);
    expect(jsonDepth(5, 10)).toBe(0);
  });
});
