import { queueProbes, runDispatcher } from '../../lib/dispatch/loop';
import { createSelector } from '../../lib/select/create-selector';
import type { TaskOptions } from '../../lib/tasks/task';
import { encodeEnvelope } from '../../lib/wire/envelope';
import { type World, world } from '../helpers/world';

const envelope = (task: string, payload: unknown = {}) => encodeEnvelope({ task, payload });
const outcomes = (w: World) => w.reports.flatMap((r) => r.jobs.map((j) => j.outcome));
const runWith = (w: World, extra: { maxBatchesInFlight?: number; selector?: 'strict' }, forMs = 30_000) =>
  runDispatcher(
    {
      ...w.deps,
      ...(extra.maxBatchesInFlight ? { maxBatchesInFlight: extra.maxBatchesInFlight } : {}),
      ...(extra.selector
        ? {
            selector: createSelector(extra.selector, {
              queues: w.config.queues,
              random: Math.random,
              clock: w.clock,
              probes: queueProbes(w.queues, w.urls),
            }),
          }
        : {}),
    },
    { deadline: w.clock.now() + forMs },
  );

/** One slow task (it waits for a gate) among fast ones; the gate opens once 19 fast tasks are done, or after a fallback. */
function slowAmongFast() {
  let fastDone = 0;
  let openedBy: 'progress' | 'fallback' | undefined;
  let open = () => {};
  const gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  const fallback = setTimeout(() => {
    openedBy ??= 'fallback';
    open();
  }, 300);
  const task: TaskOptions = {
    name: 'work',
    queue: 'urgent',
    timeLimitSeconds: 5,
    run: async (payload) => {
      if ((payload as { slow?: boolean }).slow) {
        await gate;
        return;
      }
      fastDone += 1;
      if (fastDone === 19) {
        openedBy ??= 'progress';
        open();
      }
    },
  };
  return { task, openedBy: () => openedBy, stop: () => clearTimeout(fallback) };
}

describe('dispatcher loop: batches in flight share the task slots', () => {
  it("receives the next batch while the previous batch's slowest task still runs, and settles each batch on its own", async () => {
    const slow = slowAmongFast();
    const w = world([slow.task], { dispatcher: { concurrency: 10, timeoutSeconds: 60, settleMarginMs: 500, killGraceMs: 100 } });
    await w.send('urgent', encodeEnvelope({ task: 'work', payload: { slow: true }, id: 'slow-job' }));
    for (let i = 0; i < 19; i++) await w.send('urgent', envelope('work', { i }));
    await runWith(w, {});
    slow.stop();
    expect(slow.openedBy()).toBe('progress');
    expect(outcomes(w)).toHaveLength(20);
    expect(outcomes(w).every((o) => o === 'succeeded')).toBe(true);
    // The batches received after the first were settled first: the first waited for its slow task,
    // and each later receive took the slots its fast tasks had freed.
    expect(w.reports.map((r) => r.jobs.some((j) => j.jobId === 'slow-job'))).toEqual([...Array(w.reports.length - 1).fill(false), true]);
    expect(w.reports.length).toBeGreaterThanOrEqual(2);
    expect(w.reports.at(-1)?.jobs).toHaveLength(10);
    expect(w.sqs.peek(w.urls.queues.urgent as string)).toHaveLength(0);
  });

  it('with one batch in flight (the blocking loop), the next receive waits for the slowest task', async () => {
    const slow = slowAmongFast();
    const w = world([slow.task], { dispatcher: { concurrency: 10, timeoutSeconds: 60, settleMarginMs: 500, killGraceMs: 100 } });
    await w.send('urgent', envelope('work', { slow: true }));
    for (let i = 0; i < 19; i++) await w.send('urgent', envelope('work', { i }));
    await runWith(w, { maxBatchesInFlight: 1 });
    slow.stop();
    expect(slow.openedBy()).toBe('fallback');
    expect(outcomes(w).filter((o) => o === 'succeeded')).toHaveLength(20);
  });

  it('never runs more tasks at once than the concurrency, across batches', async () => {
    let running = 0;
    let peak = 0;
    const w = world(
      [
        {
          name: 'io',
          queue: 'urgent',
          timeLimitSeconds: 5,
          run: async (payload) => {
            running += 1;
            peak = Math.max(peak, running);
            await new Promise((resolve) => setTimeout(resolve, ((payload as { i: number }).i * 7) % 10));
            running -= 1;
          },
        },
      ],
      { dispatcher: { concurrency: 4, timeoutSeconds: 60, settleMarginMs: 500, killGraceMs: 100 } },
    );
    for (let i = 0; i < 30; i++) await w.send('urgent', envelope('io', { i }));
    await w.run();
    expect(outcomes(w).filter((o) => o === 'succeeded')).toHaveLength(30);
    expect(peak).toBe(4);
  });

  it('receives a message only when a slot is free for it: none waits in the dispatcher, none is released or left to lapse', async () => {
    const w: World = world(
      [
        {
          name: 'long',
          queue: 'urgent',
          timeLimitSeconds: 20,
          run: () => {
            w.clock.advance(14_500);
          },
        },
      ],
      {
        queues: [{ name: 'urgent', priority: 90, visibilityTimeoutSeconds: 30, batchSize: 3 }],
        dispatcher: { concurrency: 1, timeoutSeconds: 300, settleMarginMs: 500, killGraceMs: 100 },
      },
    );
    for (let i = 0; i < 3; i++) await w.send('urgent', envelope('long', { i }));
    await runWith(w, { maxBatchesInFlight: 1 }, 200_000);
    // Each received as the one slot freed (a batch of 3 would have left the third to wait 29 s of its 30 s visibility).
    expect(outcomes(w)).toEqual(['succeeded', 'succeeded', 'succeeded']);
    expect(w.runs.map((r) => [(r.payload as { i: number }).i, r.attempt])).toEqual([
      [0, 1],
      [1, 1],
      [2, 1],
    ]);
    expect(w.sqs.requests.changeVisibilityBatch).toBe(0);
  });

  it('takes urgent work into the free slot while a long task holds the other, not after it', async () => {
    const events: string[] = [];
    const w: World = world(
      [
        {
          name: 'slow',
          queue: 'routine',
          timeLimitSeconds: 60,
          run: async () => {
            await w.send('urgent', envelope('quick'));
            await w.send('urgent', envelope('quick'));
            await new Promise((resolve) => setTimeout(resolve, 50));
            events.push('slow done');
          },
        },
        { name: 'quick', queue: 'urgent', timeLimitSeconds: 5, run: () => void events.push('quick') },
      ],
      {
        queues: [
          { name: 'urgent', priority: 90, visibilityTimeoutSeconds: 30, batchSize: 2 },
          { name: 'routine', priority: 10, visibilityTimeoutSeconds: 90 },
        ],
        dispatcher: { concurrency: 2, timeoutSeconds: 300, settleMarginMs: 500, killGraceMs: 100 },
      },
    );
    await w.send('routine', envelope('slow'));
    await runWith(w, { selector: 'strict' }, 120_000);
    // With one slot held by a task that may run 60 s, each receive takes only the free slot: both
    // urgent jobs run in it, one after the other, while the slow task runs on.
    expect(events).toEqual(['quick', 'quick', 'slow done']);
    expect(outcomes(w)).toEqual(['succeeded', 'succeeded', 'succeeded']);
  });
});
