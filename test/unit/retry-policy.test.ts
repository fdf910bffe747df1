/**
 * A task's retry policy by error: RetryAfterError re-runs a job at the time it names without using an
 * attempt (bounded by `retry.maxRetryAfters`), `retry.never` archives at once, `retry.on` retries only
 * the errors it names. Through the public entry points, on the in-memory system (the real dispatcher
 * on fakes, virtual time), reading the job's record, its history and the stats.
 */
import { defineTask, RetryAfterError, TaskDefinitionError } from 'taskworker';
import { createTestSystem, runTask } from 'taskworker/testing';

class Throttled extends Error {
  override name = 'ThrottlingException';
}
class LedgerClosed extends Error {}

/** A body that asks to run again `asks` times (3 s each), then returns the attempt it saw. */
function askingTask(asks: number, retry?: { maxRetryAfters?: number }) {
  const starts: number[] = [];
  const def = defineTask({
    name: 'call-api',
    queue: 'default',
    timeLimitSeconds: 5,
    maxRetries: 0,
    ...(retry ? { retry } : {}),
    run: (_payload, ctx) => {
      starts.push(ctx.attempt);
      if (starts.length <= asks) throw new RetryAfterError(3000);
      return { attempt: ctx.attempt };
    },
  });
  return { def, starts };
}

describe('RetryAfterError', () => {
  it('re-runs five times at the asked time and succeeds with maxRetries 0: attempt 1, five retry-after entries, no failure counted', async () => {
    const { def, starts } = askingTask(5);
    const system = createTestSystem({ tasks: [def] });
    const { jobId } = await system.publish(def, {});
    const result = await system.drain();
    const record = await system.job(jobId);
    expect(record).toMatchObject({ state: 'succeeded', attempt: 6, retryAfters: 5, result: '{"attempt":1}' });
    // Every run saw attempt 1: the asks used none.
    expect(starts).toEqual([1, 1, 1, 1, 1, 1]);
    const asked = record?.history.filter((h) => h.what === 'retry-after') ?? [];
    expect(asked).toHaveLength(5);
    expect(asked[0]?.detail).toMatch(/^asked to run again after /);
    // Five waits of 3 s on the virtual clock.
    expect(result.elapsedMs).toBeGreaterThanOrEqual(15_000);
    const counters = (await system.stats('default'))?.counters;
    expect(counters).toMatchObject({ succeeded: 1, retryAfter: 5 });
    expect(counters?.failed ?? 0).toBe(0);
    expect(counters?.retried ?? 0).toBe(0);
  });

  it('past maxRetryAfters an ask is an ordinary failure: with maxRetries 0 the job is archived exhausted', async () => {
    const { def, starts } = askingTask(100, { maxRetryAfters: 3 });
    const system = createTestSystem({ tasks: [def] });
    const { jobId } = await system.publish(def, {});
    await system.drain();
    expect(await system.job(jobId)).toMatchObject({ state: 'archived', reason: 'exhausted', attempt: 4, retryAfters: 3 });
    expect(starts).toEqual([1, 1, 1, 1]);
  });

  it('takes a Date, and says what it got when given neither ms nor a valid Date', () => {
    expect(new RetryAfterError(new Date(Date.now() + 60_000)).retryAfterMs).toBeGreaterThan(58_000);
    expect(new RetryAfterError(-5).retryAfterMs).toBe(0);
    expect(() => new RetryAfterError(Number.NaN)).toThrow('RetryAfterError needs ms from now or a valid Date, got NaN');
    expect(() => new RetryAfterError(new Date('nope'))).toThrow('got Invalid Date');
  });

  it('is recognised by name, so a copy of the class from another bundle of the library counts', async () => {
    class RetryAfterError extends Error {
      override name = 'RetryAfterError';
      readonly retryAfterMs = 1500;
    }
    const def = defineTask({ name: 'copy', queue: 'default', timeLimitSeconds: 5, run: () => Promise.reject(new RetryAfterError()) });
    expect((await runTask(def, {})).verdict).toEqual({ kind: 'retry-after', seconds: 2 });
    // The record counted two asks already; maxRetryAfters 10 leaves more.
    expect((await runTask(def, {}, { retryAfters: 2 })).verdict).toEqual({ kind: 'retry-after', seconds: 2 });
    expect((await runTask(def, {}, { retryAfters: 10 })).verdict).toEqual({ kind: 'retry', seconds: 2 });
  });
});

describe('retry.never and retry.on', () => {
  it('never: an error named there is archived at once as unrecoverable, by class or by name', async () => {
    const def = defineTask({
      name: 'post-ledger',
      queue: 'default',
      timeLimitSeconds: 5,
      retry: { never: [LedgerClosed, 'ThrottlingException'] },
      run: (p: { error: string }) => Promise.reject(p.error === 'ledger' ? new LedgerClosed('closed') : new Throttled('slow down')),
    });
    expect((await runTask(def, { error: 'ledger' })).verdict).toEqual({ kind: 'archive', reason: 'unrecoverable' });
    expect((await runTask(def, { error: 'throttled' })).verdict).toEqual({ kind: 'archive', reason: 'unrecoverable' });
  });

  it('on: only the errors named there are retried; any other is archived at once, with its error on the record', async () => {
    const def = defineTask({
      name: 'fetch-rates',
      queue: 'default',
      timeLimitSeconds: 5,
      maxRetries: 2,
      backoff: { baseSeconds: 1, capSeconds: 1 },
      retry: { on: ['ThrottlingException'] },
      run: (p: { error: string }) => Promise.reject(p.error === 'throttled' ? new Throttled('slow down') : new TypeError('bad input')),
    });
    const system = createTestSystem({ tasks: [def] });
    const throttled = await system.publish(def, { error: 'throttled' });
    const typo = await system.publish(def, { error: 'typo' });
    await system.drain();
    expect(await system.job(throttled.jobId)).toMatchObject({ state: 'archived', reason: 'exhausted', attempt: 3 });
    expect(await system.job(typo.jobId)).toMatchObject({
      state: 'archived',
      reason: 'unrecoverable',
      attempt: 1,
      lastError: { type: 'TypeError', message: 'bad input' },
    });
  });

  it.each<[string, unknown, string]>([
    ['retry', 'often', 'retry'],
    ['retry.on', { on: 'TimeoutError' }, 'retry.on'],
    ['retry.never', { never: [''] }, 'retry.never'],
    ['retry.maxRetryAfters', { maxRetryAfters: -1 }, 'retry.maxRetryAfters'],
    ['an unknown field', { onn: ['TimeoutError'] }, 'retry.onn'],
  ])('refuses a bad %s at definition, naming the field', (_what, retry, field) => {
    const define = () => defineTask({ name: 'bad', queue: 'default', timeLimitSeconds: 5, retry: retry as never, run: () => 1 });
    expect(define).toThrow(TaskDefinitionError);
    expect(define).toThrow(field);
  });
});
