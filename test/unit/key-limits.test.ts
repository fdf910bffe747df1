import { Simulation } from '../../bench/sim/engine';
import { keyLineTag } from '../../lib/dispatch/key-lines';
import { TaskDefinitionError } from '../../lib/errors';
import { defineTask, type TaskOptions } from '../../lib/tasks/task';
import { createTestSystem } from '../../lib/testing/system';
import { encodeEnvelope } from '../../lib/wire/envelope';
import { world } from '../helpers/world';

/** What ran when, per key, on the simulation's clock: the most at once per key and in all, and each job's wait. */
function tenants() {
  const seen = {
    running: new Map<string, number>(),
    most: new Map<string, number>(),
    all: 0,
    mostAll: 0,
    starts: new Map<string, number>(),
  };
  const task = (clock: { now(): number; sleep(ms: number): Promise<void> }): TaskOptions => ({
    name: 'sync',
    queue: 'urgent',
    timeLimitSeconds: 5,
    limits: { concurrency: 2, per: 'key', total: { concurrency: 6 } },
    run: async (payload, ctx) => {
      const key = (payload as { tenant: string }).tenant;
      seen.starts.set(ctx.jobId, clock.now());
      seen.running.set(key, (seen.running.get(key) ?? 0) + 1);
      seen.most.set(key, Math.max(seen.most.get(key) ?? 0, seen.running.get(key) ?? 0));
      seen.all += 1;
      seen.mostAll = Math.max(seen.mostAll, seen.all);
      await clock.sleep(1_000);
      seen.running.set(key, (seen.running.get(key) ?? 0) - 1);
      seen.all -= 1;
    },
  });
  return { seen, task };
}

/** The 95th percentile of `values`. */
const p95 = (values: number[]) => [...values].sort((a, b) => a - b)[Math.ceil(values.length * 0.95) - 1] as number;

async function flood(aJobs: number) {
  const { seen, task } = tenants();
  const sim = new Simulation();
  const w = world(
    [task(sim)],
    { dispatcher: { concurrency: 8, timeoutSeconds: 900, settleMarginMs: 500, killGraceMs: 100 } },
    { tracked: true, simulation: sim },
  );
  const sent = new Map<string, number>();
  const publish = async (tenant: string, i: number) => {
    const id = `${tenant}-${i}`;
    sent.set(id, sim.now());
    await w.send('urgent', encodeEnvelope({ task: 'sync', id, key: tenant, payload: { tenant } }));
  };
  // The flood first, then four small tenants behind it in the same queue.
  for (let i = 0; i < aJobs; i++) await publish('A', i);
  for (const tenant of ['B', 'C', 'D', 'E']) for (let i = 0; i < 20; i++) await publish(tenant, i);
  // Ten simulated minutes: the last of the 380 starts about 184 s in. (An hour of idle polling after
  // it more than doubled the CPU this test takes, and on a loaded machine it ran past jest's 60 s.)
  await w.run({ forMs: 600_000 });
  const small = [...seen.starts].filter(([id]) => !id.startsWith('A-')).map(([id, at]) => at - (sent.get(id) as number));
  return { w, seen, small };
}

/** Task `apply`, one at a time per key, 200 ms a job on a simulation; `ran` lists the job ids in start order. */
function oneAtATime() {
  const ran: string[] = [];
  const sim = new Simulation();
  const w = world(
    [
      {
        name: 'apply',
        queue: 'urgent',
        timeLimitSeconds: 5,
        limits: { concurrency: 1, per: 'key' },
        run: async (_payload, ctx) => {
          ran.push(ctx.jobId);
          await sim.sleep(200);
        },
      },
    ],
    {},
    { tracked: true, simulation: sim },
  );
  return { sim, w, ran };
}

