import { resolveConfig } from '../../lib/config/app-config';
import { BatchResultError } from '../../lib/errors';
import { createRegistry } from '../../lib/tasks/registry';
import { defineTask } from '../../lib/tasks/task';
import { createTestSystem, runTask } from '../../lib/testing';

interface Row {
  readonly accountId: string;
  readonly n: number;
}

/** A warehouse writer: one call per batch; rows whose `n` is in `failOnce` fail their first attempt only. */
function warehouse(failOnce: ReadonlySet<number>) {
  const calls: Array<{ key: string | undefined; ns: number[] }> = [];
  const applied = new Map<number, number>();
  const attempts = new Map<number, number>();
  const task = defineTask<Row, number>({
    name: 'load-rows',
    queue: 'default',
    timeLimitSeconds: 30,
    maxRetries: 2,
    backoff: { baseSeconds: 1, capSeconds: 1 },
    batch: { maxSize: 100, maxWaitMs: 2000, key: 'accountId' },
    runBatch(items, ctx) {
      calls.push({ key: ctx.key, ns: items.map((i) => i.payload.n) });
      return items.map((item) => {
        const { n } = item.payload;
        const tries = (attempts.get(n) ?? 0) + 1;
        attempts.set(n, tries);
        if (failOnce.has(n) && tries === 1) return new Error(`row ${n} rejected`);
        applied.set(n, (applied.get(n) ?? 0) + 1);
        return n * 2;
      });
    },
  });
  return { task, calls, applied, attempts };
}

