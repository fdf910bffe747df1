/**
 * Schedules' policies on the dispatcher (lib/dispatch/schedule-turns.ts), on a discrete-event clock
 * with the in-memory queue and jobs table: overlap (`skip`, `buffer-one`, `allow`) over a virtual
 * day, catch-up after an outage, and that a caught-up or backfilled tick is the real tick's job.
 * Every assertion reads the jobs table and the task's own log of when each run started and ended.
 */
import { Simulation } from '../../bench/sim/engine';
import type { ScheduleInput } from '../../lib/config/schedule-config';
import { BackfillRequestError, backfillSchedule } from '../../lib/operate/schedule-backfill';
import { fireTimesBetween } from '../../lib/policy/cron-expressions';
import { scheduledTimeText, tickBody, tickJobId } from '../../lib/policy/recurring-ticks';
import { createRegistry } from '../../lib/tasks/registry';
import { defineTask, type TaskOptions } from '../../lib/tasks/task';
import type { JobRecord } from '../../lib/track/job-record';
import { appConfig } from '../helpers/factories';
import { operatorContextOf, world } from '../helpers/world';

const MINUTE = 60_000;
const START = Date.UTC(2027, 0, 4, 0, 0, 0);

/** A world whose one schedule fires `report`, a task that runs `runMs`, with the ticks sent as EventBridge Scheduler would. */
function scheduleWorld(schedule: Omit<ScheduleInput, 'name' | 'task'>, runMs: number) {
  const sim = new Simulation(START);
  const runs: Array<{ tick: string; start: number; end: number }> = [];
  const report: TaskOptions = {
    name: 'report',
    queue: 'routine',
    timeLimitSeconds: 300,
    run: async (_payload, ctx) => {
      const start = sim.now();
      await sim.sleep(runMs);
      runs.push({ tick: (ctx.appData as { scheduledTime: string }).scheduledTime, start, end: sim.now() });
    },
  };
  const w = world(
    [report],
    {
      queues: [{ name: 'routine', priority: 10, visibilityTimeoutSeconds: 400 }],
      dispatcher: { concurrency: 4, timeoutSeconds: 900, settleMarginMs: 500, killGraceMs: 100 },
      schedules: [{ name: 'reports', task: 'report', ...schedule }],
    },
    // A long poll looks every second, not every 20 ms: a day of them is 86,400 steps, not 4.3 million.
    { tracked: true, simulation: sim, pollMs: 1_000 },
  );
  const config = w.config.schedules[0] as (typeof w.config.schedules)[number];
  /** Sends every tick of [from, to) at its time, as EventBridge Scheduler does; returns their times. */
  const fire = async (from: number, to: number): Promise<string[]> => {
    const sent: string[] = [];
    for (const time of fireTimesBetween(config, new Date(from), new Date(to), 10_000).times) {
      await sim.sleep(time.getTime() - sim.now());
      const text = scheduledTimeText(time);
      await w.send('routine', tickBody(config, text));
      sent.push(text);
    }
    return sent;
  };
  const record = async (time: string) => (await w.jobs.get(tickJobId('reports', time))) as JobRecord;
  return { sim, w, runs, config, fire, record };
}

/** Whether any two runs were live at once. */
function overlapping(runs: ReadonlyArray<{ start: number; end: number }>): number {
  const sorted = [...runs].sort((a, b) => a.start - b.start);
  return sorted.filter((r, i) => i > 0 && r.start < (sorted[i - 1] as { end: number }).end).length;
}

