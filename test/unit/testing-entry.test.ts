/** `taskworker/testing`, used as a team would in its own unit tests: through the public entry points only. */
import { defineTask, LeaseLostError, UnrecoverableError } from 'taskworker';
import { createTestSystem, runTask } from 'taskworker/testing';

class CardDeclined extends Error {
  override name = 'CardDeclined';
}

const charge = defineTask({
  name: 'charge-card',
  queue: 'payments',
  timeLimitSeconds: 5,
  maxRetries: 2,
  backoff: { baseSeconds: 30, capSeconds: 30 },
  unrecoverable: [CardDeclined],
  validate(payload) {
    const p = payload as { cents?: unknown };
    if (typeof p.cents !== 'number') throw new TypeError('cents must be a number');
    return p as { cents: number; outcome?: 'decline' | 'flaky' };
  },
  async run(payload, ctx) {
    if (payload.outcome === 'decline') throw new CardDeclined('card declined');
    if (payload.outcome === 'flaky' && ctx.attempt < 3) throw new Error(`gateway 503 on attempt ${ctx.attempt}`);
    await ctx.heartbeat();
    return { charged: payload.cents, attempt: ctx.attempt, tenant: (ctx.appData as { tenant?: string } | null)?.tenant };
  },
});

describe('runTask: one task with a context of the test’s choosing', () => {
  it('returns what run returned, and the verdict: succeeded', async () => {
    const run = await runTask(charge, { cents: 500 }, { appData: { tenant: 'acme' } });
    expect(run).toMatchObject({ status: 'succeeded', result: { charged: 500, attempt: 1, tenant: 'acme' }, heartbeats: 1 });
    expect(run.verdict).toEqual({ kind: 'succeeded' });
  });

  it('says a failure is retried while attempts remain, and archived as exhausted at the last', async () => {
    const first = await runTask(charge, { cents: 1, outcome: 'flaky' }, { attempt: 1, random: () => 1 });
    expect(first.status).toBe('failed');
    expect((first.error as Error).message).toBe('gateway 503 on attempt 1');
    expect(first.verdict).toEqual({ kind: 'retry', seconds: 30 });
    expect((await runTask(charge, { cents: 1, outcome: 'flaky' }, { attempt: 3 })).verdict).toEqual({ kind: 'succeeded' });
    const down = defineTask({ name: 'down', queue: 'q', timeLimitSeconds: 1, maxRetries: 2, run: () => Promise.reject(new Error('down')) });
    expect((await runTask(down, {}, { attempt: 3 })).verdict).toEqual({ kind: 'archive', reason: 'exhausted' });
  });

  it('archives unrecoverable errors and invalid payloads at once, with the error as thrown', async () => {
    const declined = await runTask(charge, { cents: 1, outcome: 'decline' });
    expect(declined.error).toBeInstanceOf(CardDeclined);
    expect(declined.verdict).toEqual({ kind: 'archive', reason: 'unrecoverable' });
    const invalid = await runTask(charge, { cents: 'ten' });
    expect(invalid.error).toBeInstanceOf(TypeError);
    expect(invalid.verdict).toEqual({ kind: 'archive', reason: 'invalid-payload' });
    const thrown = await runTask(
      defineTask({ name: 'x', queue: 'q', timeLimitSeconds: 1, run: () => Promise.reject(new UnrecoverableError('no')) }),
      {},
    );
    expect(thrown.verdict).toEqual({ kind: 'archive', reason: 'unrecoverable' });
  });

  it('fires the signal at the time limit and reports the run as timed out', async () => {
    const sleepy = defineTask({
      name: 'sleepy',
      queue: 'q',
      timeLimitSeconds: 10,
      maxRetries: 0,
      run: (_p, ctx) => new Promise((_resolve, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason))),
    });
    const run = await runTask(sleepy, {}, { timeLimitMs: 50 });
    expect(run.status).toBe('timed-out');
    expect(run.verdict).toEqual({ kind: 'archive', reason: 'timed-out' });
  });

  it('lets the test say the lease was lost: ctx.heartbeat() rejects with LeaseLostError', async () => {
    const run = await runTask(charge, { cents: 1 }, { heartbeat: () => false, attempt: 2 });
    expect(run.error).toBeInstanceOf(LeaseLostError);
  });
});