describe('batch tasks (batch, runBatch)', () => {
  it('runs 1,050 jobs over 3 accounts in calls of one account and at most 100, each item once; 7 failing items retried alone', async () => {
    const failing = new Set([3, 140, 141, 500, 777, 901, 1049]);
    const w = warehouse(failing);
    const system = createTestSystem({ tasks: [w.task] });
    const ids: string[] = [];
    for (let n = 0; n < 1050; n += 1) {
      const { jobId } = await system.publish(w.task, { accountId: `acct-${n % 3}`, n });
      ids.push(jobId);
    }
    const drained = await system.drain();
    expect(drained.succeeded).toBe(1050);
    for (const call of w.calls) {
      expect(call.ns.length).toBeLessThanOrEqual(100);
      expect(new Set(call.ns.map((n) => `acct-${n % 3}`))).toEqual(new Set([call.key]));
    }
    // Each item applied once; the failing ones ran twice, the others once.
    expect([...w.applied.values()].every((c) => c === 1)).toBe(true);
    expect(w.applied.size).toBe(1050);
    for (const [n, tries] of w.attempts) expect(tries).toBe(failing.has(n) ? 2 : 1);
    // The retries ran as calls of the failed items only.
    const retryCalls = w.calls.filter((c) =>
      c.ns.some((n) => failing.has(n) && w.calls.indexOf(c) > w.calls.findIndex((d) => d.ns.includes(n))),
    );
    expect(retryCalls.flatMap((c) => c.ns).sort((a, b) => a - b)).toEqual([...failing].sort((a, b) => a - b));
    if (process.env.SHOW_CALLS) console.log(w.calls.map((c) => c.ns.length).join(' '));
    expect(w.calls.length).toBeLessThan(1050 / 10);
    const record = await system.job(ids[140] as string);
    expect(record).toMatchObject({ state: 'succeeded', attempt: 2 });
    expect(JSON.parse(record?.result ?? 'null')).toBe(280);
    const stats = await system.stats('default');
    expect(stats?.counters.batched).toBe(1057);
    expect(stats?.counters.batches).toBe(w.calls.length);
  });

  it('ends every item of a call stopped by its time limit timed out; each retries and succeeds in a later call', async () => {
    let calls = 0;
    const sizes: number[] = [];
    const task = defineTask<{ n: number }, number>({
      name: 'stuck-once',
      queue: 'default',
      timeLimitSeconds: 1,
      backoff: { baseSeconds: 0, capSeconds: 0 },
      batch: { maxSize: 10, maxWaitMs: 100 },
      async runBatch(items) {
        calls += 1;
        sizes.push(items.length);
        // The first call ignores its signal: it is given up at the limit (and the kill grace).
        if (calls === 1) await new Promise((resolve) => setTimeout(resolve, 5_000).unref());
        return items.map((i) => i.payload.n);
      },
    });
    const system = createTestSystem({
      tasks: [task],
      config: { app: 't', queues: [{ name: 'default', priority: 1, visibilityTimeoutSeconds: 30 }], dispatcher: { killGraceMs: 100 } },
    });
    const ids = [];
    for (let n = 0; n < 5; n += 1) ids.push((await system.publish(task, { n })).jobId);
    const drained = await system.drain();
    expect(drained.succeeded).toBe(5);
    expect(sizes).toEqual([5, 5]);
    for (const id of ids) {
      const record = await system.job(id);
      expect(record).toMatchObject({ state: 'succeeded', attempt: 2 });
    }
    const timedOut = system.reports.flatMap((r) => r.jobs).filter((j) => j.timedOut);
    expect(timedOut.map((j) => j.jobId).sort()).toEqual([...ids].sort());
    expect(timedOut.every((j) => j.outcome === 'retried' && j.error?.type === 'TimeLimitExceededError')).toBe(true);
  });

  it('refuses a batch rule it cannot honour, naming the field', () => {
    const base = { name: 'b', queue: 'default', timeLimitSeconds: 5, runBatch: () => undefined };
    expect(() => defineTask({ ...base, batch: { maxSize: 0 } })).toThrow(/batch\.maxSize = 0/);
    expect(() => defineTask({ ...base, batch: { maxSize: 1001 } })).toThrow(/batch\.maxSize = 1001/);
    expect(() => defineTask({ ...base, batch: { maxSize: 10, maxWaitMs: 60_001 } })).toThrow(/batch\.maxWaitMs = 60001/);
    expect(() => defineTask({ ...base, batch: { maxSize: 10, key: 'a..b' } })).toThrow(/batch\.key = "a\.\.b"/);
    expect(() => defineTask({ name: 'b', queue: 'default', timeLimitSeconds: 5, batch: { maxSize: 10 } })).toThrow(/runBatch = undefined/);
    expect(() => defineTask({ ...base, batch: { maxSize: 10 }, run: () => 1 })).toThrow(/no run on a batch task/);
  });

  it('runs one job alone with runTask, and fails a call whose results do not match its items', async () => {
    const ok = defineTask<{ n: number }, number>({
      name: 'double',
      queue: 'default',
      timeLimitSeconds: 5,
      batch: { maxSize: 10 },
      runBatch: (items) => items.map((i) => (i.payload.n < 0 ? new RangeError('negative') : i.payload.n * 2)),
    });
    expect(await runTask(ok, { n: 4 })).toMatchObject({ status: 'succeeded', result: 8 });
    expect(await runTask(ok, { n: -1 })).toMatchObject({ status: 'failed', verdict: { kind: 'retry' } });
    const short = defineTask({ name: 'short', queue: 'default', timeLimitSeconds: 5, batch: { maxSize: 10 }, runBatch: () => [] });
    const run = await runTask(short, {});
    expect(run.error).toBeInstanceOf(BatchResultError);
    expect(String((run.error as Error).message)).toMatch(/returned 0 results for 1 items/);
  });
});

describe('a batch task in an app', () => {
  it('refuses at start a wait that with the call cannot fit an invocation, naming batch.maxWaitMs', () => {
    const slowBatch = (maxWaitMs: number) =>
      defineTask({
        name: 'slow-batch',
        queue: 'default',
        timeLimitSeconds: 50,
        batch: { maxSize: 10, maxWaitMs },
        runBatch: () => undefined,
      });
    const config = (timeoutSeconds: number) =>
      resolveConfig({
        app: 'a',
        queues: [{ name: 'default', priority: 1, visibilityTimeoutSeconds: 100 }],
        dispatcher: { timeoutSeconds },
      });
    expect(() => createRegistry([slowBatch(20_000)], config(60))).toThrow(
      /batch\.maxWaitMs = 20000: expected a wait that with timeLimitSeconds 50/,
    );
    expect(() => createRegistry([slowBatch(20_000)], config(120))).not.toThrow();
  });
});
