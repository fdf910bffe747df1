import { Simulation } from '../../bench/sim/engine';
import { debouncedLine } from '../../cli/publish';
import { MessageTooLargeError, PublishOptionError, TaskDefinitionError } from '../../lib/errors';
import { MAX_DEBOUNCED_BODY_BYTES } from '../../lib/policy/debounce-rules';
import { Publisher } from '../../lib/publish/publisher';
import { createRegistry } from '../../lib/tasks/registry';
import { defineTask, type TaskOptions, toDefinition } from '../../lib/tasks/task';
import { createTestSystem } from '../../lib/testing/system';
import { appConfig } from '../helpers/factories';
import { publisherOf, world } from '../helpers/world';

type Save = { doc: string; n: number };

/** A re-index task whose body notes each run's payload and start, the effect debounce must keep to one per burst. */
function reindex(debounce: TaskOptions['debounce'] = { period: '2s', maxWait: '10s' }) {
  const runs: Array<{ payload: Save; at: number; jobId: string }> = [];
  let now = () => 0;
  const options: TaskOptions<Save> = {
    name: 'reindex',
    queue: 'urgent',
    timeLimitSeconds: 5,
    debounce,
    run: (payload, ctx) => {
      runs.push({ payload, at: now(), jobId: ctx.jobId });
    },
  };
  return { options, runs, clockIs: (clock: { now(): number }) => (now = () => clock.now()) };
}

/** A world on a discrete-event clock with a publisher that publishes `count` saves of one document, `everyMs` apart. */
function savesWorld(debounce: TaskOptions['debounce'], count: number, everyMs: number) {
  const sim = new Simulation();
  const { options, runs, clockIs } = reindex(debounce);
  clockIs(sim);
  const w = world([options as TaskOptions], {}, { tracked: true, simulation: sim });
  const publisher = new Publisher({
    config: w.config,
    version: 'v1',
    tasks: [toDefinition(options, 'reindex')],
    queues: w.sqs,
    urls: w.urls,
    jobs: w.jobs,
    clock: sim,
  });
  const published: Array<{ jobId: string; debounced: boolean; at: number }> = [];
  const publishing = (async () => {
    for (let n = 0; n < count; n++) {
      if (n > 0) await sim.sleep(everyMs);
      const p = await publisher.publish('reindex', { doc: 'doc-7', n }, { key: 'doc-7' });
      published.push({ jobId: p.jobId, debounced: p.debounced === true, at: sim.now() });
    }
  })();
  return { sim, w, runs, published, publishing };
}

