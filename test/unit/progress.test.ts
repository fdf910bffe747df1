/**
 * `ctx.progress(data)`: size-limited JSON, kept in the worker and written with the attempt's lease
 * writes — the first at once, then at most one every PROGRESS_WRITE_INTERVAL_MS — never a write per
 * call; `runTask` hands a task's progress values to its test.
 */
import { JobCancelledError, ProgressTooLargeError } from '../../lib/errors';
import { defineTask, type TaskOptions } from '../../lib/tasks/task';
import { runTask } from '../../lib/testing';
import { encodeEnvelope } from '../../lib/wire/envelope';
import { world } from '../helpers/world';

describe('ctx.progress', () => {
  it('200 calls cost one job-record write (claim, progress, completion: 3), and the record keeps the latest', async () => {
    const chatty: TaskOptions = {
      name: 'chatty',
      queue: 'urgent',
      timeLimitSeconds: 5,
      async run(_payload, ctx) {
        for (let i = 0; i < 200; i++) ctx.progress({ done: i + 1, of: 200 });
        // Until the progress write lands (real time, at most 4 s): the world's dispatcher loop runs
        // on a virtual clock in this same process and can hold the event loop, so a fixed sleep
        // sometimes ended before the write's timer had a turn (a flake, not the write missing).
        for (let waited = 0; waited < 4000 && (await w.jobs.get('p'))?.progress === undefined; waited += 20) {
          await new Promise((r) => setTimeout(r, 20));
        }
        return 'ok';
      },
    };
    const w: ReturnType<typeof world> = world(
      [chatty],
      { queues: [{ name: 'urgent', priority: 90, visibilityTimeoutSeconds: 30, tracking: 'full' }] },
      { tracked: true },
    );
    await w.sqs.sendBatch(w.urls.queues.urgent as string, [{ id: '0', body: encodeEnvelope({ task: 'chatty', payload: {}, id: 'p' }) }]);
    await w.run();
    expect(w.jobs.writes).toBe(3);
    const record = await w.jobs.get('p');
    expect(record).toMatchObject({ state: 'succeeded', progressAt: expect.any(Number) });
    expect(JSON.parse(record?.progress as string)).toEqual({ done: 200, of: 200 });
  });

  it('refuses more than 1 KB of JSON, naming the size, and what is not JSON', async () => {
    const big = defineTask({
      name: 'big',
      queue: 'q',
      timeLimitSeconds: 1,
      maxRetries: 0,
      run: (_p, ctx) => ctx.progress('x'.repeat(2000)),
    });
    const run = await runTask(big, null);
    expect(run.error).toBeInstanceOf(ProgressTooLargeError);
    expect((run.error as Error).message).toBe('ctx.progress(data): 2002 bytes of JSON, more than the 1024 a job record keeps');
    const cyclic = defineTask({
      name: 'cyclic',
      queue: 'q',
      timeLimitSeconds: 1,
      run: (_p, ctx) => {
        const o: Record<string, unknown> = {};
        o.self = o;
        ctx.progress(o);
      },
    });
    expect((await runTask(cyclic, null)).error).toBeInstanceOf(ProgressTooLargeError);
  });

  it('runTask exposes every progress value; its cancel option stops the run as an operator would', async () => {
    const steps = defineTask({
      name: 'steps',
      queue: 'q',
      timeLimitSeconds: 5,
      async run(_p, ctx) {
        ctx.progress({ step: 1 });
        ctx.progress({ step: 2 });
        await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
        throw ctx.signal.reason;
      },
    });
    const cancel = new AbortController();
    setTimeout(() => cancel.abort(), 50);
    const run = await runTask(steps, null, { cancel: cancel.signal });
    expect(run.progress).toEqual([{ step: 1 }, { step: 2 }]);
    expect(run.status).toBe('cancelled');
    expect(run.verdict).toEqual({ kind: 'cancelled' });
    expect(run.error).toBeInstanceOf(JobCancelledError);
  });
});