describe('limits per key (fakes, simulated time)', () => {
  it("holds 2 at once per key and 6 in all; a flooding key's jobs wait parked in its line, not in the queue, and the small keys wait as without the flood", async () => {
    const { w, seen, small } = await flood(300);
    const quiet = await flood(0);
    expect(seen.starts.size).toBe(380);
    for (const [key, most] of seen.most) expect({ key, most: most <= 2 }).toEqual({ key, most: true });
    expect(seen.mostAll).toBeLessThanOrEqual(6);
    // Every job ran once and used one attempt; the flood's were parked (waiting-key) and sent back.
    const a = await Promise.all(Array.from({ length: 300 }, (_, i) => w.jobs.get(`A-${i}`)));
    expect(a.every((r) => r?.state === 'succeeded' && r.attempt === 1)).toBe(true);
    const parkedOnce = a.filter((r) => r?.history.some((h) => h.what === 'waiting-key')).length;
    expect(parkedOnce).toBeGreaterThan(250);
    // Parked, not received again and again: a job is parked at most a few times.
    const parks = a.map((r) => r?.history.filter((h) => h.what === 'waiting-key').length ?? 0);
    expect(Math.max(...parks)).toBeLessThanOrEqual(2);
    // The line is left empty: every tag went as its job left it.
    expect(await w.jobs.oldestByTag(keyLineTag('sync', 'A'), 10)).toEqual([]);
    // B–E's p95 wait is within 2× what it is with no flood at all.
    expect(quiet.small).toHaveLength(80);
    expect(p95(small)).toBeLessThanOrEqual(2 * p95(quiet.small));
  });

  it('runs a line oldest publish first', async () => {
    const { w, ran } = oneAtATime();
    for (let i = 0; i < 30; i++) {
      await w.send('urgent', encodeEnvelope({ task: 'apply', id: `o${i}`, key: 'acct-1', payload: {}, publishedAt: 1_000 + i }));
    }
    // Ten simulated minutes: the last of the 380 starts about 184 s in. (An hour of idle polling after
    // it more than doubled the CPU this test takes, and on a loaded machine it ran past jest's 60 s.)
    await w.run({ forMs: 600_000 });
    const order = ran.map((id) => Number(id.slice(1)));
    expect(order).toHaveLength(30);
    // The first batch runs its first; the line's watch (handed back to its queue, not parked) runs
    // when it comes back; every job parked leaves the line in publish order.
    const watches = new Set(
      w.reports
        .flatMap((r) => r.jobs)
        .filter((j) => j.limited)
        .map((j) => Number(j.jobId?.slice(1))),
    );
    expect(watches.size).toBeGreaterThan(0);
    expect(watches.size).toBeLessThan(5);
    const lined = order.slice(1).filter((i) => !watches.has(i));
    expect(lined).toEqual([...lined].sort((x, y) => x - y));
  });

  it("moves a line whose slots' holder died (no release, no wake): the line's watch comes back when their lease ends", async () => {
    const { sim, w, ran } = oneAtATime();
    // The first batch's holder dies after its task: its release (and the wake after it) never happens.
    const release = w.limits.release.bind(w.limits);
    let calls = 0;
    w.limits.release = async (key, holder, now) => {
      if (calls++ === 0) throw new Error('the process died');
      return release(key, holder, now);
    };
    // A line counted 50 deep already (a busy key): by their place alone its jobs would be back minutes later.
    await w.limits.parked('key:apply:acct-1', 50);
    const from = sim.now();
    for (let i = 0; i < 5; i++) await w.send('urgent', encodeEnvelope({ task: 'apply', id: `d${i}`, key: 'acct-1', payload: { i } }));
    await w.run({ forMs: 60_000 });
    // The watch (one job, handed back to its queue for one turn: a time limit and the settle margin)
    // found the dead holder's slot lapsed, ran, and its end moved the line: all ran within the minute.
    expect([...ran].sort()).toEqual(['d0', 'd1', 'd2', 'd3', 'd4']);
    const watched = w.reports.flatMap((r) => r.jobs).filter((j) => j.limited);
    expect(watched.length).toBeGreaterThan(0);
    expect(sim.now() - from).toBeLessThanOrEqual(60_000);
  });

  it('refuses a per-key limit where it cannot hold, naming the field', () => {
    const base = { name: 't', queue: 'q', timeLimitSeconds: 1, run: () => {} };
    expect(() => defineTask({ ...base, limits: { per: 'tenant' as 'key', concurrency: 2 } })).toThrow(
      /limits\.per = "tenant": expected 'key'/,
    );
    expect(() => defineTask({ ...base, limits: { per: 'key' } })).toThrow(/concurrency or perSecond beside per/);
    expect(() => defineTask({ ...base, limits: { concurrency: 2, total: { concurrency: 5 } } })).toThrow(
      /limits\.total .*no total without per/,
    );
    expect(() => defineTask({ ...base, limits: { concurrency: 2, per: 'key', total: { concurrency: 0 } } })).toThrow(
      /limits\.total\.concurrency = 0/,
    );
    expect(() => defineTask({ ...base, limits: { concurrency: 2, per: 'key', total: { per: 'key' } as never } })).toThrow(
      TaskDefinitionError,
    );
    expect(() => defineTask({ ...base, limits: { concurency: 2 } as never })).toThrow(/limits\.concurency/);
    const onLight = defineTask({ ...base, limits: { concurrency: 2, per: 'key' } });
    expect(() =>
      createTestSystem({ tasks: [onLight], config: { app: 'a', queues: [{ name: 'q', priority: 1, tracking: 'failures' }] } }),
    ).toThrow(/limits\.per .*tracked 'full'/);
  });

  it('taskworker/testing holds a per-key limit too', async () => {
    const running = new Map<string, number>();
    let most = 0;
    const task = defineTask({
      name: 'export',
      queue: 'default',
      timeLimitSeconds: 10,
      limits: { concurrency: 1, per: 'key' },
      async run(payload: { account: string }) {
        running.set(payload.account, (running.get(payload.account) ?? 0) + 1);
        most = Math.max(most, running.get(payload.account) ?? 0);
        // Yields a few microtask turns (no time passes): the batch's other jobs start meanwhile.
        for (let turn = 0; turn < 50; turn++) await Promise.resolve();
        running.set(payload.account, (running.get(payload.account) ?? 0) - 1);
      },
    });
    const system = createTestSystem({ tasks: [task] });
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) ids.push((await system.publish(task, { account: `a${i % 3}` }, { key: `a${i % 3}` })).jobId);
    await system.drain();
    expect(most).toBe(1);
    for (const id of ids) expect((await system.job(id))?.state).toBe('succeeded');
  });
});
