/**
 * RateLimitedError on the emulators, two dispatchers sharing a version: the one whose job was told
 * 429 pauses the task fleet-wide; both hold the task's other jobs back (each handed back once,
 * invisible until the pause ends) while another task on the same queue runs; afterwards every held
 * job runs once, using no attempt. The truth is read from the jobs table, the stats table and the
 * journal the tasks write.
 */
import { utcDay } from '../../lib/policy/stat-sums';
import type { JobRecord } from '../../lib/track/job-record';
import { tempFile } from '../helpers/emulators';
import { eventually, readJournal } from '../helpers/run';
import { type System, systemPerTest } from '../helpers/system';

const fresh = systemPerTest();
const record = (s: System, jobId: string): Promise<JobRecord | undefined> => s.tracking?.jobs?.get(jobId) as Promise<JobRecord | undefined>;
/** A running dispatcher's summary once stopped. */
const start = (s: System, runtime = s.dispatcher()) => {
  const stop = new AbortController();
  const running = runtime.invoke(Date.now() + 60_000, stop.signal);
  return async () => {
    stop.abort();
    return running;
  };
};

describe('RateLimitedError on the emulators', () => {
  it("a 429 pauses the task fleet-wide: its jobs wait for the pause's end on both dispatchers, another task runs on, no attempt used", async () => {
    const s = await fresh({ tracked: true });
    const apiJournal = tempFile('api.jsonl');
    const otherJournal = tempFile('other.jsonl');
    const stops = [start(s, s.runtime), start(s)];
    try {
      // The first call meets the 429: the API stays limited for 8 s from that call.
      const api = { journal: apiJournal, api: tempFile('api.json'), limitedForMs: 8_000 };
      const first = await s.publisher.publish('rate-limited-api', api);
      await eventually('the first job to be rate limited', async () =>
        ((await record(s, first.jobId))?.history ?? []).some((h) => h.what === 'rate-limited'),
      );
      const pausedAt = readJournal(apiJournal)[0]?.at as number;
      const limitedUntil = pausedAt + api.limitedForMs;
      // Both dispatchers read the pause within their controls refresh (2 s); publish after it.
      await new Promise((resolve) => setTimeout(resolve, 2_500));
      const held = await Promise.all(Array.from({ length: 8 }, () => s.publisher.publish('rate-limited-api', api)));
      const heldPublishedBy = Date.now();
      const others = await Promise.all(Array.from({ length: 12 }, (_, n) => s.publisher.publish('record', { journal: otherJournal, n })));
      await eventually(
        'every job to succeed',
        async () => {
          const all = await Promise.all([first, ...held, ...others].map((j) => record(s, j.jobId)));
          return all.every((r) => r?.state === 'succeeded');
        },
        30_000,
      );
      // Stopped: each invocation writes its buffered stats as it ends.
      await Promise.all(stops.splice(0).map((stop) => stop()));
      // The pause as the API's own clock sees it: no call of the held jobs was made before it ended.
      const calls = readJournal(apiJournal);
      const heldIds = new Set(held.map((j) => j.jobId));
      const heldCalls = calls.filter((c) => heldIds.has(c.jobId as string));
      expect(heldCalls).toHaveLength(held.length);
      for (const c of heldCalls) {
        expect(c.limited).toBe(false);
        expect(c.at as number).toBeGreaterThanOrEqual(limitedUntil);
        expect(c.attempt).toBe(1);
      }
      // The thrower: one 429, then its run after the pause, attempt 1 both times.
      expect(calls.filter((c) => c.jobId === first.jobId).map((c) => [c.limited, c.attempt])).toEqual([
        [true, 1],
        [false, 1],
      ]);
      const thrower = await record(s, first.jobId);
      expect(thrower).toMatchObject({ state: 'succeeded', retryAfters: 1 });
      expect(thrower?.history.find((h) => h.what === 'rate-limited')?.detail).toMatch(/^task:rate-limited-api paused until /);
      for (const j of held) expect(await record(s, j.jobId)).toMatchObject({ state: 'succeeded', attempt: 1 });
      // The other task on the same queue ran on while the pause held.
      const otherRuns = readJournal(otherJournal);
      expect(otherRuns).toHaveLength(others.length);
      // Each held job was received and held back at most twice (once per dispatcher's copy of the
      // pause at worst), not again and again; the other task's jobs were never held.
      const jobs = s.jobs();
      const heldReports = jobs.filter((j) => j.heldBy !== undefined);
      expect(heldReports.every((j) => j.task === 'rate-limited-api' && j.heldBy === 'task:rate-limited-api')).toBe(true);
      expect(heldReports.length).toBeGreaterThanOrEqual(1);
      for (const j of held) expect(heldReports.filter((r) => r.jobId === j.jobId).length).toBeLessThanOrEqual(2);
      // Published while the pause held (else this proves nothing about holding).
      expect(heldPublishedBy).toBeLessThan(limitedUntil);
      // The stats table counts the 429 and every hold (the dispatchers' stats are written as each batch settles).
      const counters = (await s.tracking?.stats.get('urgent', utcDay(Date.now())))?.counters;
      expect(counters).toMatchObject({ rateLimited: 1, rateLimitHeld: heldReports.length, succeeded: 1 + held.length + others.length });
      expect(counters?.failed ?? 0).toBe(0);
      expect(counters?.retried ?? 0).toBe(0);
    } finally {
      await Promise.all(stops.map((stop) => stop()));
    }
  });
});
