import { renderJob } from '../../cli/render';
import { StepError } from '../../lib/errors';
import { defineTask, type TaskContext } from '../../lib/tasks/task';
import { createTestSystem, type KeptStep, runTask, type TaskRunResult } from '../../lib/testing';
import type { JobRecord } from '../../lib/track/job-record';

/** A five-step job: step 2 fails on its first try; every run of each step's body is counted. */
function fiveSteps() {
  const ran: string[] = [];
  const task = defineTask<{ order: string }, string>({
    name: 'fulfil',
    queue: 'default',
    timeLimitSeconds: 10,
    backoff: { baseSeconds: 0, capSeconds: 0 },
    async run(payload, ctx) {
      const charge = await ctx.step.run('charge', () => {
        ran.push('charge');
        return { id: `ch-${payload.order}` };
      });
      await ctx.step.run('reserve', () => {
        ran.push('reserve');
        if (ran.filter((r) => r === 'reserve').length === 1) throw new Error('warehouse busy');
        return 7;
      });
      const label = await ctx.step.run('label', () => {
        ran.push('label');
        return `label for ${charge.id}`;
      });
      await ctx.step.run('notify', () => {
        ran.push('notify');
      });
      return ctx.step.run('close', () => {
        ran.push('close');
        return label;
      });
    },
  });
  return { task, ran };
}