describe('createTestSystem: publish → dispatch → outcome in memory', () => {
  it('runs a published job to success, retries in virtual time, and keeps the record', async () => {
    const system = createTestSystem({ tasks: [charge] });
    const ok = await system.publish(charge, { cents: 100 });
    const flaky = await system.publish(charge, { cents: 200, outcome: 'flaky' });
    const declined = await system.publish(charge, { cents: 300, outcome: 'decline' });
    const result = await system.drain();
    expect(result).toMatchObject({ succeeded: 2, retried: 2, archived: { unrecoverable: 1 } });
    // Two backoffs of 30 s (full jitter up to 30) passed on the virtual clock, not the real one.
    expect(result.elapsedMs).toBeGreaterThan(0);
    expect(await system.job(ok.jobId)).toMatchObject({ state: 'succeeded', attempt: 1, result: '{"charged":100,"attempt":1}' });
    expect(await system.job(flaky.jobId)).toMatchObject({ state: 'succeeded', attempt: 3 });
    expect(await system.job(declined.jobId)).toMatchObject({ state: 'archived', reason: 'unrecoverable' });
    expect(system.archived().map((a) => a.record?.reason)).toEqual(['unrecoverable']);
    expect((await system.stats('payments'))?.counters).toMatchObject({ succeeded: 2, retried: 2 });
  });

  it('runs a job published an hour ahead after one virtual hour, as the deployed version would', async () => {
    const hello = defineTask({ name: 'hello', queue: 'default', timeLimitSeconds: 5, run: (p: { who: string }) => `hello ${p.who}` });
    const system = createTestSystem({ tasks: [hello] });
    const later = await system.publish(hello, { who: 'later' }, { delaySeconds: 3600 });
    const soon = await system.publish(hello, { who: 'soon' }, { delaySeconds: 120 });
    const result = await system.drain({ maxMs: 3 * 3600_000 });
    expect(await system.job(later.jobId)).toMatchObject({ state: 'succeeded', result: '"hello later"' });
    expect(await system.job(soon.jobId)).toMatchObject({ state: 'succeeded' });
    expect(result.succeeded).toBe(2);
    // Not before its time, and within the schedule's minute after it.
    expect(result.elapsedMs).toBeGreaterThanOrEqual(3600_000);
    expect(result.elapsedMs).toBeLessThanOrEqual(3600_000 + 2 * 60_000);
  });

  it('gives up at maxMs with a parked job still parked', async () => {
    const hello = defineTask({ name: 'hello', queue: 'default', timeLimitSeconds: 5, run: () => 'hi' });
    const system = createTestSystem({ tasks: [hello] });
    const later = await system.publish(hello, {}, { delaySeconds: 7200 });
    const result = await system.drain({ maxMs: 3600_000 });
    expect(result.elapsedMs).toBe(3600_000);
    // Received after SQS's longest delay (15 minutes), it was parked in the jobs table to wait.
    expect(await system.job(later.jobId)).toMatchObject({ state: 'scheduled' });
  });

  it('archives what another service sends wrong, and runs a duplicate once', async () => {
    const system = createTestSystem({ tasks: [charge] });
    await system.send('payments', 'not json');
    await system.send('payments', JSON.stringify({ task: 'charge-card', id: 'order-7', payload: { cents: 7 } }));
    await system.send('payments', JSON.stringify({ task: 'charge-card', id: 'order-7', payload: { cents: 7 } }));
    const result = await system.drain();
    expect(result).toMatchObject({ succeeded: 1, duplicates: 1, archived: { malformed: 1 } });
  });
});
