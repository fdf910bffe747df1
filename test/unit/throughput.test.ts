import { renderThroughput } from '../../cli/render';
import { throughputOf } from '../../lib/adapters/cloudwatch';
import { VirtualClock } from '../../lib/clock';
import { MemoryStatsStore } from '../../lib/fakes/memory-stats-store';
import { StatsBuffer } from '../../lib/invocation/stats-buffer';
import type { OperatorContext } from '../../lib/operate/operator-context';
import { throughput } from '../../lib/operate/version-status';
import { lastMinutes, minuteKey, minutesOfBatch } from '../../lib/policy/throughput';
import { silentLogger } from '../../lib/ports';
import { encodeEnvelope } from '../../lib/wire/envelope';
import { appConfig } from '../helpers/factories';
import { world } from '../helpers/world';

const T0 = Date.UTC(2026, 10, 24, 10, 0, 30);

describe('jobs per minute', () => {
  it('counts a job as started in the minute it started and as succeeded or archived in the minute it settled', () => {
    const minutes = minutesOfBatch(
      {
        jobs: [
          { outcome: 'succeeded', runMs: 1_000 },
          { outcome: 'succeeded', runMs: 45_000 }, // started in the minute before
          { outcome: 'archived', runMs: 10 },
          { outcome: 'archived' }, // archived without running (malformed): not started
          { outcome: 'released' },
        ],
      },
      T0,
    );
    expect(Object.fromEntries(minutes)).toEqual({
      '2026-11-24T10:00': { started: 2, succeeded: 2, archived: 2 },
      '2026-11-24T09:59': { started: 1, succeeded: 0, archived: 0 },
    });
  });

  it('names the last N minutes oldest first, the current one last', () => {
    expect(lastMinutes(T0, 3)).toEqual(['2026-11-24T09:58', '2026-11-24T09:59', '2026-11-24T10:00']);
    expect(minuteKey(T0)).toBe('2026-11-24T10:00');
  });

  it('the stats buffer coalesces minute counters into one write per queue and minute per flush', async () => {
    const clock = new VirtualClock(T0);
    const store = new MemoryStatsStore();
    const buffer = new StatsBuffer(store, clock, silentLogger);
    for (let i = 0; i < 20; i++) await buffer.addMinute('fast', '2026-11-24T10:00', { started: 1, succeeded: 1, archived: 0 }, 99);
    await buffer.addMinute('slow', '2026-11-24T10:00', { started: 1, succeeded: 0, archived: 1 }, 99);
    expect(store.minuteWrites).toBe(0);
    await buffer.flush();
    expect(store.minuteWrites).toBe(2);
    expect(await store.minutes('fast', ['2026-11-24T10:00'])).toEqual({ '2026-11-24T10:00': { started: 20, succeeded: 20, archived: 0 } });
  });

  it('the operator reads the minute counters where there is no CloudWatch, a minute without jobs as zeros', async () => {
    const clock = new VirtualClock(T0);
    const stats = new MemoryStatsStore();
    await stats.addMinute('urgent', '2026-11-24T09:59', { started: 3, succeeded: 2, archived: 1 });
    const ctx = { config: appConfig(), version: 'v1', stats, clock } as unknown as OperatorContext;
    const t = await throughput(ctx, 3);
    expect(t.source).toBe('stats');
    expect(t.minutes).toEqual(['2026-11-24T09:58', '2026-11-24T09:59', '2026-11-24T10:00']);
    expect(t.queues.urgent).toEqual([
      { started: 0, succeeded: 0, archived: 0 },
      { started: 3, succeeded: 2, archived: 1 },
      { started: 0, succeeded: 0, archived: 0 },
    ]);
    expect(renderThroughput(t)).toMatch(/2026-11-24 09:59\s+urgent\s+3\s+2\s+1/);
    expect(renderThroughput({ ...t, queues: { urgent: [] } })).toBe(
      "no jobs in the last 3 min (UTC), from the stats table's minute counters",
    );
  });

  it('prefers CloudWatch where the context has it, asking by service, version, queues and minutes', async () => {
    const asked: unknown[] = [];
    const ctx = {
      config: appConfig(),
      version: 'v1',
      clock: new VirtualClock(T0),
      metricsThroughput: async (q: unknown) => {
        asked.push(q);
        return { urgent: [{ started: 1, succeeded: 1, archived: 0 }] };
      },
    } as unknown as OperatorContext;
    const t = await throughput(ctx, 1);
    expect(t).toEqual({
      source: 'cloudwatch',
      minutes: ['2026-11-24T10:00'],
      queues: { urgent: [{ started: 1, succeeded: 1, archived: 0 }] },
    });
    expect(asked).toEqual([
      { service: ctx.config.app, version: 'v1', queues: ctx.config.queues.map((q) => q.name), minutes: ['2026-11-24T10:00'] },
    ]);
  });

  it('falls back to the minute counters when CloudWatch refuses', async () => {
    const stats = new MemoryStatsStore();
    await stats.addMinute('urgent', '2026-11-24T10:00', { started: 1, succeeded: 0, archived: 0 });
    const ctx = {
      config: appConfig(),
      version: 'v1',
      stats,
      clock: new VirtualClock(T0),
      metricsThroughput: () => Promise.reject(new Error('AccessDenied')),
    } as unknown as OperatorContext;
    const t = await throughput(ctx, 1);
    expect(t.source).toBe('stats');
    expect(t.queues.urgent).toEqual([{ started: 1, succeeded: 0, archived: 0 }]);
  });

  it("reads GetMetricData's answer into minutes: RunTime samples are starts, the sums succeeded and archived", () => {
    const at = (m: string) => new Date(`${m}:00Z`);
    const out = throughputOf(
      ['a', 'b'],
      ['2026-11-24T09:59', '2026-11-24T10:00'],
      [
        { Id: 's0', Timestamps: [at('2026-11-24T10:00'), at('2026-11-24T09:59')], Values: [4, 2] },
        { Id: 'o0', Timestamps: [at('2026-11-24T10:00')], Values: [3] },
        { Id: 'a1', Timestamps: [at('2026-11-24T09:59'), at('2026-11-24T09:00')], Values: [1, 9] }, // outside the window: ignored
      ],
    );
    expect(out).toEqual({
      a: [
        { started: 2, succeeded: 0, archived: 0 },
        { started: 4, succeeded: 3, archived: 0 },
      ],
      b: [
        { started: 0, succeeded: 0, archived: 1 },
        { started: 0, succeeded: 0, archived: 0 },
      ],
    });
  });
});

describe('minute counters from a dispatcher (fakes)', () => {
  it('a settled invocation leaves its jobs in the minute counters, coalesced apart from the day writes', async () => {
    const w = world([{ name: 'ok', queue: 'urgent', timeLimitSeconds: 5, run: () => 'done' }], {}, { tracked: true });
    for (let i = 0; i < 25; i++) await w.send('urgent', encodeEnvelope({ task: 'ok', payload: {} }));
    await w.run();
    const ctx = { config: w.config, version: 'v1', stats: w.stats, clock: w.clock } as unknown as OperatorContext;
    const t = await throughput(ctx, 60);
    const sum = (k: 'started' | 'succeeded') => (t.queues.urgent ?? []).reduce((n, c) => n + c[k], 0);
    expect([sum('started'), sum('succeeded')]).toEqual([25, 25]);
    expect(w.stats.minuteWrites).toBeLessThanOrEqual(2); // one per minute the invocation touched
  });
});
