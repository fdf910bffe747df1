/**
 * Batch tasks under SIGKILLs, on the emulators: three dispatcher processes run `effect-batch` (calls
 * of up to 25 jobs of one account, each item's effect fenced by its own token) while a seeded
 * schedule kills one at a random moment every 0.6–1.5 s, and the stack starts a replacement for
 * each. Read from the jobs table and the effects table: every job succeeded once, each item's
 * effect applied exactly once, no call mixed accounts or passed 25 items, and calls did gather
 * several items.
 */
import { SqsQueueClient } from '../../lib/adapters/sqs';
import { type LocalStack, startLocalStack } from '../../lib/local/dev';
import { seededRandom } from '../../lib/random';
import type { BatchEffectPayload } from '../chaos/fixtures/tasks/effect-batch';
import { auditStack, CHAOS_CONFIG, createEffectsTable, type Published, scanAll, until } from '../chaos/helpers/stage';

const JOBS = 240;
const ACCOUNTS = 3;
const KILLS = 5;

let stack: LocalStack | undefined;
afterEach(async () => {
  await stack?.stop();
  stack = undefined;
});

it('applies each item of a batch task once under dispatcher kills; calls hold one account and at most 25 items', async () => {
  const random = seededRandom(Number(process.env.CHAOS_SEED ?? 20_261_129));
  stack = await startLocalStack({ configFile: CHAOS_CONFIG, version: 'batches', dispatchers: 3, logLevel: 'ERROR' });
  const local = stack;
  const table = await createEffectsTable(local.dynamo, 'batch-kill-effects');
  const published: Published[] = [];
  for (let n = 0; n < JOBS; n += 30) {
    const wave = await Promise.all(
      Array.from({ length: Math.min(30, JOBS - n) }, (_, i) => {
        const payload: BatchEffectPayload = { table, account: `acct-${(n + i) % ACCOUNTS}`, ms: 100 + Math.floor(random() * 400) };
        return local.publisher.publish('effect-batch', payload);
      }),
    );
    published.push(...wave.map((p) => ({ jobId: p.jobId, task: 'effect-batch' })));
  }
  let kills = 0;
  const killing = (async () => {
    while (kills < KILLS) {
      await new Promise((resolve) => setTimeout(resolve, 600 + Math.floor(random() * 900)));
      const alive = local.dispatchers.filter((c) => c.exitCode === null && c.signalCode === null);
      const child = alive[Math.floor(random() * alive.length)];
      if (child?.kill('SIGKILL')) kills += 1;
    }
  })();
  const queues = new SqsQueueClient(local.sqs);
  const done = await until(
    async () => {
      if (kills < KILLS) return false;
      const records = await scanAll(local.dynamo, local.tables.jobs);
      const succeeded = records.filter((r) => r.state === 'succeeded' && published.some((p) => p.jobId === r.jobId)).length;
      if (succeeded < JOBS) return false;
      const d = await queues.depth(local.urls.queues.work as string);
      return d.visible + d.inFlight + d.delayed === 0;
    },
    180_000,
    1000,
  );
  await killing;
  await local.stopDispatchers();
  const audit = await auditStack(local, { published, effectsTable: table, depth: (url) => queues.depth(url) });
  expect({ done, kills }).toEqual({ done: true, kills: KILLS });
  expect(audit.lost).toEqual([]);
  expect(audit.completedTwice).toEqual([]);
  expect(audit.succeeded).toBe(JOBS);
  expect(audit.effects).toMatchObject({ once: JOBS, overApplied: [], missing: [] });
  const calls = (await scanAll(local.dynamo, table)).filter((e) => String(e.pk).startsWith('call#'));
  for (const call of calls) {
    expect(call.accounts).toEqual([call.key]);
    expect(Number(call.size)).toBeLessThanOrEqual(25);
  }
  if (process.env.SHOW_CALLS)
    console.log(
      JSON.stringify({
        calls: calls.length,
        bodies: audit.effects?.bodies,
        rerun: audit.effects?.rerunBodies,
        restarted: audit.restartedJobs,
        sizes: calls.map((c) => Number(c.size)),
      }),
    );
  // Calls gathered items (the bodies that ran, killed ones included, over the calls made).
  expect((audit.effects?.bodies ?? 0) / calls.length).toBeGreaterThan(2);
}, 300_000);
