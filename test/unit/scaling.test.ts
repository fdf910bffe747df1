import { resolveConfig } from '../../lib/config/app-config';
import { runDispatcher } from '../../lib/dispatch/loop';
import { ConfigError } from '../../lib/errors';
import { MemoryLimitStore } from '../../lib/fakes/memory-limits';
import {
  doorbellsStepAside,
  type FleetCount,
  fleetCount,
  IDLE_EXIT_MS,
  idleExit,
  invocationDeadline,
  invocationRole,
  planScaleOut,
  SCALE_OUT_LIFETIME_MS,
  SCALE_OUT_SOURCE,
  SCHEDULE_PERIOD_MS,
  type ScaleOutEvent,
  scaleOut,
  scalePolicyOf,
  TRICKLE_IDLE_EXIT_MS,
} from '../../lib/invocation/scaling';
import type { DispatcherLauncher } from '../../lib/ports';
import { type Logger, silentLogger } from '../../lib/ports';
import { encodeEnvelope } from '../../lib/wire/envelope';
import { world } from '../helpers/world';

const policy = { maxConcurrency: 20, backlogPerDispatcher: 100, scheduled: 5 };
const backlog = (visible: number, inFlight = 0) => [{ queue: 'default', visible, inFlight }];

describe('planScaleOut (pure policy)', () => {
  it('starts nothing while the scheduled dispatchers cover the work', () => {
    expect(planScaleOut(backlog(0, 0), policy).start).toBe(0);
    expect(planScaleOut(backlog(300, 50), policy)).toMatchObject({ desired: 4, running: 5, start: 0 });
  });

  it('starts enough dispatchers for the work, waiting and in flight, beyond the scheduled ones', () => {
    // 2,500 waiting + 40 in flight → 26 wanted, capped at 19 (one slot kept for the next scheduled start).
    expect(planScaleOut(backlog(2500, 40), policy)).toMatchObject({ waiting: 2500, inFlight: 40, desired: 19, running: 5, start: 14 });
    expect(planScaleOut(backlog(900, 0), policy)).toMatchObject({ desired: 9, start: 4 });
  });

  it('names the queues with messages waiting, for the invocation to look at first', () => {
    const backlogs = [
      { queue: 'high', visible: 0, inFlight: 3 },
      { queue: 'default', visible: 2, inFlight: 0 },
      { queue: 'low', visible: 1, inFlight: 0 },
    ];
    expect(planScaleOut(backlogs, policy).waitingIn).toEqual(['default', 'low']);
    expect(planScaleOut(backlog(0, 4), policy).waitingIn).toEqual([]);
  });

  it('turns off the doorbells of the queues a backlog holds and of those below it; those that outrank it keep watch', () => {
    const queues = [
      { name: 'high', priority: 100 },
      { name: 'default', priority: 40 },
      { name: 'low', priority: 5 },
    ];
    const slotted = { ...policy, slots: 10 };
    const plan = (visible: Record<string, number>) =>
      planScaleOut(
        queues.map((q) => ({ queue: q.name, visible: visible[q.name] ?? 0, inFlight: 0 })),
        slotted,
      );
    expect(doorbellsStepAside(plan({ low: 60 }), queues)).toEqual(['low']);
    expect(doorbellsStepAside(plan({ default: 30, low: 60 }), queues)).toEqual(['default', 'low']);
    expect(doorbellsStepAside(plan({ high: 500 }), queues)).toEqual(['high', 'default', 'low']);
    // A trickle, or nothing waiting: every doorbell keeps watch.
    expect(doorbellsStepAside(plan({ low: 3 }), queues)).toEqual([]);
    expect(doorbellsStepAside(plan({}), queues)).toEqual([]);
  });

  it('calls work that fits one dispatcher’s slots a trickle, which ends after one long poll without work', () => {
    const slotted = { ...policy, slots: 10 };
    expect(planScaleOut(backlog(4, 6), slotted).trickle).toBe(true);
    expect(planScaleOut(backlog(4, 7), slotted).trickle).toBe(false);
    expect(planScaleOut(backlog(0, 3), slotted).trickle).toBe(false);
    expect(planScaleOut(backlog(1, 0), policy).trickle).toBe(false);
    expect(idleExit('scheduled', 1000, { trickle: true })).toEqual({ afterMs: TRICKLE_IDLE_EXIT_MS, notBefore: 1000 });
    expect(idleExit('scheduled', 1000, { trickle: false })).toEqual({ afterMs: IDLE_EXIT_MS, notBefore: 1000 });
  });

  it('starts fewer as the backlog drains, and none once nothing waits', () => {
    const starts = [5000, 2000, 800, 400, 0].map((visible) => planScaleOut(backlog(visible, 100), policy).start);
    expect(starts).toEqual([14, 14, 4, 0, 0]);
  });

  it('never plans past the maximum concurrency less one, however large the backlog', () => {
    for (const visible of [10_000, 1_000_000]) {
      const d = planScaleOut(backlog(visible), policy);
      expect(d.running + d.start).toBe(policy.maxConcurrency - 1);
    }
    expect(planScaleOut(backlog(10_000), { ...policy, maxConcurrency: 6 }).start).toBe(0);
  });

  it('sums every queue, and reads nothing into negative depths', () => {
    const d = planScaleOut(
      [
        { queue: 'a', visible: 400, inFlight: 10 },
        { queue: 'b', visible: 300, inFlight: -5 },
      ],
      policy,
    );
    expect(d).toMatchObject({ waiting: 700, inFlight: 10, desired: 8, start: 3 });
  });

  it('takes its policy from the config', () => {
    const config = resolveConfig({ app: 'x', queues: [{ name: 'q', priority: 1 }], dispatcher: { timeoutSeconds: 300, concurrency: 8 } });
    expect(scalePolicyOf(config)).toEqual({ maxConcurrency: 12, backlogPerDispatcher: 80, scheduled: 5, slots: 8 });
  });
});

