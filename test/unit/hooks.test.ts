import { ConfigError, TaskDefinitionError } from '../../lib/errors';
import type { HookContext } from '../../lib/hook-types';
import { defineTask, type TaskOptions } from '../../lib/tasks/task';
import { encodeEnvelope } from '../../lib/wire/envelope';
import { appConfig } from '../helpers/factories';
import { type World, world } from '../helpers/world';

type Seen = {
  hook: string;
  jobId: string;
  task: string | undefined;
  detail: unknown;
  state: string | undefined;
  queueDepth: number;
  ctx: HookContext;
};

/** Hooks that note what they saw, and the durable truth at that moment: the job record and the queue. */
function noting(seen: Seen[], w: () => World, source: string) {
  const truth = async (ctx: HookContext) => ({
    state: (await w().jobs.get(ctx.jobId))?.state,
    queueDepth: (await w().sqs.depth(w().urls.queues.urgent as string)).inFlight,
  });
  return {
    onSuccess: async (result: unknown, ctx: HookContext) => {
      seen.push({ hook: `${source}.onSuccess`, jobId: ctx.jobId, task: ctx.task, detail: result, ...(await truth(ctx)), ctx });
    },
    onRetry: async (error: { message: string }, ctx: HookContext) => {
      seen.push({ hook: `${source}.onRetry`, jobId: ctx.jobId, task: ctx.task, detail: error.message, ...(await truth(ctx)), ctx });
    },
    onArchived: async (error: { message: string }, reason: string, ctx: HookContext) => {
      seen.push({
        hook: `${source}.onArchived`,
        jobId: ctx.jobId,
        task: ctx.task,
        detail: `${reason}: ${error.message}`,
        ...(await truth(ctx)),
        ctx,
      });
    },
  };
}

const flaky: TaskOptions = {
  name: 'flaky',
  queue: 'urgent',
  timeLimitSeconds: 5,
  maxRetries: 1,
  backoff: { baseSeconds: 0, capSeconds: 0 },
  run: (_p, ctx) => {
    if (ctx.attempt === 1) throw new Error('first try fails');
    return { rows: 3 };
  },
};
const doomed: TaskOptions = {
  name: 'doomed',
  queue: 'urgent',
  timeLimitSeconds: 5,
  maxRetries: 0,
  run: () => Promise.reject(new Error('no')),
};

describe('lifecycle hooks', () => {
  it("run after the outcome is durable, the task's then the app's, with the result, error, reason, payload and appData", async () => {
    const seen: Seen[] = [];
    let w: World | undefined;
    const current = () => w as World;
    const app = noting(seen, current, 'app');
    w = world(
      [
        { ...flaky, ...noting(seen, current, 'flaky') },
        { ...doomed, ...noting(seen, current, 'doomed') },
      ],
      { queues: [{ name: 'urgent', priority: 90, visibilityTimeoutSeconds: 30 }], hooks: app },
      { tracked: true },
    );
    await w.send('urgent', encodeEnvelope({ task: 'flaky', id: 'f1', payload: { n: 1 }, appData: { tenant: 'acme' } }));
    await w.send('urgent', encodeEnvelope({ task: 'doomed', id: 'd1', payload: {} }));
    await w.send('urgent', 'not json');
    await w.run();
    const by = (hook: string) => seen.filter((s) => s.hook === hook);
    // Retried: the record says retrying when the hooks run; then succeeded with its result.
    expect(by('flaky.onRetry')).toEqual([expect.objectContaining({ jobId: 'f1', detail: 'first try fails', state: 'retrying' })]);
    expect(by('flaky.onSuccess')).toEqual([
      expect.objectContaining({ jobId: 'f1', detail: { rows: 3 }, state: 'succeeded', queueDepth: 0 }),
    ]);
    expect(by('flaky.onSuccess')[0]?.ctx).toMatchObject({
      task: 'flaky',
      queue: 'urgent',
      attempt: 2,
      payload: { n: 1 },
      appData: { tenant: 'acme' },
    });
    expect(by('app.onSuccess')).toHaveLength(1);
    expect(by('doomed.onArchived')).toEqual([expect.objectContaining({ jobId: 'd1', detail: 'exhausted: no', state: 'archived' })]);
    // The app's onArchived also hears of a message that never ran (no task to call).
    expect(by('app.onArchived').map((s) => [s.task, (s.detail as string).split(':')[0]])).toEqual(
      expect.arrayContaining([
        ['doomed', 'exhausted'],
        [undefined, 'malformed'],
      ]),
    );
    expect(w.reports.flatMap((r) => r.jobs).filter((j) => j.hook === 'ran')).toHaveLength(4);
  });

  it('cannot change the outcome: a hook that throws or never ends is logged and counted, and the rest carry on', async () => {
    const calls: string[] = [];
    let signal: AbortSignal | undefined;
    const w = world(
      [
        {
          name: 'ok',
          queue: 'urgent',
          timeLimitSeconds: 5,
          run: () => 'done',
          onSuccess: () => {
            calls.push('task');
            throw new Error('Sentry is down');
          },
        },
      ],
      {
        queues: [{ name: 'urgent', priority: 90, visibilityTimeoutSeconds: 30 }],
        hooks: {
          timeoutMs: 100,
          onSuccess: (_r, ctx) => {
            calls.push('app');
            signal = ctx.signal;
            return new Promise(() => {});
          },
        },
      },
      { tracked: true },
    );
    await w.send('urgent', encodeEnvelope({ task: 'ok', id: 'k1', payload: null }));
    await w.send('urgent', encodeEnvelope({ task: 'ok', id: 'k2', payload: null }));
    await w.run();
    expect(calls.sort()).toEqual(['app', 'app', 'task', 'task']);
    expect(signal?.aborted).toBe(true);
    const jobs = w.reports.flatMap((r) => r.jobs);
    expect(jobs.map((j) => [j.outcome, j.hook])).toEqual([
      ['succeeded', 'failed'],
      ['succeeded', 'failed'],
    ]);
    expect((await w.jobs.get('k1'))?.state).toBe('succeeded');
  });

  it('refuses a hook that is not a function, naming where', () => {
    expect(() => appConfig({ hooks: { onArchived: 'alert' as never } })).toThrow(ConfigError);
    expect(() => appConfig({ hooks: { onArchived: 'alert' as never } })).toThrow(/hooks\.onArchived = "alert": expected a function/);
    expect(() => appConfig({ hooks: { timeoutMs: 10 } })).toThrow(/hooks\.timeoutMs = 10/);
    expect(() => defineTask({ name: 't', queue: 'urgent', timeLimitSeconds: 1, run: () => {}, onRetry: 5 as never })).toThrow(
      TaskDefinitionError,
    );
  });
});
