import { VirtualClock } from '../../lib/clock';
import type { BatchFailure } from '../../lib/ports';
import { callWithEntryRetries, chunk } from '../../lib/retry-entries';

const entries = ['a', 'b', 'c'].map((id) => ({ id }));

describe('callWithEntryRetries', () => {
  it('retries only the entries that failed for retryable reasons', async () => {
    const seen: string[][] = [];
    const plan: BatchFailure[][] = [
      [
        { id: 'b', code: 'InternalError', message: '', senderFault: false },
        { id: 'c', code: 'ReceiptHandleIsInvalid', message: '', senderFault: true },
      ],
      [],
    ];
    const result = await callWithEntryRetries(
      entries,
      async (batch) => {
        seen.push(batch.map((e) => e.id));
        return { failed: plan.shift() ?? [] };
      },
      new VirtualClock(),
    );
    expect(seen).toEqual([['a', 'b', 'c'], ['b']]);
    expect(result.failed.map((f) => f.id)).toEqual(['c']);
    expect(result.retries).toBe(1);
  });

  it('treats a thrown call as every entry failing, and gives up after the attempt limit', async () => {
    let calls = 0;
    const result = await callWithEntryRetries(
      entries,
      async () => {
        calls += 1;
        throw Object.assign(new Error('socket hang up'), { name: 'TimeoutError' });
      },
      new VirtualClock(),
      { attempts: 3 },
    );
    expect(calls).toBe(3);
    expect(result.failed.map((f) => [f.id, f.code])).toEqual([
      ['a', 'TimeoutError'],
      ['b', 'TimeoutError'],
      ['c', 'TimeoutError'],
    ]);
  });
});

describe('chunk', () => {
  it('splits into groups of at most n', () => {
    expect(chunk([1, 2, 3, 4, 5], 2)).toEqual([[1, 2], [3, 4], [5]]);
    expect(chunk([], 10)).toEqual([]);
  });
});
