/**
 * A task's retry policy by error: RetryAfterError re-runs a job at the time it names without using an
 * attempt (bounded by `retry.maxRetryAfters`), `retry.never` archives at once, `retry.on` retries only
 * the errors it names. Through the public entry points, on the in-memory system (the real dispatcher
 * on fakes, virtual time), reading the job's record, its history and the stats.
 */
import { defineTask, RateLimitedError, RetryAfterError, TaskDefinitionError } from 'taskworker';
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

describe('RateLimitedError', () => {
  /** `calls` runs of task `name`, the first `limited` throwing RateLimitedError for 10 s with `scope`. */
  function apiTask(name: string, limited: number, scope?: 'task' | 'key' | 'queue') {
    const calls: { jobId: string; at: number; attempt: number }[] = [];
    let clockNow = () => 0;
    const def = defineTask({
      name,
      queue: 'default',
      timeLimitSeconds: 5,
      maxRetries: 0,
      run: (_payload, ctx) => {
        calls.push({ jobId: ctx.jobId, at: clockNow(), attempt: ctx.attempt });
        if (calls.length <= limited) throw new RateLimitedError({ for: 10_000, ...(scope ? { scope } : {}) });
      },
    });
    return { def, calls, useClock: (now: () => number) => (clockNow = now) };
  }

  it("pauses its task fleet-wide: the task's later jobs wait for the pause, the other task's run, no attempt is used", async () => {
    const a = apiTask('call-api', 1);
    const b = apiTask('other', 0);
    const system = createTestSystem({ tasks: [a.def, b.def] });
    a.useClock(() => system.clock.now());
    b.useClock(() => system.clock.now());
    const first = await system.publish(a.def, {});
    await system.drain({ maxMs: 3_000 }).catch(() => undefined);
    const pausedAt = a.calls[0]?.at as number;
    // Published while the pause holds: received, held back to its end, then run.
    const later = await Promise.all([1, 2, 3].map(() => system.publish(a.def, {})));
    const others = await Promise.all([1, 2, 3].map(() => system.publish(b.def, {})));
    await system.drain();
    const thrower = await system.job(first.jobId);
    expect(thrower).toMatchObject({ state: 'succeeded', retryAfters: 1 });
    const limited = thrower?.history.find((h) => h.what === 'rate-limited');
    expect(limited?.detail).toMatch(/^task:call-api paused until /);
    for (const { jobId } of [...later, first]) {
      const record = await system.job(jobId);
      expect(record?.state).toBe('succeeded');
    }
    // No run of call-api started before the pause ended; every one saw attempt 1.
    const reruns = a.calls.slice(1);
    expect(reruns).toHaveLength(4);
    for (const run of reruns) {
      expect(run.at).toBeGreaterThanOrEqual(pausedAt + 10_000);
      expect(run.attempt).toBe(1);
    }
    // The other task never waited for it: its three ran before the pause ended.
    expect(b.calls).toHaveLength(3);
    for (const run of b.calls) expect(run.at).toBeLessThan(pausedAt + 10_000);
    for (const { jobId } of others) expect((await system.job(jobId))?.state).toBe('succeeded');
    const counters = (await system.stats('default'))?.counters;
    expect(counters).toMatchObject({ succeeded: 7, rateLimited: 1, rateLimitHeld: 3 });
    expect(counters?.retried ?? 0).toBe(0);
    expect(counters?.failed ?? 0).toBe(0);
  });

  it("scope 'key' holds only that key's jobs of the task", async () => {
    const a = apiTask('per-account', 1, 'key');
    const system = createTestSystem({ tasks: [a.def] });
    a.useClock(() => system.clock.now());
    await system.publish(a.def, {}, { key: 'acct-1' });
    await system.drain({ maxMs: 3_000 }).catch(() => undefined);
    const pausedAt = a.calls[0]?.at as number;
    const sameKey = await system.publish(a.def, {}, { key: 'acct-1' });
    const otherKey = await system.publish(a.def, {}, { key: 'acct-2' });
    await system.drain();
    const at = (jobId: string) => a.calls.find((c) => c.jobId === jobId)?.at as number;
    expect(at(sameKey.jobId)).toBeGreaterThanOrEqual(pausedAt + 10_000);
    expect(at(otherKey.jobId)).toBeLessThan(pausedAt + 10_000);
    expect((await system.stats('default'))?.counters).toMatchObject({ succeeded: 3, rateLimited: 1, rateLimitHeld: 1 });
  });

  it("scope 'queue' stops receiving from the queue: every task on it waits, a task on another queue runs", async () => {
    const a = apiTask('bulk-api', 1, 'queue');
    const sameQueue = apiTask('same-queue', 0);
    const elsewhere = apiTask('elsewhere', 0);
    const elsewhereDef = { ...elsewhere.def, queue: 'other' };
    const system = createTestSystem({ tasks: [a.def, sameQueue.def, elsewhereDef] });
    for (const t of [a, sameQueue, elsewhere]) t.useClock(() => system.clock.now());
    await system.publish(a.def, {});
    await system.drain({ maxMs: 3_000 }).catch(() => undefined);
    const pausedAt = a.calls[0]?.at as number;
    await system.publish(sameQueue.def, {});
    await system.publish(elsewhereDef, {});
    await system.drain();
    expect(sameQueue.calls[0]?.at).toBeGreaterThanOrEqual(pausedAt + 10_000);
    expect(elsewhere.calls[0]?.at).toBeLessThan(pausedAt + 10_000);
    expect((await system.stats('default'))?.counters).toMatchObject({ succeeded: 2, rateLimited: 1 });
  });

  it('past maxRetryAfters a rate limit is an ordinary failure (and still pauses its scope)', async () => {
    const def = defineTask({
      name: 'always-limited',
      queue: 'default',
      timeLimitSeconds: 5,
      maxRetries: 0,
      retry: { maxRetryAfters: 2 },
      run: () => {
        throw new RateLimitedError({ for: 1_000 });
      },
    });
    const system = createTestSystem({ tasks: [def] });
    const { jobId } = await system.publish(def, {});
    await system.drain();
    expect(await system.job(jobId)).toMatchObject({
      state: 'archived',
      reason: 'exhausted',
      attempt: 3,
      retryAfters: 2,
      lastError: { type: 'RateLimitedError' },
    });
  });

  it('reads an HTTP answer: 429 (Retry-After in seconds or as a date), 503 only with Retry-After, anything else nothing', () => {
    const fetchLike = (status: number, headers: Record<string, string>) => ({ status, headers: new Headers(headers) });
    expect(RateLimitedError.fromResponse(fetchLike(429, { 'Retry-After': '120' }))?.retryAfterMs).toBe(120_000);
    const dated = RateLimitedError.fromResponse(fetchLike(429, { 'retry-after': new Date(Date.now() + 30_000).toUTCString() }));
    expect(dated?.retryAfterMs).toBeGreaterThan(28_000);
    expect(dated?.retryAfterMs).toBeLessThanOrEqual(30_000);
    // Node's and axios's answers: statusCode, headers as a plain object.
    const node = RateLimitedError.fromResponse({ statusCode: 429, headers: { 'retry-after': '5' } }, { scope: 'queue' });
    expect(node).toMatchObject({ retryAfterMs: 5000, scope: 'queue', name: 'RateLimitedError' });
    expect(RateLimitedError.fromResponse(fetchLike(429, {}), { defaultMs: 7000 })?.retryAfterMs).toBe(7000);
    expect(RateLimitedError.fromResponse(fetchLike(429, { 'Retry-After': 'soon' }))?.retryAfterMs).toBe(60_000);
    expect(RateLimitedError.fromResponse(fetchLike(503, { 'Retry-After': '3' }))?.retryAfterMs).toBe(3000);
    expect(RateLimitedError.fromResponse(fetchLike(503, {}))).toBeUndefined();
    expect(RateLimitedError.fromResponse(fetchLike(200, { 'Retry-After': '3' }))).toBeUndefined();
    expect(new RateLimitedError({ for: 1000 })).toBeInstanceOf(RetryAfterError);
    expect(() => new RateLimitedError({ for: 1000, scope: 'everything' as 'task' })).toThrow(
      `RateLimitedError scope must be 'task', 'key' or 'queue', got "everything"`,
    );
    expect(() => new RateLimitedError({ for: Number.NaN })).toThrow('needs ms from now or a valid Date, got NaN');
  });
});
