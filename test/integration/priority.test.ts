/**
 * Priority holds under a backlog, invoked as deployed (`taskworker dev`'s on-demand mode). Found by
 * an outside harness: with dispatchers of 2 slots and a schedule-woken low queue holding six 8 s
 * tasks, high-priority jobs waited until the sixth low task had started (up to 22 s): the fleet had
 * received all six into its two slots, and the high queue's doorbell was off while the backlog
 * lasted. Read from the jobs table: once the fleet's four slots (two dispatchers of two) run low
 * tasks, the high job starts before a fifth low task does — 15 s of headroom, the low tasks'
 * length, however slowly a loaded machine starts the doorbell's invocation.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type LocalStack, startLocalStack } from '../../lib/local/dev';
import type { JobRecord } from '../../lib/track/job-record';
import { eventually } from '../helpers/run';

let stack: LocalStack;

beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tw-priority-'));
  mkdirSync(join(dir, 'tasks'));
  writeFileSync(
    join(dir, 'taskworker.config.ts'),
    `export default {
  app: 'prio',
  tasksDir: 'tasks',
  queues: [
    { name: 'high', priority: 100, slaSeconds: 10, visibilityTimeoutSeconds: 30, longPollSeconds: 1 },
    { name: 'low', priority: 5, slaSeconds: 300, visibilityTimeoutSeconds: 60, longPollSeconds: 1, wakeUp: 'schedule' },
  ],
  dispatcher: { concurrency: 2, timeoutSeconds: 60, maxConcurrency: 2 },
};
`,
  );
  writeFileSync(
    join(dir, 'tasks', 'report.ts'),
    "export default { name: 'report', queue: 'low', timeLimitSeconds: 30, run: () => new Promise((r) => setTimeout(r, 15000)) };\n",
  );
  writeFileSync(join(dir, 'tasks', 'notify.ts'), "export default { name: 'notify', queue: 'high', timeLimitSeconds: 5, run() {} };\n");
  stack = await startLocalStack({
    configFile: join(dir, 'taskworker.config.ts'),
    version: 'prio',
    invocations: 'on-demand',
    schedulePeriodMs: 2000,
    logLevel: 'ERROR',
    onOutput: () => {},
  });
}, 60_000);

afterAll(async () => {
  await stack?.stop();
}, 60_000);

const get = async (id: string) => (await stack.jobs.get(id)) as JobRecord | undefined;

/** The fleet's task slots: two dispatchers (maxConcurrency) of two. */
const FLEET_SLOTS = 4;

it('a high-priority job starts before a low task beyond those already running when it came', async () => {
  const low = Array.from({ length: 6 }, (_, i) => `low-${i}`);
  await stack.publisher.publishBatch(low.map((id) => ({ task: 'report', payload: {}, options: { id } })));
  await eventually(
    'the fleet to fill its slots with the backlog',
    async () => (await Promise.all(low.map(get))).filter((r) => r?.state === 'running').length === FLEET_SLOTS,
    60_000,
  );
  await stack.publisher.publish('notify', {}, { id: 'high-1' });
  await eventually('the high job to succeed', async () => (await get('high-1'))?.state === 'succeeded', 30_000);
  const high = (await get('high-1')) as JobRecord;
  const lowStarts = (await Promise.all(low.map(get)))
    .map((r) => r?.firstStartedAt)
    .filter((at): at is number => at !== undefined)
    .sort((a, b) => a - b);
  // Every slot was taken by a 15 s task when the high job came: a fifth low task starts when one of
  // them ends at the soonest. The high job started before it, so it never waited behind the backlog
  // (before the fix it started after the fifth or sixth: the fleet held all six).
  const startedBefore = lowStarts.filter((at) => at <= (high.firstStartedAt as number)).length;
  expect(startedBefore).toBe(FLEET_SLOTS);
  await eventually('the backlog to drain', async () => (await Promise.all(low.map(get))).every((r) => r?.state === 'succeeded'), 120_000);
}, 240_000);
