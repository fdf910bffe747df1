/**
 * Schedules' overlap and catch-up on the emulators (dynalite's conditional writes, fauxqs), with
 * two dispatchers sharing the version: ticks sent as EventBridge Scheduler sends them, the truth
 * read from the jobs table (each tick's record) and the task's own journal.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ScheduleListing } from '../../cli/schedules-command';
import { resolveConfig } from '../../lib/config/app-config';
import type { ScheduleInput } from '../../lib/config/schedule-config';
import { scheduledTimeText, tickBody, tickJobId } from '../../lib/policy/recurring-ticks';
import type { JobRecord } from '../../lib/track/job-record';
import fixture from '../fixtures/taskworker.config';
import { cli } from '../helpers/cli';
import { FIXTURE_CONFIG } from '../helpers/emulators';
import { eventually, readJournal } from '../helpers/run';
import { type System, systemPerTest } from '../helpers/system';

const dir = mkdtempSync(join(tmpdir(), 'tw-schedules-'));
const overlapJournal = join(dir, 'overlap.jsonl');
const catchUpJournal = join(dir, 'catch-up.jsonl');
const SCHEDULES: ScheduleInput[] = [
  // A 1.5 s nap whose ticks come every 0.5 s (labelled a minute apart, as a per-minute schedule's are).
  { name: 'naps', task: 'nap', cron: '* * * * *', payload: { journal: overlapJournal, ms: 1_500 }, overlap: 'skip' },
  { name: 'catching', task: 'nap', cron: '* * * * *', payload: { journal: catchUpJournal, ms: 10 }, overlap: 'allow', catchUp: '10m' },
];
const configFile = join(dir, 'taskworker.config.json');
writeFileSync(configFile, JSON.stringify({ ...fixture, tasksDir: join(FIXTURE_CONFIG, '..', 'tasks'), schedules: SCHEDULES }));
const config = resolveConfig(JSON.parse(JSON.stringify({ ...fixture, schedules: SCHEDULES })));
const schedule = (name: string) => config.schedules.find((s) => s.name === name) as (typeof config.schedules)[number];

const fresh = systemPerTest(configFile);
const record = (s: System, jobId: string) => s.tracking?.jobs?.get(jobId) as Promise<JobRecord | undefined>;
const sendTick = (s: System, name: string, at: number) =>
  s.sqs.sendBatch(s.urls.queues.urgent as string, [{ id: '0', body: tickBody(schedule(name), scheduledTimeText(new Date(at))) }]);
const start = (s: System, runtime = s.dispatcher()) => {
  const stop = new AbortController();
  const running = runtime.invoke(Date.now() + 60_000, stop.signal);
  return async () => {
    stop.abort();
    await running;
  };
};
const minute = (now: number, k: number) => Math.floor(now / 60_000) * 60_000 - (20 - k) * 60_000;

describe('schedule policies on the emulators', () => {
  it("overlap 'skip' with two dispatchers: never two runs at once; each tick ran or is recorded skipped, naming a run that was live", async () => {
    const s = await fresh({ tracked: true });
    const stops = [start(s, s.runtime), start(s)];
    const ticks: string[] = [];
    const now = Date.now();
    try {
      for (let k = 0; k < 12; k++) {
        const at = minute(now, k);
        ticks.push(tickJobId('naps', scheduledTimeText(new Date(at))));
        await sendTick(s, 'naps', at);
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
      const ended = (r: JobRecord | undefined) => r?.state === 'succeeded' || r?.state === 'deduplicated';
      await eventually('every tick to have ended', async () => (await Promise.all(ticks.map((id) => record(s, id)))).every(ended), 30_000);
    } finally {
      await Promise.all(stops.map((stop) => stop()));
    }
    const records = (await Promise.all(ticks.map((id) => record(s, id)))) as JobRecord[];
    const ran = records.filter((r) => r.state === 'succeeded');
    const skipped = records.filter((r) => r.state === 'deduplicated');
    expect(ran.length + skipped.length).toBe(ticks.length);
    expect(ran.length).toBeGreaterThanOrEqual(2);
    expect(skipped.length).toBeGreaterThanOrEqual(1);
    // The runs, as their records and the task's journal say, never overlapped.
    const spans = ran.map((r) => [r.firstStartedAt as number, r.finishedAt as number] as const).sort((a, b) => a[0] - b[0]);
    for (let i = 1; i < spans.length; i++) expect(spans[i]?.[0]).toBeGreaterThanOrEqual(spans[i - 1]?.[1] as number);
    expect(readJournal(overlapJournal)).toHaveLength(ran.length);
    // Each skipped tick names a run that had not ended when the tick was recorded skipped (it held
    // the schedule's run from its turn, a moment before its claim).
    const byId = new Map(ran.map((r) => [r.jobId, r]));
    for (const r of skipped) {
      const runner = byId.get(r.duplicateOf as string);
      expect(runner).toBeDefined();
      expect(r.finishedAt).toBeLessThanOrEqual(runner?.finishedAt as number);
      expect(r.history.at(-1)?.detail).toMatch(/^skipped: schedule naps's run schedule:naps:\S+ is live \(overlap skip\)$/);
    }
    expect(await s.tracking?.jobs?.scheduleTicks('naps')).toMatchObject({ skipped: skipped.length });
    // `taskworker schedules --version V` says the same, from the version's jobs table.
    const saved = { ...process.env };
    try {
      Object.assign(process.env, s.env);
      const json = await cli('schedules', '--config', configFile, '--version', s.version, '--json');
      expect(json.code).toBe(0);
      const listed = JSON.parse(json.out) as ScheduleListing[];
      expect(listed.find((l) => l.name === 'naps')).toMatchObject({
        overlap: 'skip',
        // Not `missed`: ticks a minute apart sent 0.5 s apart to two dispatchers come out of order,
        // and a tick handled after the next one was counted missed by it (docs/time.md says so).
        ticks: { lastTick: new Date(minute(now, 11)).toISOString(), skipped: skipped.length, caughtUp: 0 },
      });
      expect(listed.find((l) => l.name === 'catching')?.ticks).toEqual({ skipped: 0, missed: 0, caughtUp: 0 });
      const text = await cli('schedules', '--config', configFile, '--version', s.version);
      expect(text.out).toMatch(new RegExp(`in version ${s.version}:[\\s\\S]*naps\\s+\\S+Z\\s+${skipped.length}\\s+\\d+\\s+0`));
    } finally {
      process.env = saved;
    }
  });

  it("catchUp '10m': the ticks missed between two real ones run once each, as the real ticks' jobs", async () => {
    const s = await fresh({ tracked: true });
    const stops = [start(s, s.runtime), start(s)];
    const now = Date.now();
    const first = minute(now, 0);
    const resumed = minute(now, 6);
    try {
      await sendTick(s, 'catching', first);
      await eventually(
        'the first tick to run',
        async () => (await record(s, tickJobId('catching', scheduledTimeText(new Date(first)))))?.state === 'succeeded',
      );
      // Ticks 1 to 5 never came (the schedules were off); 6 comes, and a second copy of it.
      await sendTick(s, 'catching', resumed);
      await sendTick(s, 'catching', resumed);
      const all = Array.from({ length: 7 }, (_, k) => tickJobId('catching', scheduledTimeText(new Date(minute(now, k)))));
      await eventually(
        'all seven ticks to run',
        async () => (await Promise.all(all.map((id) => record(s, id)))).every((r) => r?.state === 'succeeded'),
        30_000,
      );
      for (const id of all) expect(await record(s, id)).toMatchObject({ state: 'succeeded', attempt: 1 });
    } finally {
      await Promise.all(stops.map((stop) => stop()));
    }
    expect(readJournal(catchUpJournal)).toHaveLength(7);
    expect(await s.tracking?.jobs?.scheduleTicks('catching')).toMatchObject({ lastTick: resumed, caughtUp: 5, missed: 0 });
  });
});
