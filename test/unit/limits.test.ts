import { Simulation } from '../../bench/sim/engine';
import { ConfigError, TaskDefinitionError } from '../../lib/errors';
import { utcDay } from '../../lib/policy/stat-sums';
import { defineTask, type TaskOptions } from '../../lib/tasks/task';
import { attemptsUsed, type JobRecord } from '../../lib/track/job-record';
import { encodeEnvelope } from '../../lib/wire/envelope';
import { appConfig } from '../helpers/factories';
import { world } from '../helpers/world';

/** A task that notes how many of its kind run at once (on the world's virtual clock) and when each started. */
function watched(name: string, limits: TaskOptions['limits'], runMs = 500) {
  const seen = { running: 0, most: 0, starts: [] as number[] };
  const task = (clock: { now(): number; sleep(ms: number): Promise<void> }): TaskOptions => ({
    name,
    queue: 'urgent',
    timeLimitSeconds: 5,
    ...(limits ? { limits } : {}),
    run: async () => {
      seen.running += 1;
      seen.most = Math.max(seen.most, seen.running);
      seen.starts.push(clock.now());
      await clock.sleep(runMs);
      seen.running -= 1;
    },
  });
  return { seen, task };
}

describe('fleet-wide limits (fakes)', () => {
  it('never runs more of a task at once than its concurrency limit; the rest wait without using an attempt', async () => {
    const { seen, task } = watched('slow', { concurrency: 2 });
    let clock: { now(): number; sleep(ms: number): Promise<void> } = { now: () => 0, sleep: async () => {} };
    const w = world([task({ now: () => clock.now(), sleep: (ms) => clock.sleep(ms) })], {}, { tracked: true });
    clock = w.clock;
    for (let i = 0; i < 12; i++) await w.send('urgent', encodeEnvelope({ task: 'slow', id: `s${i}`, payload: { i } }));
    await w.run({ forMs: 600_000 });
    expect(seen.starts).toHaveLength(12);
    expect(seen.most).toBe(2);
    const jobs = w.reports.flatMap((r) => r.jobs);
    const deferred = jobs.filter((j) => j.limited);
    expect(deferred.length).toBeGreaterThan(0);
    for (let i = 0; i < 12; i++) expect((await w.jobs.get(`s${i}`))?.attempt).toBe(1);
    expect((await w.stats.get('urgent', utcDay(w.clock.now())))?.counters.deferred).toBe(deferred.length);
  });

  it('does not start a job whose concurrency slot would lapse before its time limit ends (a claim that took long): released, no attempt used, run later', async () => {
    const { seen, task } = watched('slow', { concurrency: 2 });
    let clock: { now(): number; sleep(ms: number): Promise<void> } = { now: () => 0, sleep: async () => {} };
    const w = world([task({ now: () => clock.now(), sleep: (ms) => clock.sleep(ms) })], {}, { tracked: true });
    clock = w.clock;
    // The first claim lands 5 s after it was asked (a loaded machine): the slot was held for the
    // 5 s time limit and the kill grace from the admission, so the job could outrun it.
    const claim = w.jobs.claim.bind(w.jobs);
    let slowClaims = 1;
    w.jobs.claim = async (request) => {
      const claimed = await claim(request);
      if (slowClaims-- > 0) w.clock.advance(5_000);
      return claimed;
    };
    await w.send('urgent', encodeEnvelope({ task: 'slow', id: 'late', payload: {} }));
    await w.run({ forMs: 60_000 });
    const reports = w.reports.flatMap((r) => r.jobs).filter((j) => j.jobId === 'late');
    expect(reports.map((j) => j.outcome)).toEqual(['released', 'succeeded']);
    expect(seen.starts).toHaveLength(1);
    const record = await w.jobs.get('late');
    expect(record?.state).toBe('succeeded');
    expect(attemptsUsed(record as JobRecord)).toBe(1);
  });

  it('starts no more than the rate allows in any second (burst included), at the rate, each job deferred a few times at most', async () => {
    const { seen, task } = watched('api-call', { perSecond: 2, burst: 1 }, 10);
    // A discrete-event clock: jobs waiting for their booked tokens side by side wake in time order.
    const sim = new Simulation();
    const w = world([task(sim)], {}, { tracked: true, simulation: sim });
    for (let i = 0; i < 40; i++) await w.send('urgent', encodeEnvelope({ task: 'api-call', id: `r${i}`, payload: { i } }));
    await w.run({ forMs: 600_000 });
    expect(seen.starts).toHaveLength(40);
    for (const start of seen.starts) {
      const inWindow = seen.starts.filter((t) => t >= start && t < start + 1000).length;
      expect(inWindow).toBeLessThanOrEqual(2 + 1);
    }
    // At the rate, not below it: 40 starts at 2 a second (the first one in the bucket) take 19.5 s;
    // a batch taking only what the bucket held started one job per receive.
    const span = (seen.starts.at(-1) as number) - (seen.starts[0] as number);
    expect(span).toBeGreaterThanOrEqual(19_500);
    expect(span).toBeLessThan(19_500 * 1.25);
    // A waiting job comes back at its turn in the line, not every second or two: deferred at most
    // twice (once each before the line; 13 times for the last of them before).
    const deferrals = new Map<string | undefined, number>();
    for (const j of w.reports.flatMap((r) => r.jobs)) if (j.limited) deferrals.set(j.jobId, (deferrals.get(j.jobId) ?? 0) + 1);
    expect(deferrals.size).toBeGreaterThan(30);
    expect(Math.max(...deferrals.values())).toBeLessThanOrEqual(2);
    for (let i = 0; i < 40; i++) expect((await w.jobs.get(`r${i}`))?.attempt).toBe(1);
  });

  it('limits a whole queue too, and names a bad limit', async () => {
    const { seen, task } = watched('q-task', undefined);
    let clock: { now(): number; sleep(ms: number): Promise<void> } = { now: () => 0, sleep: async () => {} };
    const w = world(
      [task({ now: () => clock.now(), sleep: (ms) => clock.sleep(ms) })],
      { queues: [{ name: 'urgent', priority: 90, visibilityTimeoutSeconds: 30, limits: { concurrency: 1 } }] },
      { tracked: true },
    );
    clock = w.clock;
    for (let i = 0; i < 5; i++) await w.send('urgent', encodeEnvelope({ task: 'q-task', id: `q${i}`, payload: { i } }));
    await w.run({ forMs: 600_000 });
    expect(seen.starts).toHaveLength(5);
    expect(seen.most).toBe(1);
    expect(() => appConfig({ queues: [{ name: 'urgent', priority: 1, limits: { concurrency: 0 } }] })).toThrow(ConfigError);
    expect(() => appConfig({ queues: [{ name: 'urgent', priority: 1, limits: { concurrency: 0 } }] })).toThrow(
      /queues\[0\]\.limits\.concurrency = 0: expected an integer 1\.\.100000/,
    );
    expect(() => defineTask({ name: 't', queue: 'urgent', timeLimitSeconds: 1, run: () => {}, limits: { burst: 3 } })).toThrow(
      TaskDefinitionError,
    );
  });
});
