import { fitsInvocation, leaseMs, startWithinMs, stillVisibleToUs, taskNeedMs } from '../../lib/deadlines';
import type { TaskOutcome } from '../../lib/run/executor-types';
import { decide } from '../../lib/settle/verdict';

const def = { maxRetries: 2, backoff: { baseSeconds: 4, capSeconds: 4 }, retry: { never: [], maxRetryAfters: 3 } };
const half = () => 0.5;
const failed = (kind: 'error' | 'unrecoverable' | 'invalid-payload' | 'crashed'): TaskOutcome => ({
  status: 'failed',
  kind,
  durationMs: 5,
  error: { type: 'Error', message: 'x' },
});
const timedOut: TaskOutcome = { status: 'timed-out', durationMs: 5, error: { type: 'TimeLimitExceededError', message: 'x' } };

describe('decide: an outcome to the job’s next step', () => {
  it.each<[string, TaskOutcome, number, ReturnType<typeof decide>]>([
    ['success', { status: 'succeeded', durationMs: 1 }, 3, { kind: 'succeeded' }],
    ['unrecoverable, attempts left', failed('unrecoverable'), 1, { kind: 'archive', reason: 'unrecoverable' }],
    ['invalid payload, attempts left', failed('invalid-payload'), 1, { kind: 'archive', reason: 'invalid-payload' }],
    ['an error, attempts left', failed('error'), 2, { kind: 'retry', seconds: 2 }],
    ['a crash, attempts left', failed('crashed'), 1, { kind: 'retry', seconds: 2 }],
    ['a time-out, attempts left', timedOut, 2, { kind: 'retry', seconds: 2 }],
    ['an error, the last attempt', failed('error'), 3, { kind: 'archive', reason: 'exhausted' }],
    ['a time-out, the last attempt', timedOut, 3, { kind: 'archive', reason: 'timed-out' }],
  ])('%s', (_what, outcome, attempt, verdict) => {
    expect(decide(outcome, attempt, def, half)).toEqual(verdict);
  });
});

describe('decide: a RetryAfterError', () => {
  const asked = (ms: number): TaskOutcome => ({
    status: 'failed',
    kind: 'retry-after',
    durationMs: 5,
    retryAfterMs: ms,
    error: { type: 'RetryAfterError', message: 'x' },
  });

  it('re-runs at the asked time, rounded up to a second, without using an attempt while the record counts fewer than maxRetryAfters', () => {
    expect(decide(asked(2500), 1, def, half, 0)).toEqual({ kind: 'retry-after', seconds: 3 });
    // Claim 3 after 2 re-runs is attempt 1 of the 3 that maxRetries 2 allows: still no attempt used.
    expect(decide(asked(0), 3, def, half, 2)).toEqual({ kind: 'retry-after', seconds: 0 });
  });

  it('is an ordinary failure once the job took maxRetryAfters re-runs: the asked time, an attempt', () => {
    // Claims 5 with 3 re-runs taken: attempt 2 used of 3.
    expect(decide(asked(10_000), 5, def, half, 3)).toEqual({ kind: 'retry', seconds: 10 });
    // Claims 6 with 3 re-runs: attempt 3 of 3, the last: archived.
    expect(decide(asked(10_000), 6, def, half, 3)).toEqual({ kind: 'archive', reason: 'exhausted' });
  });

  it('uses an attempt where no record counts re-runs (tracking other than full), at the asked time', () => {
    expect(decide(asked(4000), 1, def, half)).toEqual({ kind: 'retry', seconds: 4 });
    expect(decide(asked(4000), 3, def, half)).toEqual({ kind: 'archive', reason: 'exhausted' });
  });

  it('a RateLimitedError is one too, naming the scope its dispatcher pauses (task when the outcome names none)', () => {
    const limited = (scope?: 'key'): TaskOutcome => ({
      status: 'failed',
      kind: 'rate-limited',
      durationMs: 5,
      retryAfterMs: 1500,
      ...(scope ? { pauseScope: scope } : {}),
      error: { type: 'RateLimitedError', message: 'x' },
    });
    expect(decide(limited('key'), 1, def, half, 0)).toEqual({ kind: 'retry-after', seconds: 2, rateLimited: 'key' });
    expect(decide(limited(), 1, def, half, 0)).toEqual({ kind: 'retry-after', seconds: 2, rateLimited: 'task' });
    expect(decide(limited(), 5, def, half, 3)).toEqual({ kind: 'retry', seconds: 2 });
  });

  it('waits at most SQS’s 12-hour visibility', () => {
    expect(decide(asked(7 * 86_400_000), 1, def, half, 0)).toEqual({ kind: 'retry-after', seconds: 43_200 });
  });

  it('counts the re-runs out of the attempts an ordinary error leaves', () => {
    // Claim 4 after 2 re-runs: attempt 2 of 3, so an error retries (backoff 4 s × jitter 0.5).
    expect(decide(failed('error'), 4, def, half, 2)).toEqual({ kind: 'retry', seconds: 2 });
    expect(decide(failed('error'), 5, def, half, 2)).toEqual({ kind: 'archive', reason: 'exhausted' });
  });
});

describe('deadlines', () => {
  it('a task needs its limit and the kill grace; its lease adds the settle margin', () => {
    expect(taskNeedMs(10, 1000)).toBe(11_000);
    expect(leaseMs(11_000, 5000)).toBe(16_000);
  });

  it('starts a task only if it ends before the invocation must settle', () => {
    expect(fitsInvocation(0, 11_000, 16_000, 5000)).toBe(true);
    expect(fitsInvocation(1, 11_000, 16_000, 5000)).toBe(false);
  });

  it('keeps a reserve of the visibility: 5 s for receives, 1 s before a lapse, a quarter of short ones', () => {
    expect(startWithinMs(60)).toBe(55_000);
    expect(startWithinMs(4)).toBe(3000);
    expect(stillVisibleToUs(0, 58_999, 60)).toBe(true);
    expect(stillVisibleToUs(0, 59_000, 60)).toBe(false);
  });
});
