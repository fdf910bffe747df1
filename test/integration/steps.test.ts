/**
 * Durable steps on the emulators, dispatchers as processes running the real Lambda handler: a job
 * of five steps whose step 2 fails once and whose step 3 takes its dispatcher down (SIGKILL) on its
 * first try. Read from the jobs table and the steps' own counts in the effects table.
 */
import { type LocalStack, startLocalStack } from '../../lib/local/dev';
import type { JobRecord } from '../../lib/track/job-record';
import { CHAOS_CONFIG, createEffectsTable, scanAll, until } from '../chaos/helpers/stage';

let stack: LocalStack | undefined;
afterEach(async () => {
  await stack?.stop();
  stack = undefined;
});

it('a job of 5 steps, step 2 failing once and its dispatcher SIGKILLed in step 3: each step done once, the job succeeded across invocations', async () => {
  const exits: string[] = [];
  stack = await startLocalStack({
    configFile: CHAOS_CONFIG,
    version: 'steps',
    dispatchers: 1,
    logLevel: 'ERROR',
    onDispatcherExit: (exit) => exits.push(String(exit.signal)),
  });
  const local = stack;
  const table = await createEffectsTable(local.dynamo, 'step-effects');
  const { jobId } = await local.publisher.publish('stepped', { table });
  const record = async () => (await scanAll(local.dynamo, local.tables.jobs)).find((r) => r.jobId === jobId) as JobRecord | undefined;
  expect(await until(async () => (await record())?.state === 'succeeded', 120_000, 500)).toBe(true);
  const job = (await record()) as JobRecord;
  const effects = new Map((await scanAll(local.dynamo, table)).map((e) => [String(e.pk), e]));
  const counted = (step: string) => ({
    tries: Number(effects.get(`${jobId}#${step}`)?.tries ?? 0),
    done: Number(effects.get(`${jobId}#${step}`)?.done ?? 0),
  });
  expect(['s1', 's2', 's3', 's4', 's5'].map(counted)).toEqual([
    { tries: 1, done: 1 },
    { tries: 2, done: 1 },
    { tries: 2, done: 1 },
    { tries: 1, done: 1 },
    { tries: 1, done: 1 },
  ]);
  // Attempt 1 kept s1 and failed in s2; attempt 2 kept s2 and died in s3; attempt 3 (a takeover, in another process) did the rest.
  expect(job.steps?.map((s) => [s.name, s.attempt])).toEqual([
    ['s1', 1],
    ['s2', 2],
    ['s3', 3],
    ['s4', 3],
    ['s5', 3],
  ]);
  expect(JSON.parse(job.result ?? 'null')).toEqual([
    's1 by attempt 1',
    's2 by attempt 2',
    's3 by attempt 3',
    's4 by attempt 3',
    's5 by attempt 3',
  ]);
  expect(exits).toEqual(['SIGKILL']);
  expect(job.history.map((h) => h.what)).toEqual(['queued', 'started', 'retrying', 'started', 'took-over', 'succeeded']);
}, 180_000);
