/**
 * Sleeps, token waits and continuations on the emulators, dispatchers as processes running the
 * real Lambda handler: read from the jobs table and the steps' own counts in the effects table.
 */
import { type LocalStack, startLocalStack } from '../../lib/local/dev';
import { type JobRecord, TERMINAL_STATES } from '../../lib/track/job-record';
import { CHAOS_CONFIG, createEffectsTable, scanAll, until } from '../chaos/helpers/stage';
import { cli } from '../helpers/cli';

let stack: LocalStack;
const saved = { ...process.env };
let table: string;
/** The sleeper, published first: the other cases run while it sleeps. */
let sleeper: { jobId: string; publishedAt: number };

beforeAll(async () => {
  stack = await startLocalStack({ configFile: CHAOS_CONFIG, version: 'waits', dispatchers: 1, logLevel: 'ERROR' });
  Object.assign(process.env, stack.env);
  table = await createEffectsTable(stack.dynamo, 'wait-effects');
  const published = await stack.publisher.publish('waiter', { table, mode: 'sleep', sleepMs: 90_000 });
  sleeper = { jobId: published.jobId, publishedAt: Date.now() };
}, 120_000);
afterAll(async () => {
  process.env = saved;
  await stack?.stop();
});

const record = async (jobId: string) =>
  (await scanAll(stack.dynamo, stack.tables.jobs)).find((r) => r.jobId === jobId) as JobRecord | undefined;
const effects = async () => new Map((await scanAll(stack.dynamo, table)).map((e) => [String(e.pk), e]));
const counted = (all: Map<string, Record<string, unknown>>, jobId: string, step: string) => ({
  tries: Number(all.get(`${jobId}#${step}`)?.tries ?? 0),
  done: Number(all.get(`${jobId}#${step}`)?.done ?? 0),
});

it('a token wait: the job waits (no attempt) until its token is completed, resumes once with the value; the second completion is refused', async () => {
  const { jobId } = await stack.publisher.publish('waiter', { table, mode: 'token' });
  expect(await until(async () => (await record(jobId))?.state === 'waiting-token', 60_000, 250)).toBe(true);
  const token = String((await effects()).get(`${jobId}#token`)?.value);
  expect((await record(jobId))?.waitToken).toBe(token);
  const [first, second] = await Promise.all([
    stack.publisher.completeToken(token, { approved: 'ana' }),
    stack.publisher.completeToken(token, { approved: 'bob' }),
  ]);
  const outcomes = [first.outcome, second.outcome].sort();
  expect(outcomes).toEqual(['completed', 'completed-already']);
  const winner = first.outcome === 'completed' ? 'ana' : 'bob';
  expect(await until(async () => (await record(jobId))?.state === 'succeeded', 60_000, 250)).toBe(true);
  const job = (await record(jobId)) as JobRecord;
  expect(JSON.parse(job.result ?? 'null')).toMatchObject({ waited: { approved: winner } });
  const all = await effects();
  expect([counted(all, jobId, 'before'), counted(all, jobId, 'after')]).toEqual([
    { tries: 1, done: 1 },
    { tries: 1, done: 1 },
  ]);
  expect(job).toMatchObject({ parks: 1 });
  expect(job.history.filter((h) => h.what === 'started')).toHaveLength(2);
  expect(job.history.filter((h) => h.what === 'token-completed')).toHaveLength(1);
}, 150_000);

