import { BatchResultError } from '../../lib/errors';
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