describe('a task’s debounce rule', () => {
  it('reads its period and maxWait in seconds or with a unit; maxWait defaults to 15 minutes', () => {
    expect(reindex({ period: '2s', maxWait: '10s' }).options.debounce).toEqual({ period: '2s', maxWait: '10s' });
    expect(defineTask(reindex({ period: '2s', maxWait: '1m' }).options).debounce).toEqual({ periodSeconds: 2, maxWaitSeconds: 60 });
    expect(defineTask(reindex({ period: 5 }).options).debounce).toEqual({ periodSeconds: 5, maxWaitSeconds: 900 });
  });

  it('is kept when a definition is read back (a task bundle re-validates its modules)', () => {
    const task = defineTask(reindex({ period: '3s', maxWait: '30s' }).options);
    expect(toDefinition({ ...task }, 'bundle').debounce).toEqual({ periodSeconds: 3, maxWaitSeconds: 30 });
  });

  it.each([
    ['debounce.period', { period: '0s' }],
    ['debounce.period', { period: 0.5 }],
    ['debounce.period', { period: '16m' }],
    ['debounce.period', { period: 'soon' }],
    ['debounce.maxWait', { period: '10s', maxWait: '5s' }],
    ['debounce.maxWait', { period: '10s', maxWait: '1h' }],
    ['debounce', 'yes'],
  ])('refuses a bad %s with a typed error naming it and the value (%j)', (field, rule) => {
    let thrown: unknown;
    try {
      defineTask(reindex(rule as never).options);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(TaskDefinitionError);
    expect(thrown).toMatchObject({ task: 'reindex', field });
    if (field !== 'debounce') expect((thrown as Error).message).toMatch(/15 minutes/);
  });

  it('is not given with unique on one task', () => {
    expect(() => defineTask({ ...reindex().options, unique: { for: '1m' } })).toThrow(
      expect.objectContaining({ name: 'TaskDefinitionError', field: 'debounce' }),
    );
  });

  it('needs its queue tracked full: the key’s pending job lives in the jobs table', () => {
    const config = appConfig({ queues: [{ name: 'urgent', priority: 1, visibilityTimeoutSeconds: 30, tracking: 'failures' }] });
    expect(() => createRegistry([defineTask(reindex().options)], config)).toThrow(expect.objectContaining({ field: 'debounce' }));
  });
});

describe('publishing a debounced task’s keyed job', () => {
  it('20 publishes 200 ms apart: one run, with the last payload, a period or more after the last publish; each answer names that job', async () => {
    const { sim, w, runs, published, publishing } = savesWorld({ period: '2s', maxWait: '10s' }, 20, 200);
    await w.run({ forMs: 30_000 });
    await publishing;
    expect(runs).toHaveLength(1);
    expect(runs[0]?.payload).toEqual({ doc: 'doc-7', n: 19 });
    const last = published.at(-1)?.at as number;
    expect(runs[0]?.at).toBeGreaterThanOrEqual(last + 2000);
    const jobId = published[0]?.jobId as string;
    expect(published.map((p) => p.jobId)).toEqual(Array(20).fill(jobId));
    expect(published.map((p) => p.debounced)).toEqual([false, ...Array(19).fill(true)]);
    // One message was ever sent; the job's record is the run's, with the last payload's identity.
    expect(await w.jobs.get(jobId)).toMatchObject({ state: 'succeeded', attempt: 1, key: 'doc-7' });
    expect(await w.jobs.debounceCycle('reindex', 'doc-7')).toBeUndefined();
    expect(sim.now()).toBeGreaterThan(last);
  });

  it('publishes every 200 ms for 60 s (period 2 s, maxWait 10 s): 6 or 7 runs, each at most maxWait after its first publish, the last payload run', async () => {
    const { w, runs, published, publishing } = savesWorld({ period: '2s', maxWait: '10s' }, 300, 200);
    await w.run({ forMs: 90_000 });
    await publishing;
    expect(runs.length).toBeGreaterThanOrEqual(6);
    expect(runs.length).toBeLessThanOrEqual(7);
    // Every publish is answered with a job that ran, and the last one's payload is the last run's.
    const ran = new Set(
      w.reports
        .flatMap((r) => r.jobs)
        .filter((j) => j.outcome === 'succeeded')
        .map((j) => j.jobId),
    );
    expect(new Set(published.map((p) => p.jobId))).toEqual(ran);
    expect(runs.at(-1)?.payload).toEqual({ doc: 'doc-7', n: 299 });
    const ns = runs.map((r) => r.payload.n);
    expect(ns).toEqual([...ns].sort((a, b) => a - b));
    // Each ran by maxWait after the first publish answered with its job (SQS counts whole seconds: 1 s of slack).
    for (const run of runs) {
      const firstAt = published.find((p) => p.jobId === run.jobId)?.at as number;
      expect(run.at - firstAt).toBeLessThanOrEqual(11_000);
    }
  });

  it('runs one job per key, and a publish without a key as any job', async () => {
    const { options, runs } = reindex();
    const system = createTestSystem({ tasks: [defineTask(options)] });
    const a1 = await system.publish('reindex', { doc: 'a', n: 1 }, { key: 'a' });
    const b1 = await system.publish('reindex', { doc: 'b', n: 1 }, { key: 'b' });
    const a2 = await system.publish('reindex', { doc: 'a', n: 2 }, { key: 'a' });
    const plain = await system.publish('reindex', { doc: 'none', n: 1 });
    expect(a2).toMatchObject({ jobId: a1.jobId, messageId: '', debounced: true });
    expect(b1.jobId).not.toBe(a1.jobId);
    expect(plain.debounced).toBeUndefined();
    await system.drain();
    expect(runs.map((r) => r.payload).sort((x, y) => x.doc.localeCompare(y.doc))).toEqual([
      { doc: 'a', n: 2 },
      { doc: 'b', n: 1 },
      { doc: 'none', n: 1 },
    ]);
  });

  it('is told apart by the CLI: a publish that joined says so, names the pending job and its due time', () => {
    const line = debouncedLine('reindex', 'doc 7', 'v3', { jobId: 'j-1', queue: 'urgent', runAt: Date.UTC(2026, 0, 5, 9, 0, 2) });
    expect(line).toBe(
      'debounced: job j-1 of reindex with key "doc 7" is pending on urgent (version v3) and runs with this payload unless a later publish joins, due 2026-01-05T09:00:02.000Z; nothing was sent',
    );
  });

  it('refuses an id, a delay or dependencies on a debounced keyed job, with nothing sent', async () => {
    const { options, runs } = reindex();
    const system = createTestSystem({ tasks: [defineTask(options)] });
    for (const extra of [{ id: 'mine' }, { delaySeconds: 5 }, { runAt: new Date(system.clock.now() + 60_000) }, { dependsOn: ['x'] }]) {
      await expect(system.publish('reindex', { doc: 'a', n: 1 }, { key: 'a', ...extra })).rejects.toBeInstanceOf(PublishOptionError);
    }
    await system.drain();
    expect(runs).toHaveLength(0);
  });

  it('refuses a payload kept whole above the cycle item’s bound (offload raised past it), naming its size', async () => {
    const { options } = reindex();
    const system = createTestSystem({
      tasks: [defineTask(options)],
      config: {
        app: 'test',
        queues: [{ name: 'urgent', priority: 1, visibilityTimeoutSeconds: 60 }],
        payloads: { offloadAboveBytes: 900_000 },
      },
    });
    const big = { doc: 'x'.repeat(MAX_DEBOUNCED_BODY_BYTES), n: 1 };
    await expect(system.publish('reindex', big, { key: 'a' })).rejects.toMatchObject({
      name: 'MessageTooLargeError',
      limit: MAX_DEBOUNCED_BODY_BYTES,
    });
    await expect(system.publish('reindex', big, { key: 'a' })).rejects.toBeInstanceOf(MessageTooLargeError);
  });

  it('keeps a large payload as its claim check’s pointer: the job runs with the last one, read from the bucket', async () => {
    const { options, runs } = reindex();
    const system = createTestSystem({ tasks: [defineTask(options)] });
    const first = await system.publish('reindex', { doc: 'y'.repeat(300_000), n: 1 }, { key: 'big' });
    const second = await system.publish('reindex', { doc: 'z'.repeat(300_000), n: 2 }, { key: 'big' });
    expect(second).toMatchObject({ jobId: first.jobId, debounced: true });
    await system.drain();
    expect(runs.map((r) => [r.payload.doc[0], r.payload.n])).toEqual([['z', 2]]);
  });
});

describe('a debounced job that fails', () => {
  it('is retried with the body its cycle closed with, though the next cycle has opened', async () => {
    const { options, runs, clockIs } = reindex();
    let publisher: Publisher | undefined;
    let next: Awaited<ReturnType<Publisher['publish']>> | undefined;
    const failingOnce: TaskOptions<Save> = {
      ...options,
      maxRetries: 2,
      backoff: { baseSeconds: 1, capSeconds: 1 },
      run: async (payload, ctx) => {
        (options.run as (p: Save, c: typeof ctx) => void)(payload, ctx);
        if (payload.n === 2 && !next) {
          // A save while the first attempt runs opens the next cycle; then the attempt fails.
          next = await publisher?.publish('reindex', { doc: 'f', n: 3 }, { key: 'f' });
          throw new Error('index unavailable');
        }
      },
    };
    const w = world([failingOnce as TaskOptions], {}, { tracked: true });
    clockIs(w.clock);
    publisher = publisherOf(w, { tasks: [toDefinition(failingOnce, 'reindex')] });
    const first = await publisher.publish('reindex', { doc: 'f', n: 1 }, { key: 'f' });
    await publisher.publish('reindex', { doc: 'f', n: 2 }, { key: 'f' });
    await w.run({ forMs: 30_000 });
    expect(next?.debounced).toBeUndefined();
    expect(runs.map((r) => [r.jobId, r.payload.n]).sort()).toEqual(
      [
        [first.jobId, 2],
        [first.jobId, 2],
        [next?.jobId, 3],
      ].sort(),
    );
    expect(await w.jobs.get(first.jobId)).toMatchObject({ state: 'succeeded', attempt: 2 });
  });
});

describe('closing a debounce cycle', () => {
  /** A world on the virtual clock with the task and a publisher over its jobs table. */
  function closing() {
    const { options, runs, clockIs } = reindex({ period: '2s', maxWait: '10s' });
    const w = world([options as TaskOptions], {}, { tracked: true });
    clockIs(w.clock);
    const publisher = publisherOf(w, { tasks: [toDefinition(options, 'reindex')] });
    const publish = (n: number) => publisher.publish('reindex', { doc: 'r', n }, { key: 'r' });
    const cycle = async () => {
      const read = await w.jobs.debounceCycle('reindex', 'r');
      if (!read) throw new Error('no open cycle');
      return read;
    };
    return { w, runs, publish, cycle };
  }

  it('a publish racing the close opens a new cycle: both payloads run once in all, none lost', async () => {
    const { w, runs, publish, cycle } = closing();
    const first = await publish(1);
    w.clock.advance(2_000);
    // A dispatcher reads the cycle, due; a publish joins before its close lands: the close is refused.
    const read = await cycle();
    const racing = await publish(2);
    expect(racing).toMatchObject({ jobId: first.jobId, debounced: true });
    expect(await w.jobs.keepDebouncedBody(read, w.clock.now())).toBe(true);
    expect(await w.jobs.closeDebounce('reindex', 'r', read)).toBe(false);
    // It reads again: the joined publish is the one run; a publish after the close opens the next cycle.
    await w.run({ forMs: 10_000 });
    const after = await publish(3);
    expect(after.debounced).toBeUndefined();
    expect(after.jobId).not.toBe(first.jobId);
    await w.run({ forMs: 10_000 });
    expect(runs.map((r) => r.payload.n)).toEqual([2, 3]);
    expect(await w.jobs.get(first.jobId)).toMatchObject({ state: 'succeeded', attempt: 1 });
    expect(await w.jobs.get(after.jobId)).toMatchObject({ state: 'succeeded', attempt: 1 });
  });

  it('a dispatcher lost between the close and the run loses nothing: the message comes back and runs the kept body once', async () => {
    const { w, runs, publish } = closing();
    const first = await publish(1);
    await publish(2);
    // The first close lands, a publish opens the next cycle, and the closing dispatcher is lost before it runs the job.
    const close = w.jobs.closeDebounce.bind(w.jobs);
    let next: Awaited<ReturnType<typeof publish>> | undefined;
    w.jobs.closeDebounce = async (...args) => {
      const closed = await close(...args);
      if (closed && !next) {
        next = await publish(3);
        throw new Error('dispatcher lost after the close');
      }
      return closed;
    };
    await w.run({ forMs: 30_000 });
    expect(next?.debounced).toBeUndefined();
    expect(next?.jobId).not.toBe(first.jobId);
    // The lost job's message came back after the new cycle's job had run: each payload once, the kept one for the first job.
    expect(runs.map((r) => [r.jobId, r.payload.n]).sort()).toEqual(
      [
        [first.jobId, 2],
        [next?.jobId, 3],
      ].sort(),
    );
    expect(await w.jobs.get(first.jobId)).toMatchObject({ state: 'succeeded', attempt: 1 });
  });
});

describe('a message from another SDK with the key of a debounced task', () => {
  /** A world with the task, and a publisher that knows only its name (its queue given), recording queued jobs or not. */
  function blind(recordQueued: boolean) {
    const { options, runs, clockIs } = reindex();
    const w = world([options as TaskOptions], {}, { tracked: true });
    clockIs(w.clock);
    const publisher = publisherOf(w, { recordQueued });
    const publish = (n: number) => publisher.publish('reindex', { doc: 'b', n }, { key: 'b', queue: 'urgent' });
    return { w, runs, publish };
  }

  it('sent by a publisher that knows only the task’s name is debounced by the dispatcher', async () => {
    const { w, runs, publish } = blind(false);
    await publish(1);
    await publish(2);
    await w.run({ forMs: 30_000 });
    expect(runs.map((r) => r.payload.n)).toEqual([2]);
  });

  it('recorded by such a publisher runs as any job, its record fixing its payload: none archived as a conflict', async () => {
    const { w, runs, publish } = blind(true);
    await publish(1);
    await publish(2);
    await w.run({ forMs: 30_000 });
    expect(runs.map((r) => r.payload.n).sort()).toEqual([1, 2]);
    expect(w.reports.flatMap((r) => r.jobs).filter((j) => j.outcome === 'archived')).toEqual([]);
  });

  it('counts as a publish at its arrival: the first opens a cycle and runs once due, a later one joins it with its payload', async () => {
    const { options, runs } = reindex({ period: '2s', maxWait: '10s' });
    const system = createTestSystem({ tasks: [defineTask(options)] });
    await system.send('urgent', JSON.stringify({ task: 'reindex', id: 'raw-1', key: 'k', payload: { doc: 'k', n: 1 } }));
    await system.send('urgent', JSON.stringify({ task: 'reindex', id: 'raw-2', key: 'k', payload: { doc: 'k', n: 2 } }));
    const drained = await system.drain();
    expect(runs.map((r) => r.payload.n)).toEqual([2]);
    expect(drained.duplicates).toBe(1);
    const records = [await system.job('raw-1'), await system.job('raw-2')];
    const ran = records.find((r) => r?.state === 'succeeded');
    expect(records.find((r) => r?.state === 'deduplicated')).toMatchObject({ duplicateOf: ran?.jobId, key: 'k', attempt: 0 });
  });
});
