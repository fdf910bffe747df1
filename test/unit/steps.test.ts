import { renderJob } from '../../cli/render';
import { StepError } from '../../lib/errors';
import { defineTask, type TaskContext } from '../../lib/tasks/task';
import { createTestSystem, runTask } from '../../lib/testing';
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
