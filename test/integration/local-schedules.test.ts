/**
 * The config's schedules in `taskworker dev`: a local timer sends each tick's envelope to the
 * task's queue on the emulator, with the job id EventBridge Scheduler would give it. Time is a
 * fake clock (three five-minute ticks in a moment); the queue, the dispatcher and the jobs table
 * are real. A tick delivered twice runs once.
 */
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import type { Clock } from '../../lib/clock';
import { resolveSchedules } from '../../lib/config/schedule-config';
import { scheduleQueue, startLocalSchedules } from '../../lib/local/recurring-timers';
import { scheduledTimeText, tickBody } from '../../lib/policy/recurring-ticks';
import type { TaskRegistry } from '../../lib/tasks/task';
import { buildFixtureBundle, FIXTURE_CONFIG, tempFile } from '../helpers/emulators';
import { eventually, readJournal, runUntil } from '../helpers/run';
import { systemPerTest } from '../helpers/system';

const fresh = systemPerTest();

/** Virtual time that a sleeper moves forward at once (after a real tick, so loops yield). */
function fastClock(start: number): Clock {
  let now = start;
  return {
    now: () => now,
    sleep: async (ms, signal) => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      if (!signal?.aborted) now += Math.max(0, ms);
    },
  };
}

describe('schedules in taskworker dev', () => {
  it('fires each tick once with its derived job id; a second delivery of a tick is stopped by the claim', async () => {
    const s = await fresh({ tracked: true });
    const bundle = await buildFixtureBundle(FIXTURE_CONFIG);
    const journal = tempFile('journal.jsonl');
    const schedules = resolveSchedules(
      [{ name: 'every-five', task: 'record', payload: { journal }, cron: '*/5 * * * *' }],
      bundle.config.queues.map((q) => q.name),
    );
    const config = { ...bundle.config, schedules };
    const start = Date.UTC(2026, 10, 22, 12, 1, 0);
    const ticks: Array<{ jobId: string; scheduledTime: string }> = [];
    const local = startLocalSchedules({
      config,
      registry: bundle.registry as TaskRegistry,
      urls: s.urls,
      sqs: s.sqs.sqs,
      clock: fastClock(start),
      onFire: (tick) => ticks.push(tick),
    });
    await eventually('three ticks', () => ticks.length >= 3);
    await local.stop();
    const first = ticks.slice(0, 3);
    expect(first.map((t) => t.scheduledTime)).toEqual(['2026-11-22T12:05:00Z', '2026-11-22T12:10:00Z', '2026-11-22T12:15:00Z']);
    expect(first.map((t) => t.jobId)).toEqual(first.map((t) => `schedule:every-five:${t.scheduledTime}`));
    expect(scheduleQueue(schedules[0] as never, bundle.registry)).toBe('urgent');

    // EventBridge Scheduler delivers at least once: the first tick arrives a second time.
    const again = tickBody(schedules[0] as never, scheduledTimeText(new Date('2026-11-22T12:05:00Z')));
    await s.sqs.sqs.send(new SendMessageCommand({ QueueUrl: s.urls.queues.urgent, MessageBody: again }));
    await runUntil(
      s.runtime,
      'every tick to run and the copy to be dropped',
      async () => (await s.drained('urgent')) && readJournal(journal).length >= ticks.length,
    );
    const ran = readJournal(journal).map((j) => j.jobId);
    expect(new Set(ran).size).toBe(ran.length);
    expect(new Set(ran)).toEqual(new Set(ticks.map((t) => t.jobId)));
    const record = await s.tracking?.jobs?.get('schedule:every-five:2026-11-22T12:05:00Z');
    expect(record).toMatchObject({ state: 'succeeded', attempt: 1 });
    expect(record?.history.map((h) => h.what)).toContain('skipped-duplicate');
  });
});