describe('invocation roles and scaling in', () => {
  it('tells scheduled, scaled-out and other invocations apart by the event source', () => {
    expect(invocationRole({ source: 'taskworker.schedule' })).toBe('scheduled');
    expect(invocationRole({ source: SCALE_OUT_SOURCE })).toBe('scale-out');
    expect(invocationRole({ source: 'taskworker.local' })).toBe('plain');
    expect(invocationRole(undefined)).toBe('plain');
    expect(invocationRole('taskworker.schedule')).toBe('plain');
  });

  it('lets scheduled and scaled-out invocations end once idle, plain ones never', () => {
    expect(idleExit('scale-out', 1000)).toEqual({ afterMs: IDLE_EXIT_MS, notBefore: 1000 });
    // Nothing waits for work in an idle version: the doorbells and the next schedule start one.
    expect(idleExit('scheduled', 1000)).toEqual({ afterMs: IDLE_EXIT_MS, notBefore: 1000 });
    expect(idleExit('plain', 1000)).toBeUndefined();
  });

  it('ends a scaled-out invocation before the next scheduled decision, so each decision sizes a fresh generation', () => {
    expect(invocationDeadline('scale-out', 0, 300_000)).toBe(SCALE_OUT_LIFETIME_MS);
    expect(SCALE_OUT_LIFETIME_MS).toBeLessThan(SCHEDULE_PERIOD_MS);
    expect(invocationDeadline('scale-out', 0, 30_000)).toBe(30_000);
    expect(invocationDeadline('scheduled', 0, 300_000)).toBe(300_000);
    expect(invocationDeadline('plain', 0, 300_000)).toBe(300_000);
  });
});