describe('durable steps (ctx.step.run)', () => {
  it('a later attempt gets the kept steps back without running them; the failed step runs again, the rest once', async () => {
    const { task, ran } = fiveSteps();
    const system = createTestSystem({ tasks: [task] });
    const { jobId } = await system.publish(task, { order: 'o-1' });
    await system.drain();
    expect(ran).toEqual(['charge', 'reserve', 'reserve', 'label', 'notify', 'close']);
    const record = await system.job(jobId);
    expect(record).toMatchObject({ state: 'succeeded', attempt: 2, result: JSON.stringify('label for ch-o-1') });
    // `jobs show` lists them: place, name, the attempt that kept it, and the result's size and JSON.
    const shown = renderJob(record as JobRecord);
    expect(shown).toMatch(/ {2}steps\n/);
    expect(shown).toMatch(/ {2}1 +charge +1 +\S+ +15 B {2}\{"id":"ch-o-1"\}/);
    expect(shown).toMatch(/ {2}4 +notify +2 +\S+ *\n/);
    expect(record?.steps?.map((s) => [s.name, s.result, s.attempt])).toEqual([
      ['charge', JSON.stringify({ id: 'ch-o-1' }), 1],
      ['reserve', '7', 2],
      ['label', JSON.stringify('label for ch-o-1'), 2],
      ['notify', undefined, 2],
      ['close', JSON.stringify('label for ch-o-1'), 2],
    ]);
  });

  it('archives a job whose steps run in another order than the kept ones, naming both', async () => {
    let attempt = 0;
    const task = defineTask({
      name: 'shifty',
      queue: 'default',
      timeLimitSeconds: 5,
      backoff: { baseSeconds: 0, capSeconds: 0 },
      async run(_payload: unknown, ctx) {
        attempt += 1;
        await ctx.step.run(attempt === 1 ? 'a' : 'b', () => 1);
        if (attempt === 1) throw new Error('again');
      },
    });
    const system = createTestSystem({ tasks: [task] });
    const { jobId } = await system.publish(task, {});
    await system.drain();
    const record = await system.job(jobId);
    expect(record).toMatchObject({ state: 'archived', reason: 'unrecoverable' });
    expect(record?.lastError?.message).toBe(
      `step "b": it is step 1 of job ${jobId}, whose kept step 1 is "a": steps must run in the same order on every attempt`,
    );
  });

  it('refuses a name used twice, a step after a failed one, and a result past 1 KB or not JSON', async () => {
    const run = (body: (payload: unknown, ctx: TaskContext) => Promise<unknown>) =>
      runTask(defineTask({ name: 't', queue: 'default', timeLimitSeconds: 5, run: body }), {});
    const twice = await run(async (_p, ctx) => {
      await ctx.step.run('a', () => 1);
      await ctx.step.run('a', () => 2);
    });
    expect(twice.error).toBeInstanceOf(StepError);
    expect(twice).toMatchObject({ status: 'failed', verdict: { kind: 'archive', reason: 'unrecoverable' } });
    expect(String((twice.error as Error).message)).toMatch(/step "a": the name is step 1's already/);
    const after = await run(async (_p, ctx) => {
      const failing = ctx.step.run('a', async () => {
        throw new Error('boom');
      });
      const next = ctx.step.run('b', () => 2);
      await Promise.allSettled([failing]);
      await next;
    });
    expect((after.error as StepError).problem).toBe('after-failure');
    const large = await run(async (_p, ctx) => ctx.step.run('big', () => 'x'.repeat(2000)));
    expect((large.error as StepError).problem).toBe('too-large');
    const cyclic = await run(async (_p, ctx) =>
      ctx.step.run('cycle', () => {
        const o: Record<string, unknown> = {};
        o.self = o;
        return o;
      }),
    );
    expect((cyclic.error as StepError).problem).toBe('not-json');
  });

  it('runTask replays the steps it is given and reports the ones it kept', async () => {
    const { task, ran } = fiveSteps();
    const run = await runTask(task, { order: 'o-2' }, { steps: [{ name: 'charge', result: JSON.stringify({ id: 'kept' }) }] });
    expect(run).toMatchObject({ status: 'failed' });
    expect(ran).toEqual(['reserve']);
    expect(run.steps).toEqual([]);
    const again = await runTask(task, { order: 'o-2' }, { steps: [{ name: 'charge', result: JSON.stringify({ id: 'kept' }) }] });
    expect(again).toMatchObject({ status: 'succeeded', result: 'label for kept' });
    expect(again.steps.map((s) => s.name)).toEqual(['reserve', 'label', 'notify', 'close']);
  });
});

/** A job that runs a step, sleeps two hours, then runs another: every run of each step's body counted, with the virtual time it ran. */
function napper(clock: () => number) {
  const ran: Array<[string, number]> = [];
  const task = defineTask<{ id: string }, string>({
    name: 'napper',
    queue: 'default',
    timeLimitSeconds: 10,
    async run(payload, ctx) {
      const before = await ctx.step.run('before', () => {
        ran.push(['before', clock()]);
        return `b-${payload.id}`;
      });
      await ctx.step.sleep('nap', '2h');
      return ctx.step.run('after', () => {
        ran.push(['after', clock()]);
        return `${before} then after`;
      });
    },
  });
  return { task, ran };
}

describe('durable sleeps and token waits (ctx.step.sleep, ctx.step.waitForToken)', () => {
  it('a sleep of 2 h parks the job: no attempt while it sleeps, resumed within a minute of its time, its earlier step not run again', async () => {
    let now = () => 0;
    const { task, ran } = napper(() => now());
    const system = createTestSystem({ tasks: [task] });
    now = () => system.clock.now();
    const { jobId } = await system.publish(task, { id: 'j1' });
    const start = system.clock.now();
    await system.drain();
    const record = (await system.job(jobId)) as JobRecord;
    expect(record).toMatchObject({ state: 'succeeded', result: JSON.stringify('b-j1 then after'), parks: 1, attempt: 2 });
    expect(ran.map(([step]) => step)).toEqual(['before', 'after']);
    const [[, beforeAt], [, afterAt]] = ran as [[string, number], [string, number]];
    const due = (record.steps?.[1]?.wait?.until ?? 0) - start;
    expect(record.steps?.[1]).toMatchObject({ name: 'nap', wait: { kind: 'sleep' } });
    expect(due - (beforeAt - start)).toBeGreaterThanOrEqual(7_200_000);
    expect(afterAt - start).toBeGreaterThanOrEqual(due);
    expect(afterAt - start).toBeLessThanOrEqual(due + 60_000);
    // Two claims, no attempt used by the sleep; the history says where it slept.
    const started = record.history.filter((h) => h.what === 'started');
    expect(started).toHaveLength(2);
    expect(record.history.map((h) => h.what)).toContain('sleeping');
    // No dispatcher ran the job while it slept: the only starts are before the sleep and at its end.
    expect((started[1]?.when ?? 0) - start).toBeGreaterThanOrEqual(due);
    // `jobs show` lists the sleep with its due time.
    expect(renderJob(record)).toMatch(/ {2}2 +nap +1 +\S+ +sleep until \d{4}-\d\d-\d\dT/);
    expect(renderJob(record)).toMatch(/sleeping +1 +test-system +step "nap": sleeps until/);
  });

  it('runTask reports a sleep as parked, its step kept; given back, the body goes on', async () => {
    const { task, ran } = napper(() => 0);
    const first = await runTask(task, { id: 'r1' });
    expect(first).toMatchObject({ status: 'parked', parked: { name: 'nap', wait: { kind: 'sleep', forMs: 7_200_000 } } });
    expect(first.verdict).toMatchObject({ kind: 'park' });
    expect(first.steps.map((s) => [s.name, s.wait?.kind])).toEqual([
      ['before', undefined],
      ['nap', 'sleep'],
    ]);
    const again = await runTask(task, { id: 'r1' }, { steps: first.steps });
    expect(again).toMatchObject({ status: 'succeeded', result: 'b-r1 then after' });
    expect(ran.map(([step]) => step)).toEqual(['before', 'after']);
  });

  it('refuses a sleep or a wait of no valid span, naming it', async () => {
    for (const span of ['soon', -1, 400 * 86_400_000, '2w']) {
      const task = defineTask({
        name: 'bad-nap',
        queue: 'default',
        timeLimitSeconds: 5,
        run: (_p, ctx) => ctx.step.sleep('nap', span as string),
      });
      const run = await runTask(task, {});
      expect(run.status).toBe('failed');
      expect(run.error).toBeInstanceOf(StepError);
      expect((run.error as StepError).problem).toBe('bad-duration');
      expect((run.error as Error).message).toContain(JSON.stringify(span));
    }
  });

  it('a token wait: its notify hears the token, the job parks until it is completed, resumes once with the value; a second completion is refused naming the first', async () => {
    const heard: string[] = [];
    const ran: string[] = [];
    const task = defineTask<{ order: string }, string>({
      name: 'approval',
      queue: 'default',
      timeLimitSeconds: 10,
      async run(payload, ctx) {
        await ctx.step.run('draft', () => ran.push('draft'));
        const answer = await ctx.step.waitForToken<{ approved: boolean; by: string }>('manager', {
          timeout: '3d',
          notify: (token) => {
            heard.push(token);
          },
        });
        ran.push('after');
        return answer?.approved ? `${payload.order} approved by ${answer.by}` : `${payload.order} not approved`;
      },
    });
    const system = createTestSystem({ tasks: [task] });
    const { jobId } = await system.publish(task, { order: 'o-7' });
    await system.drain();
    // Drained: nothing runs until the token is completed (or its 3 days pass).
    expect(await system.job(jobId)).toMatchObject({ state: 'waiting-token', waitToken: heard[0] });
    expect(heard).toHaveLength(1);
    const token = heard[0] as string;
    expect(token.startsWith(`${jobId}:1:`)).toBe(true);
    const done = await system.publisher.completeToken(token, { approved: true, by: 'ana' });
    expect(done).toMatchObject({ outcome: 'completed', jobId, sent: true });
    const second = await system.publisher.completeToken(token, { approved: false, by: 'bob' });
    expect(second).toMatchObject({ outcome: 'completed-already', jobId, value: JSON.stringify({ approved: true, by: 'ana' }) });
    await system.drain();
    const record = (await system.job(jobId)) as JobRecord;
    expect(record).toMatchObject({ state: 'succeeded', result: JSON.stringify('o-7 approved by ana'), parks: 1 });
    expect(ran).toEqual(['draft', 'after']);
    expect(record.history.filter((h) => h.what === 'token-completed')).toHaveLength(1);
    // Ended: a late completion is refused as completed already.
    expect((await system.publisher.completeToken(token, 1)).outcome).toBe('completed-already');
    await expect(system.publisher.completeToken('nope', 1)).rejects.toThrow(/Invalid token "nope"/);
    await expect(system.publisher.completeToken(token, 'x'.repeat(2000))).rejects.toThrow(
      /Invalid value "2002 bytes of JSON": expected at most 1024 bytes/,
    );
    expect(await system.publisher.completeToken(`${jobId}:1:AAAAAAAAAAAAAAAA`, 1)).toEqual({ outcome: 'unknown' });
  });

  it('a token wait times out: the job resumes with null, and the token is refused from then on', async () => {
    const heard: string[] = [];
    const task = defineTask({
      name: 'impatient',
      queue: 'default',
      timeLimitSeconds: 10,
      async run(_p, ctx) {
        const answer = await ctx.step.waitForToken('reply', { timeout: '1h', notify: (t) => heard.push(t) });
        return answer === null ? 'timed out' : 'answered';
      },
    });
    const system = createTestSystem({ tasks: [task] });
    const { jobId } = await system.publish(task, {});
    await system.drain();
    expect(await system.job(jobId)).toMatchObject({ state: 'waiting-token' });
    system.clock.advance(3_600_000);
    await system.drain();
    expect(await system.job(jobId)).toMatchObject({ state: 'succeeded', result: JSON.stringify('timed out') });
    expect(await system.publisher.completeToken(heard[0] as string, 'late')).toMatchObject({ outcome: 'not-waiting', state: 'succeeded' });
    expect(heard).toHaveLength(1);
  });

  it('a stepped task continues in a new attempt before a step that would not fit its time, using no attempt, each step once', async () => {
    const ran: number[] = [];
    const task = defineTask({
      name: 'long-haul',
      queue: 'default',
      timeLimitSeconds: 2,
      stepTimeLimitSeconds: 1,
      maxRetries: 0,
      async run(_p, ctx) {
        for (let i = 0; i < 6; i++) {
          await ctx.step.run(`part-${i}`, async () => {
            ran.push(i);
            await new Promise((resolve) => setTimeout(resolve, 400));
          });
        }
        return ran.length;
      },
    });
    let steps: KeptStep[] = [];
    let runs = 0;
    for (;;) {
      const run: TaskRunResult = await runTask(task, {}, { steps });
      runs += 1;
      steps = [...steps, ...run.steps];
      if (run.status === 'succeeded') break;
      expect(run).toMatchObject({ status: 'parked', parked: { wait: { kind: 'continue' } }, verdict: { kind: 'park' } });
      expect(runs).toBeLessThan(10);
    }
    expect(ran).toEqual([0, 1, 2, 3, 4, 5]);
    expect(runs).toBeGreaterThan(1);
  });

  it('refuses stepTimeLimitSeconds outside 1 s..timeLimitSeconds, naming it', () => {
    for (const bad of [0, 11, 'x']) {
      expect(() =>
        defineTask({ name: 'bad-steps', queue: 'default', timeLimitSeconds: 10, stepTimeLimitSeconds: bad as number, run: () => 1 }),
      ).toThrow(/stepTimeLimitSeconds/);
    }
  });
});