it('from the CLI: jobs list --state waiting-token finds the job, tokens complete resumes it, a second completion exits 1 naming the first; a sleeping job is cancelled', async () => {
  const run = (...argv: string[]) => cli(...argv, '--version', stack.version, '--config', CHAOS_CONFIG);
  const { jobId } = await stack.publisher.publish('waiter', { table, mode: 'token' });
  expect(await until(async () => (await record(jobId))?.state === 'waiting-token', 60_000, 250)).toBe(true);
  const listed = await run('jobs', 'list', '--state', 'waiting-token', '--json');
  expect(listed.code).toBe(0);
  expect(JSON.stringify(JSON.parse(listed.out))).toContain(jobId);
  const token = (await record(jobId))?.waitToken as string;
  const shown = await run('jobs', 'show', jobId);
  expect(shown.out).toContain(`waits for token ${token} until `);
  const done = await run('tokens', 'complete', token, '--value', '{"approved":"cli"}');
  expect(done).toMatchObject({ code: 0, out: `completed ${token}: job ${jobId} resumes now\n` });
  const again = await run('tokens', 'complete', token, '--value', '2');
  expect(again.code).toBe(1);
  expect(again.out).toMatch(
    new RegExp(`^refused: .* was completed at \\S+ with \\{"approved":"cli"\\} \\(job ${jobId}\\); the first completion stands\\n$`),
  );
  const bad = await run('tokens', 'complete', 'not-a-token');
  expect(bad.code).not.toBe(0);
  expect(bad.err.trim().split('\n')).toHaveLength(1);
  expect(bad.err).toContain('Invalid token "not-a-token"');
  expect(await until(async () => (await record(jobId))?.state === 'succeeded', 60_000, 250)).toBe(true);
  expect(JSON.parse((await record(jobId))?.result ?? 'null')).toMatchObject({ waited: { approved: 'cli' } });

  // A job asleep for an hour, cancelled: it never runs its second step.
  const sleepy = await stack.publisher.publish('waiter', { table, mode: 'sleep', sleepMs: 3_600_000 });
  expect(await until(async () => (await record(sleepy.jobId))?.state === 'sleeping', 60_000, 250)).toBe(true);
  const cancelled = await run('jobs', 'cancel', sleepy.jobId);
  expect(cancelled.code).toBe(0);
  expect((await record(sleepy.jobId))?.state).toBe('cancelled');
  const all = await effects();
  expect([counted(all, sleepy.jobId, 'before'), counted(all, sleepy.jobId, 'after')]).toEqual([
    { tries: 1, done: 1 },
    { tries: 0, done: 0 },
  ]);
}, 150_000);

it('a job whose steps add up past its time limit continues in new attempts from its kept steps, each step once, no attempt used', async () => {
  const { jobId } = await stack.publisher.publish('long-haul', { table });
  // Waits for any end, so a job that failed shows how rather than a timeout.
  const ended = (r: JobRecord | undefined) => r !== undefined && TERMINAL_STATES.includes(r.state);
  expect(await until(async () => ended(await record(jobId)), 120_000, 500)).toBe(true);
  const job = (await record(jobId)) as JobRecord;
  expect({ state: job.state, reason: job.reason, lastError: job.lastError?.message }).toEqual({
    state: 'succeeded',
    reason: undefined,
    lastError: undefined,
  });
  const all = await effects();
  const parts = Array.from({ length: 20 }, (_, i) => counted(all, jobId, `part-${i + 1}`));
  expect(parts).toEqual(Array.from({ length: 20 }, () => ({ tries: 1, done: 1 })));
  // 20 steps of 0.25 s under a 3 s limit (each step's 1.5 s): at most 7 steps an attempt, every attempt but the last ended to continue.
  const continued = job.history.filter((h) => h.what === 'sleeping' && /continues in a new invocation/.test(h.detail ?? ''));
  expect(continued.length).toBeGreaterThanOrEqual(2);
  expect(job.parks).toBe(continued.length);
  expect(job.attempt).toBe(continued.length + 1);
  expect(new Set(job.steps?.map((s) => s.attempt)).size).toBe(job.attempt);
  expect(JSON.parse(job.result ?? 'null')).toBe('hauled');
}, 150_000);

it('a sleep of 90 s: no attempt while it sleeps, resumed within a minute of its time, its first step not run again', async () => {
  const { jobId } = sleeper;
  expect(await until(async () => (await record(jobId))?.state === 'succeeded', 240_000, 1000)).toBe(true);
  const job = (await record(jobId)) as JobRecord;
  const all = await effects();
  expect([counted(all, jobId, 'before'), counted(all, jobId, 'after')]).toEqual([
    { tries: 1, done: 1 },
    { tries: 1, done: 1 },
  ]);
  const due = job.steps?.[1]?.wait?.until ?? 0;
  expect(job.steps?.[1]).toMatchObject({ name: 'nap', wait: { kind: 'sleep' } });
  const starts = job.history.filter((h) => h.what === 'started').map((h) => h.when);
  expect(starts).toHaveLength(2);
  // No attempt between the sleep and its time; the second starts within a minute of it.
  expect(starts[1]).toBeGreaterThanOrEqual(due - 1000);
  expect(starts[1]).toBeLessThanOrEqual(due + 60_000);
  const after = JSON.parse(job.result ?? 'null') as { waited: string; at: number };
  expect(after.waited).toBe('slept');
  expect(job).toMatchObject({ parks: 1, attempt: 2 });
}, 300_000);