describe('dispatcher config for scaling', () => {
  const base = { app: 'x', queues: [{ name: 'q', priority: 1 }] };

  it('defaults the maximum concurrency to twice the scheduled overlap plus one, and the backlog per dispatcher to ten batches of slots', () => {
    expect(resolveConfig(base).dispatcher).toMatchObject({ maxConcurrency: 12, backlogPerDispatcher: 100 });
    expect(resolveConfig({ ...base, dispatcher: { timeoutSeconds: 900, concurrency: 4 } }).dispatcher).toMatchObject({
      maxConcurrency: 32,
      backlogPerDispatcher: 40,
    });
  });

  it.each([
    ['dispatcher.maxConcurrency', { timeoutSeconds: 300, maxConcurrency: 5 }, 5, /an integer 6\.\.1000 \(5 scheduled dispatchers overlap/],
    ['dispatcher.maxConcurrency', { maxConcurrency: 1001 }, 1001, /6\.\.1000/],
    ['dispatcher.maxConcurrency', { maxConcurrency: 'many' }, 'many', /an integer/],
    ['dispatcher.backlogPerDispatcher', { backlogPerDispatcher: 0 }, 0, /1\.\.1000000/],
  ])('names %s when it is invalid', (field, dispatcher, value, expected) => {
    let error: unknown;
    try {
      resolveConfig({ ...base, dispatcher });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect(error).toMatchObject({ field, value });
    expect((error as Error).message).toMatch(expected);
    expect((error as Error).message).toContain(field);
  });
});

describe('scaleOut (the scheduled invocation’s first step)', () => {
  function setup(waiting: number, launch: DispatcherLauncher['launch'] = async (n) => n) {
    const w = world([{ name: 'ok', queue: 'urgent', timeLimitSeconds: 5, run: () => undefined }], {
      dispatcher: {
        concurrency: 4,
        timeoutSeconds: 120,
        settleMarginMs: 500,
        killGraceMs: 100,
        maxConcurrency: 10,
        backlogPerDispatcher: 20,
      },
    });
    const launches: Array<{ count: number; event: ScaleOutEvent }> = [];
    const logged: string[] = [];
    const logger: Logger = { ...silentLogger, info: (m) => logged.push(m), warn: (m) => logged.push(m) };
    const launcher: DispatcherLauncher = {
      launch: async (count, event) => {
        launches.push({ count, event: event as ScaleOutEvent });
        return launch(count, event);
      },
    };
    return { w, launches, logged, deps: { config: w.config, queues: w.queues, urls: w.urls, launcher, logger }, waiting };
  }

  it('reads each queue’s depth once and starts the dispatchers the backlog needs, tagged so they never fan out', async () => {
    const s = setup(150);
    for (let i = 0; i < 150; i++) await s.w.send('urgent', encodeEnvelope({ task: 'ok' }));
    const requestsBefore = s.w.sqs.requests.depth;
    const decision = await scaleOut(s.deps);
    expect(s.w.sqs.requests.depth - requestsBefore).toBe(s.w.config.queues.length);
    // 150 waiting / 20 per dispatcher → 8; two scheduled may run (timeout 120 s): start 6.
    expect(decision).toMatchObject({ waiting: 150, desired: 8, running: 2, start: 6 });
    expect(s.launches).toHaveLength(1);
    expect(s.launches[0]?.count).toBe(6);
    expect(s.launches[0]?.event.source).toBe(SCALE_OUT_SOURCE);
    expect(invocationRole(s.launches[0]?.event)).toBe('scale-out');
  });

  it('starts nothing when the queues are empty', async () => {
    const s = setup(0);
    expect(await scaleOut(s.deps)).toMatchObject({ start: 0 });
    expect(s.launches).toEqual([]);
  });

  it('counts the invocations actually working (the fleet count) instead of every scheduled one that may run', async () => {
    const s = setup(150);
    for (let i = 0; i < 150; i++) await s.w.send('urgent', encodeEnvelope({ task: 'ok' }));
    const limits = new MemoryLimitStore();
    const count = fleetCount(limits);
    // Of the two scheduled invocations that may run, none is working: a cold start.
    expect(await scaleOut({ ...s.deps, fleet: { count, now: 1000 } })).toMatchObject({ desired: 8, running: 1, start: 7 });
    // One earlier scheduled invocation is working, and a scaled-out one whose lease ended (it died) is not counted.
    await count.join('scheduled-a', 0, 120_000);
    await count.join('scale-out-dead', 0, 55_000);
    expect(await scaleOut({ ...s.deps, fleet: { count, now: 60_000 } })).toMatchObject({ running: 2, start: 6 });
    await count.leave('scheduled-a', 61_000);
    expect(await count.running(61_000)).toBe(0);
  });

  it('reads no fleet count when nothing waits, and falls back to the scheduled overlap when the count fails', async () => {
    const s = setup(0);
    let reads = 0;
    const count: FleetCount = {
      join: async () => {},
      leave: async () => {},
      running: async () => {
        reads += 1;
        throw new Error('ProvisionedThroughputExceededException');
      },
    };
    expect(await scaleOut({ ...s.deps, fleet: { count, now: 0 } })).toMatchObject({ waiting: 0, start: 0 });
    expect(reads).toBe(0);
    for (let i = 0; i < 150; i++) await s.w.send('urgent', encodeEnvelope({ task: 'ok' }));
    expect(await scaleOut({ ...s.deps, fleet: { count, now: 0 } })).toMatchObject({ running: 2, start: 6 });
    expect(reads).toBe(1);
    expect(s.logged).toContain('could not count the working dispatchers; counting every scheduled one as running');
  });

  it('never fails the invocation: a launch that throws is logged', async () => {
    const s = setup(150, async () => {
      throw new Error('TooManyRequestsException');
    });
    for (let i = 0; i < 150; i++) await s.w.send('urgent', encodeEnvelope({ task: 'ok' }));
    await expect(scaleOut(s.deps)).resolves.toMatchObject({ start: 6 });
    expect(s.logged).toContain('could not start dispatchers; the backlog waits for the next minute');
  });
});

describe('dispatcher loop: scaling in', () => {
  const ok = { name: 'ok', queue: 'urgent', timeLimitSeconds: 5, run: () => undefined };

  it('ends an invocation that has found no work for the idle time, not before `notBefore`', async () => {
    const w = world([ok]);
    const start = w.clock.now();
    await runDispatcher(w.deps, { deadline: start + 300_000, idleExit: { afterMs: 20_000, notBefore: start + 60_000 } });
    const ended = w.clock.now() - start;
    expect(ended).toBeGreaterThanOrEqual(60_000);
    expect(ended).toBeLessThan(90_000);
  });

  it('keeps going while work keeps coming, and works everything before it ends', async () => {
    const w = world([
      {
        ...ok,
        run: async () => {
          // Each task publishes the next one 15 s (of virtual time) later: never 20 s without work.
          if (w.runs.length < 10) {
            w.clock.advance(15_000);
            await w.send('urgent', encodeEnvelope({ task: 'ok' }));
          }
        },
      },
    ]);
    await w.send('urgent', encodeEnvelope({ task: 'ok' }));
    const start = w.clock.now();
    // (One batch at a time: virtual time jumps inside the tasks, faster than any heartbeat.)
    await runDispatcher(
      { ...w.deps, maxBatchesInFlight: 1 },
      { deadline: start + 600_000, idleExit: { afterMs: 20_000, notBefore: start } },
    );
    expect(w.runs).toHaveLength(10);
    expect(w.sqs.peek(w.urls.queues.urgent as string)).toHaveLength(0);
    expect(w.clock.now() - start).toBeLessThan(600_000 - 60_000);
  });

  it('without idleExit runs to the deadline', async () => {
    const w = world([ok]);
    const start = w.clock.now();
    await runDispatcher(w.deps, { deadline: start + 120_000 });
    expect(w.clock.now() - start).toBeGreaterThan(110_000);
  });
});
