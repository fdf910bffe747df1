/**
 * Ordered keys on the emulators, dispatchers as processes running the real Lambda handler, one of
 * them SIGKILLed as the events done pass 20 and 50 % (`taskworker dev` replaces it): accounts' ledger events published in
 * order, 5 % failing at their first attempt (test/chaos/fixtures/tasks/ledger-apply.ts). Read from
 * the jobs' own log in the effects table (each run's start and end; a killed run ended at its
 * process's kill) and the jobs table. `ORDERED_ACCOUNTS` × `ORDERED_EVENTS` sets the size (the
 * issue's 100 × 100 runs the same test; CI runs 20 × 15).
 */

import { DISPATCHER_DEFAULTS } from '../../lib/config/app-config';
import { type LocalStack, startLocalStack } from '../../lib/local/dev';
import { orderTag } from '../../lib/settle/key-order';
import type { JobRecord } from '../../lib/track/job-record';
import { killAtProgress, type LoggedRun, runsOf } from '../chaos/helpers/kills';
import { CHAOS_CONFIG, createEffectsTable, scanAll, until } from '../chaos/helpers/stage';

const ACCOUNTS = Number(process.env.ORDERED_ACCOUNTS ?? 20);
const EVENTS = Number(process.env.ORDERED_EVENTS ?? 15);
/**
 * A dispatcher SIGKILLed as the share of events done first passes each. Paced by the work, not a
 * clock: a timer's kills missed a run that ended early on a quiet machine. Each account's events
 * run one after another, 100 ms each at least, so the last half takes several polls. Each kill
 * stalls the accounts whose turns it held until their leases lapse, so two (not the four,
 * which ORDERED_KILLS=4 runs) keep the suite near half a minute.
 */
const KILL_AT = process.env.ORDERED_KILLS === '4' ? [0.1, 0.3, 0.5, 0.7] : [0.2, 0.5];
/** A run's longest life: ledger-apply's 3 s time limit and the kill grace (a body that outlasts it on a loaded machine is terminated unended). */
const RUN_LIMIT_MS = 3_000 + DISPATCHER_DEFAULTS.killGraceMs;

let stack: LocalStack | undefined;
afterEach(async () => {
  await stack?.stop();
  stack = undefined;
});

type Run = LoggedRun<{ account: string; n: number }>;

it('accounts’ events, 5 % failing once, dispatchers SIGKILLed at random: per account every start in publish order, no two runs of an account at once', async () => {
  stack = await startLocalStack({ configFile: CHAOS_CONFIG, version: 'ordered', dispatchers: 4, logLevel: 'ERROR' });
  const local = stack;
  const table = await createEffectsTable(local.dynamo, 'ordered-effects');
  const accounts = Array.from({ length: ACCOUNTS }, (_, a) => `acct-${a}`);
  // Every 20th event fails once, spread over the accounts.
  const failsOnce = (a: number, n: number) => (a * EVENTS + n) % 20 === 7;
  const ids: string[] = [];
  // Ten events of each account at a time, the accounts interleaved: one account's publishes in order.
  for (let from = 0; from < EVENTS; from += 10) {
    const published = await Promise.all(
      accounts.map((account, a) =>
        local.publisher.publishBatch(
          Array.from({ length: Math.min(10, EVENTS - from) }, (_, i) => ({
            task: 'ledger-apply',
            payload: { table, account, n: from + i, ms: 100, ...(failsOnce(a, from + i) ? { failOnce: true } : {}) },
            options: { key: account },
          })),
        ),
      ),
    );
    ids.push(...published.flat().map((p) => p.jobId));
  }
  // One read per account (a scan of the jobs table every poll would hold the emulator's DynamoDB
  // from the dispatchers).
  const jobs = local.jobs;
  const eventsDone = async () =>
    (await Promise.all(accounts.map((a) => jobs.keyOrder('ledger-apply', a)))).reduce((sum, o) => sum + Math.min(o.next - 1, EVENTS), 0);
  const killer = killAtProgress(local, async () => (await eventsDone()) / (ACCOUNTS * EVENTS), KILL_AT, 250);
  const killedAt = killer.killedAt;
  const records = async () =>
    (await scanAll(local.dynamo, local.tables.jobs)).filter((r) => ids.includes(String(r.jobId))) as unknown as JobRecord[];
  // Done when every account's turn is past its last event.
  let done = false;
  try {
    done = await until(async () => (await eventsDone()) === ACCOUNTS * EVENTS, 1_500_000, 3_000);
  } finally {
    await killer.stop();
  }
  if (!done) {
    const left = (await records()).filter((r) => r.state !== 'succeeded');
    const by = new Map<string, number>();
    for (const r of left) by.set(r.state, (by.get(r.state) ?? 0) + 1);
    const orders = (await scanAll(local.dynamo, local.tables.jobs)).filter((r) => String(r.jobId).includes(' order ')).slice(0, 5);
    throw new Error(
      `not all succeeded (${killer.kills()} kills): ${JSON.stringify([...by])} first left ${JSON.stringify(left.slice(0, 3).map((r) => r.history.slice(-3)))} orders ${JSON.stringify(orders)}`,
    );
  }
  expect(killer.kills()).toBe(KILL_AT.length);
  const runs: Run[] = runsOf(await scanAll(local.dynamo, table), killedAt, RUN_LIMIT_MS);
  for (const account of accounts) {
    const mine = runs.filter((r) => r.account === account).sort((x, y) => x.start - y.start);
    // Start order (a retry's or a killed run's rerun folded into its job's) is publish order.
    const starts = mine.map((r) => r.n).filter((n, i, all) => i === 0 || all[i - 1] !== n);
    expect({ account, starts }).toEqual({ account, starts: Array.from({ length: EVENTS }, (_, n) => n) });
    // No run of the account began before the one before it had ended (or been killed).
    const overlaps = mine.flatMap((r, i) => (i > 0 && r.start < (mine[i - 1] as Run).end ? [{ before: mine[i - 1], run: r }] : []));
    expect({ account, overlaps }).toEqual({ account, overlaps: [] });
  }
  // The failing events ran twice (their key held through the retry); every job ended succeeded.
  const failing = accounts.flatMap((_, a) => Array.from({ length: EVENTS }, (_, n) => n).filter((n) => failsOnce(a, n))).length;
  expect(failing).toBeGreaterThan(0);
  const all = await records();
  expect(all.filter((r) => r.attempt >= 2).length).toBeGreaterThanOrEqual(failing);
  // Every key's line is empty and its turn is past its last event.
  const jobsTable = await scanAll(local.dynamo, local.tables.jobs);
  expect(jobsTable.filter((r) => String(r.jobId).includes(` tag ${orderTag('ledger-apply', '')}`))).toEqual([]);
  const orders = jobsTable.filter((r) => String(r.jobId).startsWith('ledger-apply order '));
  expect(orders).toHaveLength(ACCOUNTS);
  for (const o of orders) expect({ key: o.jobId, last: o.last, next: o.next }).toEqual({ key: o.jobId, last: EVENTS, next: EVENTS + 1 });
}, 1_800_000);
