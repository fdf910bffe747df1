/**
 * Batch tasks on the emulators, dispatchers as processes running the real Lambda handler (thread
 * pool and all): `effect-batch` runs calls of up to 100 jobs of one account, each item's effect
 * fenced by its own token (test/chaos/fixtures/tasks/_fenced.ts). Assertions read the jobs table
 * and the effects table: what each job ended as, how many bodies ran it, how often its effect
 * landed, and each call's own record (its key, its items' accounts, its size).
 */
import { SqsQueueClient } from '../../lib/adapters/sqs';
import { type LocalStack, startLocalStack } from '../../lib/local/dev';
import { seededRandom } from '../../lib/random';
import type { JobRecord } from '../../lib/track/job-record';
import type { BatchEffectPayload } from '../chaos/fixtures/batch-tasks/effect-batch';
import { type HeldAtKill, killHolders } from '../chaos/helpers/kills';
import { auditStack, BATCHES_CONFIG, createEffectsTable, type Published, scanAll, until } from '../chaos/helpers/stage';

const ACCOUNTS = 3;

let stack: LocalStack | undefined;
afterEach(async () => {
  await stack?.stop();
  stack = undefined;
});

/** Publishes `jobs` effect-batch jobs over the accounts, in waves of 50; `payload(n)` adds to each. */
async function publish(local: LocalStack, table: string, jobs: number, payload: (n: number) => Partial<BatchEffectPayload>) {
  const published: Published[] = [];
  for (let n = 0; n < jobs; n += 50) {
    const wave = await local.publisher.publishBatch(
      Array.from({ length: Math.min(50, jobs - n) }, (_, i) => ({
        task: 'effect-batch',
        payload: { table, account: `acct-${(n + i) % ACCOUNTS}`, ...payload(n + i) } satisfies BatchEffectPayload,
      })),
    );
    published.push(...wave.map((p) => ({ jobId: p.jobId, task: 'effect-batch' })));
  }
  return published;
}

/** Until every published job succeeded and the queue is empty. */
async function drained(local: LocalStack, published: readonly Published[], ready: () => boolean = () => true): Promise<boolean> {
  const ids = new Set(published.map((p) => p.jobId));
  const queues = new SqsQueueClient(local.sqs);
  return until(
    async () => {
      if (!ready()) return false;
      // The depth first: a scan of the jobs table is work for the emulator the dispatchers use.
      const d = await queues.depth(local.urls.queues.work as string);
      if (d.visible + d.inFlight + d.delayed > 0) return false;
      const records = await scanAll(local.dynamo, local.tables.jobs);
      return records.filter((r) => r.state === 'succeeded' && ids.has(String(r.jobId))).length === ids.size;
    },
    240_000,
    2000,
  );
}

/** Every call's record: one account (its key), at most 100 items. */
async function callsOf(local: LocalStack, table: string) {
  const calls = (await scanAll(local.dynamo, table)).filter((e) => String(e.pk).startsWith('call#'));
  for (const call of calls) {
    expect(call.accounts).toEqual([call.key]);
    expect(Number(call.size)).toBeLessThanOrEqual(100);
  }
  return calls.map((c) => Number(c.size));
}

