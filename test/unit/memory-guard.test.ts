import { getEventListeners } from 'node:events';
import { MemoryLimitError } from '../../lib/errors';
import { watchMemory } from '../../lib/run/memory-guard';
import { defineTask } from '../../lib/tasks/task';
import { encodeEnvelope } from '../../lib/wire/envelope';
import { appConfig } from '../helpers/factories';
import { inlineRuntime } from '../helpers/runtime';

const MB = 1_048_576;

describe('watchMemory', () => {
  it('aborts with a MemoryLimitError at the first reading over the limit, and reads no more', async () => {
    const readings = [100, 200, 301, 50];
    let reads = 0;
    const guard = watchMemory({ limitBytes: 300, intervalMs: 1, rss: () => readings[reads++] ?? 0 });
    await new Promise<void>((resolve) => guard.signal.addEventListener('abort', () => resolve()));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(guard.tripped).toEqual({ rssBytes: 301, limitBytes: 300 });
    expect(guard.signal.reason).toBeInstanceOf(MemoryLimitError);
    expect(reads).toBe(3);
  });

  it('trips at once when the process is already over the limit', () => {
    const guard = watchMemory({ limitBytes: 10, rss: () => 11 });
    expect(guard.signal.aborted).toBe(true);
  });

  it('stays quiet under the limit and stops reading when stopped', async () => {
    let reads = 0;
    const guard = watchMemory({
      limitBytes: 10,
      intervalMs: 1,
      rss: () => {
        reads += 1;
        return 5;
      },
    });
    await new Promise((resolve) => setTimeout(resolve, 20));
    guard.stop();
    const after = reads;
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(guard.signal.aborted).toBe(false);
    expect(reads).toBe(after);
  });
});

describe("watchMemory with the caller's stop signal", () => {
  const under = { limitBytes: 100, rss: () => 10 };

  it('aborts with the reason of whichever aborts first', () => {
    const a = new AbortController();
    const guard = watchMemory({ ...under, stop: a.signal });
    a.abort('stopped first');
    expect(guard.signal.reason).toBe('stopped first');
    guard.stop();
  });

  it('is aborted already when the stop signal is', () => {
    const guard = watchMemory({ ...under, stop: AbortSignal.abort('done') });
    expect(guard.signal.aborted).toBe(true);
    guard.stop();
  });

  it('lets go of a stop signal that outlives it (a warm container invoked many times)', () => {
    const stopping = new AbortController();
    for (let i = 0; i < 20; i++) watchMemory({ ...under, stop: stopping.signal }).stop();
    expect(getEventListeners(stopping.signal, 'abort')).toHaveLength(0);
  });
});

describe('DispatcherRuntime: the resident-set guard', () => {
  /** One queue, tasks run inline one at a time; `rss` decides what the guard reads. */
  function setup(rss: () => number) {
    const config = appConfig({
      queues: [{ name: 'urgent', priority: 90, visibilityTimeoutSeconds: 30, longPollSeconds: 0 }],
      dispatcher: { concurrency: 1, timeoutSeconds: 60, settleMarginMs: 500, killGraceMs: 100, memoryMb: 512, rssLimitMb: 400 },
    });
    const started: number[] = [];
    const slow = defineTask({
      name: 'slow',
      queue: 'urgent',
      timeLimitSeconds: 5,
      run: async (payload: { n: number }) => {
        started.push(payload.n);
        await new Promise((resolve) => setTimeout(resolve, 50));
      },
    });
    const { runtime, sqs, urls, reports } = inlineRuntime(config, [slow], { memory: { rss, intervalMs: 5 } });
    const send = (n: number) =>
      sqs.sendBatch(urls.queues.urgent, [{ id: String(n), body: encodeEnvelope({ task: 'slow', payload: { n } }) }]);
    return { runtime, sqs, urls, started, reports, send };
  }

  it('past dispatcher.rssLimitMb lets the running task finish, takes nothing more and returns', async () => {
    let grown = false;
    const s = setup(() => (grown ? 450 * MB : 100 * MB));
    for (let n = 0; n < 5; n++) await s.send(n);
    const invocation = s.runtime.invoke(Date.now() + 60_000);
    // The first task is running (one slot): memory passes the limit now.
    while (s.started.length === 0) await new Promise((resolve) => setTimeout(resolve, 1));
    grown = true;
    const summary = await invocation;

    expect(summary.memoryStop).toEqual({ rssMb: 450, limitMb: 400 });
    const outcomes = s.reports.flatMap((r) => r.jobs.map((j) => j.outcome));
    expect(outcomes).toEqual(['succeeded']);
    expect(s.started).toHaveLength(1);
    // Never received (one slot, held by the task that ran): visible to another dispatcher all along.
    expect(await s.sqs.depth(s.urls.queues.urgent)).toEqual({ visible: 4, inFlight: 0, delayed: 0 });
  });

  it('takes no work at all when the process is over the limit when invoked', async () => {
    const s = setup(() => 500 * MB);
    await s.send(1);
    const summary = await s.runtime.invoke(Date.now() + 60_000);
    expect(summary).toMatchObject({ receives: 0, memoryStop: { rssMb: 500, limitMb: 400 } });
    expect(await s.sqs.depth(s.urls.queues.urgent)).toEqual({ visible: 1, inFlight: 0, delayed: 0 });
  });

  it('leaves the summary without memoryStop under the limit', async () => {
    const s = setup(() => 100 * MB);
    await s.send(1);
    const stop = new AbortController();
    const invocation = s.runtime.invoke(Date.now() + 60_000, stop.signal);
    while (s.reports.length === 0) await new Promise((resolve) => setTimeout(resolve, 1));
    stop.abort();
    const summary = await invocation;
    expect(summary.memoryStop).toBeUndefined();
    expect(s.reports.flatMap((r) => r.jobs.map((j) => j.outcome))).toEqual(['succeeded']);
  });
});
