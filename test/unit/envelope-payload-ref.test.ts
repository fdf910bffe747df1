import { EnvelopeError } from '../../lib/errors';
import { decodeEnvelope, encodeEnvelope } from '../../lib/wire/envelope';

const meta = { messageId: 'msg-1', sentTimestamp: 1_700_000_000_000 };
const ref = { bucket: 'shop-v1-123456789012-eu-west-1', key: 'payloads/job-1/abc.json', bytes: 300_000, sha256: 'a'.repeat(64) };

function rejection(body: unknown): EnvelopeError {
  try {
    decodeEnvelope(JSON.stringify(body), meta);
  } catch (error) {
    if (error instanceof EnvelopeError) return error;
    throw error;
  }
  throw new Error('expected an EnvelopeError');
}

describe('a claim check in the envelope', () => {
  it('round-trips a payloadRef in place of the payload', () => {
    const body = encodeEnvelope({ task: 'import', payloadRef: ref, id: 'job-1' });

    expect(JSON.parse(body)).not.toHaveProperty('payload');
    expect(decodeEnvelope(body, meta)).toMatchObject({ task: 'import', id: 'job-1', payload: null, payloadRef: ref });
  });

  it('keeps only the reference fields of a raw message', () => {
    const job = decodeEnvelope(
      JSON.stringify({ task: 'import', payloadRef: { bucket: 'b-1', key: 'payloads/x', bytes: 1, extra: 1 } }),
      meta,
    );

    expect(job.payloadRef).toEqual({ bucket: 'b-1', key: 'payloads/x', bytes: 1 });
  });

  it.each<[string, unknown]>([
    ['a string', 's3://b/k'],
    ['no bytes', { bucket: 'b-1', key: 'payloads/x' }],
    ['over 10 MiB', { bucket: 'b-1', key: 'payloads/x', bytes: 10 * 1024 * 1024 + 1 }],
    ['an invalid bucket', { bucket: 'Not_A_Bucket', key: 'payloads/x', bytes: 1 }],
    ['an empty key', { bucket: 'b-1', key: '', bytes: 1 }],
    ['an uppercase sha256', { bucket: 'b-1', key: 'payloads/x', bytes: 1, sha256: 'A'.repeat(64) }],
  ])('refuses a payloadRef with %s, naming the field', (_label, value) => {
    const error = rejection({ task: 'import', payloadRef: value });

    expect(error.code).toBe('bad-payload-ref');
    expect(error.field).toBe('payloadRef');
  });

  it('refuses a payload beside a payloadRef', () => {
    const error = rejection({ task: 'import', payload: { a: 1 }, payloadRef: ref });

    expect(error.code).toBe('bad-payload-ref');
    expect(error.message).toContain('both');
  });
});