it('1,050 jobs over 3 accounts: calls of one account and at most 100, each item once, 7 failing items retried alone', async () => {
  stack = await startLocalStack({ configFile: BATCHES_CONFIG, version: 'batches', dispatchers: 2, logLevel: 'ERROR' });
  const local = stack;
  const table = await createEffectsTable(local.dynamo, 'batch-effects');
  const failing = new Set([3, 140, 141, 500, 777, 901, 1049]);
  const published = await publish(local, table, 1050, (n) => (failing.has(n) ? { failFirst: true } : {}));
  expect(await drained(local, published)).toBe(true);
  await local.stopDispatchers();
  const queues = new SqsQueueClient(local.sqs);
  const audit = await auditStack(local, { published, effectsTable: table, depth: (url) => queues.depth(url) });
  expect(audit).toMatchObject({ succeeded: 1050, lost: [], completedTwice: [], leftInQueues: 0, leftInDeadLetterQueues: 0 });
  expect(audit.effects).toMatchObject({ once: 1050, overApplied: [], missing: [] });
  // Only the failed items were retried for their own Error: each ran twice or more, and no other job
  // was retried for it. (A busy machine may still run another item twice when its call
  // waits past the item's lease and another dispatcher takes it over: a `took-over`, never a retry;
  // its effect still lands once, as above.)
  const effects = new Map((await scanAll(local.dynamo, table)).map((e) => [String(e.pk), e]));
  const records = new Map((await scanAll(local.dynamo, local.tables.jobs)).map((r) => [String(r.jobId), r as unknown as JobRecord]));
  const retried = published.flatMap((p, n) => (records.get(p.jobId)?.history.some((h) => h.what === 'retrying') ? [n] : []));
  expect(retried).toEqual(expect.arrayContaining([...failing]));
  // Any other retry is its whole call's (a call past its time limit on a busy machine), never a sibling's returned Error.
  for (const n of retried.filter((i) => !failing.has(i))) {
    expect(records.get((published[n] as Published).jobId)?.lastError?.message ?? '').not.toMatch(/rejected on purpose/);
  }
  for (const n of failing) expect(Number(effects.get((published[n] as Published).jobId)?.runs)).toBeGreaterThanOrEqual(2);
  const reran = published.filter((p, n) => !failing.has(n) && Number(effects.get(p.jobId)?.runs) > 1);
  for (const p of reran) expect(records.get(p.jobId)?.history.map((h) => h.what)).toContain('took-over');
  const sizes = await callsOf(local, table);
  expect(sizes.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(1050 + failing.size);
  // Gathered across receives (one takes at most 10 messages): a call waits up to 3 s for its items.
  expect(Math.max(...sizes)).toBeGreaterThan(10);
  expect(sizes.length).toBeLessThan(1057 / 2);
}, 400_000);

it('applies each item once under dispatcher kills: five SIGKILLs, each of a dispatcher holding jobs, while 240 jobs run', async () => {
  const random = seededRandom(Number(process.env.CHAOS_SEED ?? 20_261_129));
  stack = await startLocalStack({ configFile: BATCHES_CONFIG, version: 'batch-kills', dispatchers: 3, logLevel: 'ERROR' });
  const local = stack;
  const table = await createEffectsTable(local.dynamo, 'batch-kill-effects');
  const published = await publish(local, table, 240, () => ({ ms: 100 + Math.floor(random() * 400) }));
  const allSucceeded = async () =>
    (await scanAll(local.dynamo, local.tables.jobs)).filter((r) => r.state === 'succeeded').length === published.length;
  const killing = killHolders(local, { most: 5, pauseMs: () => 600 + Math.floor(random() * 900), random, done: allSucceeded }, () =>
    scanAll(local.dynamo, local.tables.jobs),
  );
  let kills: HeldAtKill[] | undefined;
  const killed = killing.then(
    (k) => {
      kills = k;
    },
    (error: unknown) => {
      kills = [];
      throw error;
    },
  );
  expect(await drained(local, published, () => kills !== undefined)).toBe(true);
  await killed;
  await local.stopDispatchers();
  expect(kills?.length).toBe(5);
  const queues = new SqsQueueClient(local.sqs);
  const audit = await auditStack(local, { published, effectsTable: table, depth: (url) => queues.depth(url) });
  expect(audit).toMatchObject({ succeeded: 240, lost: [], completedTwice: [] });
  expect(audit.effects).toMatchObject({ once: 240, overApplied: [], missing: [] });
  // Each kill hit jobs in flight (claimed, gathering or in a call): each was started again, or ended by
  // the write its killed holder had sent before it froze (landed after the table was read); its effect still once.
  const records = new Map((await scanAll(local.dynamo, local.tables.jobs)).map((r) => [String(r.jobId), r as unknown as JobRecord]));
  const startsOf = (jobId: string) => records.get(jobId)?.history.filter((h) => h.what === 'started' || h.what === 'took-over').length ?? 0;
  const endedBy = (jobId: string, pid: number) =>
    records.get(jobId)?.history.some((h) => h.what === 'succeeded' && (h.worker ?? '').endsWith(`-${pid}`)) ?? false;
  const hit = (kills ?? []).flatMap((k) => k.jobIds.map((jobId) => ({ jobId, pid: k.pid })));
  expect(hit.filter(({ jobId, pid }) => startsOf(jobId) < 2 && !endedBy(jobId, pid))).toEqual([]);
  expect(hit.filter(({ jobId }) => startsOf(jobId) >= 2).length).toBeGreaterThan(0);
  const sizes = await callsOf(local, table);
  expect((audit.effects?.bodies ?? 0) / sizes.length).toBeGreaterThan(2);
  if (process.env.SHOW_CALLS)
    console.log(JSON.stringify({ calls: sizes.length, bodies: audit.effects?.bodies, restarted: audit.restartedJobs, hit: hit.length }));
}, 400_000);
