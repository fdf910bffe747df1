import { fitsInvocation, leaseMs, startWithinMs, stillVisibleToUs, taskNeedMs } from '../../lib/deadlines';
import type { TaskOutcome } from '../../lib/run/executor-types';
import { decide } from '../../lib/settle/verdict';

const def = { maxRetries: 2, backoff: { baseSeconds: 4, capSeconds: 4 } };
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