describe('a schedule’s overlap', () => {
  // A virtual day of ticks is CPU work (24 s beside a benchmark on this 2-core machine): room for a busier one.
  it('skip: a 90 s job on a 60 s schedule over a virtual day never has two runs at once; every other tick is recorded skipped, pointing at the live run', async () => {
    const { w, runs, fire, record } = scheduleWorld({ cron: '* * * * *', overlap: 'skip' }, 90_000);
    const firing = fire(START, START + 24 * 60 * MINUTE);
    await w.run({ forMs: 24 * 60 * MINUTE + 10 * MINUTE });
    const sent = await firing;
    expect(sent).toHaveLength(1_440);
    expect(overlapping(runs)).toBe(0);
    const records = await Promise.all(sent.map(record));
    const states = records.map((r) => r.state);
    const ran = records.filter((r) => r.state === 'succeeded');
    const skipped = records.filter((r) => r.state === 'deduplicated');
    expect(ran.length + skipped.length).toBe(sent.length);
    expect(ran.length).toBe(runs.length);
    // A run takes 90 s, so the tick a minute after each run's starts is skipped and the next runs.
    expect(ran.length).toBe(720);
    expect(states.slice(0, 4)).toEqual(['succeeded', 'deduplicated', 'succeeded', 'deduplicated']);
    // Each skipped tick names the run that was live at its time, and says why.
    const byTick = new Map(runs.map((r) => [tickJobId('reports', r.tick), r]));
    for (const s of skipped) {
      const live = byTick.get(s.duplicateOf as string);
      expect(live).toBeDefined();
      expect(live?.start).toBeLessThanOrEqual(Date.parse(s.jobId.slice('schedule:reports:'.length)));
      expect(s.history.at(-1)?.detail).toMatch(/^skipped: schedule reports's run schedule:reports:\S+ is live \(overlap skip\)$/);
    }
    expect(await w.jobs.scheduleTicks('reports')).toMatchObject({ skipped: skipped.length, missed: 0, caughtUp: 0 });
  }, 300_000);

  it('buffer-one: a tick during a run waits and runs right after it; a second one during the same run is skipped', async () => {
    // A 150 s job on a 60 s schedule: ticks at 1 and 2 min come during the run of 0; 1 waits, 2 is skipped.
    const { w, runs, fire, record } = scheduleWorld({ rate: '1 minute', overlap: 'buffer-one' }, 150_000);
    const firing = fire(START, START + 10 * MINUTE);
    await w.run({ forMs: 30 * MINUTE });
    const sent = await firing;
    expect(overlapping(runs)).toBe(0);
    const first = runs[0] as { end: number };
    const second = runs[1] as { tick: string; start: number };
    expect(second.tick).toBe(sent[1]);
    // The buffered tick asks again at most every 60 s, so it starts within that of the run's end.
    expect(second.start - first.end).toBeLessThanOrEqual(60_000);
    expect((await record(sent[2] as string)).state).toBe('deduplicated');
    // Nothing lost: every tick ran or was skipped, and the skipped ones point at a tick that ran.
    const records = await Promise.all(sent.map(record));
    expect(records.every((r) => r.state === 'succeeded' || r.state === 'deduplicated')).toBe(true);
    const ranTicks = new Set(runs.map((r) => tickJobId('reports', r.tick)));
    for (const r of records.filter((x) => x.state === 'deduplicated')) expect(ranTicks.has(r.duplicateOf as string)).toBe(true);
  });

  it('allow: every tick runs, side by side with the one before', async () => {
    const { w, runs, fire } = scheduleWorld({ rate: '1 minute', overlap: 'allow' }, 90_000);
    const firing = fire(START, START + 10 * MINUTE);
    await w.run({ forMs: 20 * MINUTE });
    expect(runs).toHaveLength((await firing).length);
    expect(overlapping(runs)).toBeGreaterThan(0);
  });
});

describe('a schedule’s catch-up', () => {
  it("a 3-hour outage with catchUp '1h' runs exactly the missed ticks within the hour, once each, and counts the rest missed", async () => {
    const { sim, w, runs, fire } = scheduleWorld({ cron: '*/10 * * * *', catchUp: '1h', overlap: 'allow' }, 1_000);
    // Ticks for an hour, then none for three (the schedules disabled), then ticks again.
    const firing = (async () => {
      const before = await fire(START, START + 60 * MINUTE);
      await sim.sleep(START + 4 * 60 * MINUTE - sim.now());
      const after = await fire(START + 4 * 60 * MINUTE, START + 5 * 60 * MINUTE);
      return { before, after };
    })();
    await w.run({ forMs: 5 * 60 * MINUTE + 10 * MINUTE });
    const { before, after } = await firing;
    const ran = runs.map((r) => r.tick);
    // The outage's ticks: 01:00 to 03:50. On recovery (04:00) the ones since 03:00 are within the hour.
    const window = ['03:00', '03:10', '03:20', '03:30', '03:40', '03:50'].map((t) => `2027-01-04T${t}:00Z`);
    expect(new Set(ran)).toEqual(new Set([...before, ...window, ...after]));
    expect(ran).toHaveLength(before.length + window.length + after.length);
    expect(await w.jobs.scheduleTicks('reports')).toMatchObject({ caughtUp: 6, missed: 12 });
    // The caught-up ticks are the very jobs the real ticks would have been.
    expect(await w.jobs.get(tickJobId('reports', '2027-01-04T03:00:00Z'))).toMatchObject({ state: 'succeeded', attempt: 1 });
    expect(await w.jobs.get(tickJobId('reports', '2027-01-04T02:50:00Z'))).toBeUndefined();
  });

  it('without catchUp the missed ticks are only counted; a tick delivered twice or late catches nothing up', async () => {
    const { sim, w, runs, config } = scheduleWorld({ rate: '1 hour' }, 1_000);
    const at = (h: number) => scheduledTimeText(new Date(START + h * 60 * MINUTE));
    const sending = (async () => {
      await w.send('routine', tickBody(config, at(0)));
      await sim.sleep(5 * 60 * MINUTE);
      await w.send('routine', tickBody(config, at(5)));
      await w.send('routine', tickBody(config, at(5)));
      await sim.sleep(MINUTE);
      // An old tick arriving late (a redelivery) is no recovery; one from the future (a careless or
      // hostile publisher) runs, but does not move the schedule's latest tick.
      await w.send('routine', tickBody(config, at(3)));
      await sim.sleep(MINUTE);
      await w.send('routine', tickBody(config, at(48)));
    })();
    await w.run({ forMs: 6 * 60 * MINUTE + 10 * MINUTE });
    await sending;
    expect(runs.map((r) => r.tick).sort()).toEqual([at(0), at(3), at(5), at(48)]);
    expect(await w.jobs.scheduleTicks('reports')).toMatchObject({ lastTick: START + 5 * 60 * MINUTE, missed: 4, caughtUp: 0 });
  });
});

describe('taskworker schedules backfill', () => {
  it('a 7-day backfill of a daily schedule makes 7 jobs, and the real tick in the range is not doubled', async () => {
    const DAY = 24 * 60 * MINUTE;
    const { sim, w, runs, config, record } = scheduleWorld({ cron: '0 6 * * *' }, 1_000);
    // The real tick of day 3 ran (the schedule was on that day only).
    const real = scheduledTimeText(new Date(START + 3 * DAY + 6 * 60 * MINUTE));
    await sim.runUntil(START + 10 * DAY);
    await w.send('routine', tickBody(config, real));
    await w.run({ forMs: 10 * MINUTE });
    expect(runs.map((r) => r.tick)).toEqual([real]);
    const ctx = operatorContextOf(w);
    const request = { name: 'reports', queue: 'routine', from: START, to: START + 7 * DAY };
    const dry = await backfillSchedule(ctx, { ...request, dryRun: true });
    expect(dry).toMatchObject({ ticks: 7, recorded: 1, sent: 0, sample: expect.arrayContaining(['2027-01-04T06:00:00Z']) });
    expect(w.sqs.peek(w.urls.queues.routine as string)).toHaveLength(0);
    expect(await backfillSchedule(ctx, { ...request, dryRun: false })).toMatchObject({ ticks: 7, recorded: 1, sent: 7 });
    await w.run({ forMs: 10 * MINUTE });
    const days = Array.from({ length: 7 }, (_, d) => scheduledTimeText(new Date(START + d * DAY + 6 * 60 * MINUTE)));
    expect(runs.map((r) => r.tick).sort()).toEqual(days);
    for (const day of days) expect(await record(day)).toMatchObject({ state: 'succeeded', attempt: 1 });
    // The backfilled copy of the real tick was a duplicate of its job, never run again.
    expect(runs.filter((r) => r.tick === real)).toHaveLength(1);
  });

  it.each([
    [{ name: 'nightly' }, 'schedule'],
    [{ to: START - 2 * 60 * MINUTE }, '--to'],
    [{ to: START + 400 * 24 * 60 * MINUTE }, '--to'],
    [{ from: START - 40 * 24 * 60 * MINUTE, to: START }, '--from'],
  ])('refuses %j naming the option', async (change, field) => {
    const { w } = scheduleWorld({ cron: '*/5 * * * *' }, 1_000);
    const request = { name: 'reports', queue: 'routine', from: START - 60 * MINUTE, to: START, dryRun: true, ...change };
    const thrown = await backfillSchedule(operatorContextOf(w), request).catch((error: unknown) => error);
    expect(thrown).toBeInstanceOf(BackfillRequestError);
    expect(thrown).toMatchObject({ field });
  });
});

describe('a schedule’s policies need the jobs table', () => {
  const task = defineTask({ name: 'report', queue: 'urgent', timeLimitSeconds: 5, run: () => undefined });
  const onFailuresQueue = (schedule: Record<string, unknown>) =>
    appConfig({
      queues: [{ name: 'urgent', priority: 1, visibilityTimeoutSeconds: 30, tracking: 'failures' }],
      schedules: [{ name: 'reports', task: 'report', cron: '0 * * * *', ...schedule }],
    });

  it.each([
    [{ overlap: 'skip' }, 'schedules[0].overlap'],
    [{ overlap: 'buffer-one' }, 'schedules[0].overlap'],
    [{ catchUp: '1h' }, 'schedules[0].catchUp'],
  ])('refuses %j on a queue not tracked full, naming the field', (schedule, field) => {
    expect(() => createRegistry([task], onFailuresQueue(schedule))).toThrow(expect.objectContaining({ field }));
  });

  it("runs every tick there when overlap is not given ('allow' is the only one it can keep)", () => {
    expect(() => createRegistry([task], onFailuresQueue({}))).not.toThrow();
    expect(() => createRegistry([task], onFailuresQueue({ overlap: 'allow' }))).not.toThrow();
  });
});
