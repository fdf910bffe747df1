/**
 * What keys cost and what a per-key limit gives a queue's small tenants:
 *
 *   npm run bench:keys -- [--jobs N] [--flood N] [--json]
 *
 * Cost per job (the emulators: dynalite meters ConsumedCapacity with DynamoDB's 1 KB rule, SDK
 * middleware counts every HTTP attempt; a real dispatcher in this process, N jobs per workload):
 * - `plain`: a job with no key and no limit (the baseline every cost is over);
 * - `keyed`: a job under `limits: { concurrency: 100, per: 'key' }`, ten keys — never over: the
 *   slot reserved and given back, and the look at the key's line when it is;
 * - `parked`: one key under `{ concurrency: 1, per: 'key' }` — nearly every job finds its key full,
 *   is parked in the key's line and sent when the one before it ends;
 * - `unique`: a `unique` task, every job its own key (the hold taken at publish);
 * - `in-turn`: an `ordered` task, every job its own key — each arrives at its key's turn: numbered
 *   at publish, tagged, run, the turn moved at its end;
 * - `ordered`: an `ordered` task, all on one key, published at once — the publisher sends the
 *   first and parks the others in the key's line, each sent when the one before it ends.
 *
 * Fairness (the simulation: the dispatcher's own code on the in-memory SQS and stores, a simulated
 * clock, one dispatcher of 24 slots): tenant A publishes `--flood` one-second jobs, then tenants B–J
 * 100 each, under `{ concurrency: 2, per: 'key', total: { concurrency: 20 } }`; B–J's wait from
 * publish to start with the flood ahead of them and without it, the most running per key and in
 * all, and how often a flood job was parked.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { resolveConfig } from '../lib/config/app-config';
import { queueProbes } from '../lib/dispatch/loop';
import { MemoryJobStore } from '../lib/fakes/memory-job-store';
import { MemoryLimitStore } from '../lib/fakes/memory-limits';
import { MemoryQueueService } from '../lib/fakes/memory-queue';
import { MemoryStatsStore } from '../lib/fakes/memory-stats-store';
import { createInvocation } from '../lib/invocation/invocation';
import { startEmulators } from '../lib/local/emulators';
import { silentLogger } from '../lib/ports';
import { seededRandom } from '../lib/random';
import { InlineExecutor } from '../lib/run/inline-executor';
import { createSelector } from '../lib/select/create-selector';
import type { JobOutcome } from '../lib/settle/report';
import { createRegistry } from '../lib/tasks/registry';
import { defineTask } from '../lib/tasks/task';
import { encodeEnvelope } from '../lib/wire/envelope';
import { meter, newMeter, type Usage, usage, usageMinus, usagePer } from './meter';
import { oneQueueVersion } from './one-queue';
import { PRICES, printTable, quantile, round, runBenchmark } from './prices';
import { printResults } from './results';
import { Simulation } from './sim/engine';

const args = process.argv.slice(2);
const json = args.includes('--json');
const option = (name: string, fallback: number) => (args.includes(name) ? Number(args[args.indexOf(name) + 1]) || fallback : fallback);
const jobs = option('--jobs', 100);
const flood = option('--flood', 10_000);
const SMALL = ['B', 'C', 'D', 'E', 'F', 'G', 'H', 'I', 'J'];
const EACH = 100;

const TASKS: Record<string, string> = {
  plain: "export default { name: 'plain', queue: 'work', timeLimitSeconds: 10, run() {} };",
  keyed: "export default { name: 'keyed', queue: 'work', timeLimitSeconds: 10, limits: { concurrency: 100, per: 'key' }, run() {} };",
  parked:
    "export default { name: 'parked', queue: 'work', timeLimitSeconds: 10, limits: { concurrency: 1, per: 'key' }, async run() { await new Promise((r) => setTimeout(r, 20)); } };",
  unique: "export default { name: 'unique', queue: 'work', timeLimitSeconds: 10, unique: { for: '10m' }, run() {} };",
  'in-turn': "export default { name: 'in-turn', queue: 'work', timeLimitSeconds: 10, ordered: true, run() {} };",
  ordered:
    "export default { name: 'ordered', queue: 'work', timeLimitSeconds: 10, ordered: true, async run() { await new Promise((r) => setTimeout(r, 20)); } };",
};

const WORKLOADS = ['plain', 'keyed', 'parked', 'unique', 'in-turn', 'ordered'] as const;
type Workload = (typeof WORKLOADS)[number];

async function measureCosts(emulators: { sqsEndpoint: string; dynamodbEndpoint: string }, workDir: string) {
  const credentials = { accessKeyId: 'bench', secretAccessKey: 'bench' };
  const sqsMeter = newMeter();
  const dynamoMeter = newMeter();
  const sqs = meter(new SQSClient({ region: 'us-east-1', endpoint: emulators.sqsEndpoint, credentials }), sqsMeter);
  const dynamo = meter(new DynamoDBClient({ region: 'us-east-1', endpoint: emulators.dynamodbEndpoint, credentials }), dynamoMeter);
  const provisioned = await oneQueueVersion({ workDir, run: 1, version: 'keys', mode: 'full', sqs, dynamo });
  const runUntil = async (task: string, outcome: JobOutcome, count: number) => {
    let done = 0;
    let parks = 0;
    const runtime = provisioned.dispatcher({
      dynamo,
      logger: silentLogger,
      observer: {
        onBatch: (r) => {
          done += r.jobs.filter((j) => j.task === task && j.outcome === outcome).length;
          parks += r.jobs.filter((j) => j.task === task && j.parked === 'key').length;
        },
      },
    });
    const stop = new AbortController();
    const running = runtime.invoke(Date.now() + 600_000, stop.signal);
    while (done < count) await new Promise((resolve) => setTimeout(resolve, 20));
    stop.abort();
    await running;
    await runtime.close();
    return parks;
  };
  const measure = async (workload: Workload) => {
    const start = usage(sqsMeter, dynamoMeter);
    const keyOf = (i: number) => (workload === 'keyed' ? `k${i % 10}` : workload === 'parked' || workload === 'ordered' ? 'one' : `u${i}`);
    for (let i = 0; i < jobs; i += 10) {
      await provisioned.publisher.publishBatch(
        Array.from({ length: Math.min(10, jobs - i) }, (_, j) => ({
          task: workload,
          payload: { i: i + j },
          ...(workload === 'plain' ? {} : { options: { key: keyOf(i + j) } }),
        })),
      );
    }
    const parks = await runUntil(workload, 'succeeded', jobs);
    return { workload, perJob: usagePer(usageMinus(usage(sqsMeter, dynamoMeter), start), jobs), parksPerJob: round(parks / jobs, 2) };
  };
  try {
    const measured = [];
    for (const w of WORKLOADS) measured.push(await measure(w));
    return measured;
  } finally {
    sqs.destroy();
    dynamo.destroy();
  }
}

/** The fairness scenario on the simulation: B–J's waits with `floodJobs` of tenant A ahead of them. */
async function fairness(floodJobs: number) {
  const sim = new Simulation();
  const config = resolveConfig({
    app: 'fair',
    queues: [{ name: 'work', priority: 1, visibilityTimeoutSeconds: 30 }],
    dispatcher: { concurrency: 24, timeoutSeconds: 900, settleMarginMs: 500, killGraceMs: 100 },
  });
  const sqs = new MemoryQueueService(sim, 50);
  const urls = { queues: { work: sqs.createQueue('work', { visibilityTimeoutSeconds: 30 }) }, archive: sqs.createQueue('archive') };
  const running = new Map<string, number>();
  const most = { all: 0, perKey: 0 };
  let all = 0;
  const startedAt = new Map<string, number>();
  const task = defineTask({
    name: 'sync',
    queue: 'work',
    timeLimitSeconds: 5,
    limits: { concurrency: 2, per: 'key', total: { concurrency: 20 } },
    async run(payload: { tenant: string }, ctx) {
      startedAt.set(ctx.jobId, sim.now());
      running.set(payload.tenant, (running.get(payload.tenant) ?? 0) + 1);
      all += 1;
      most.all = Math.max(most.all, all);
      most.perKey = Math.max(most.perKey, running.get(payload.tenant) ?? 0);
      await sim.sleep(1_000);
      running.set(payload.tenant, (running.get(payload.tenant) ?? 0) - 1);
      all -= 1;
    },
  });
  const registry = createRegistry([task], config);
  const random = seededRandom(7);
  const jobStore = new MemoryJobStore({ historyLimit: 50, retentionDays: 7 });
  const invocation = createInvocation({
    config,
    registry,
    queues: sqs,
    urls,
    executor: new InlineExecutor(registry, config.dispatcher.killGraceMs),
    selector: createSelector('reduced-lottery', { queues: config.queues, random, clock: sim, probes: queueProbes(sqs, urls) }),
    clock: sim,
    random,
    logger: silentLogger,
    workerId: 'bench',
    tracking: { version: 'v1', jobs: jobStore, stats: new MemoryStatsStore(), limits: new MemoryLimitStore() },
  });
  const publishedAt = new Map<string, number>();
  const send = async (tenant: string, i: number) => {
    const id = `${tenant}-${i}`;
    publishedAt.set(id, sim.now());
    await sqs.sendBatch(urls.queues.work, [{ id: '0', body: encodeEnvelope({ task: 'sync', id, key: tenant, payload: { tenant } }) }]);
  };
  for (let i = 0; i < floodJobs; i++) await send('A', i);
  for (const tenant of SMALL) for (let i = 0; i < EACH; i++) await send(tenant, i);
  const small = () => [...startedAt.keys()].filter((id) => !id.startsWith('A-')).length;
  const stop = new AbortController();
  const run = invocation.run({ deadline: sim.now() + 3_600_000, signal: stop.signal });
  await sim.runWhile(() => small() < SMALL.length * EACH, sim.now() + 3_600_000);
  stop.abort();
  await sim.runUntil(sim.now() + 10_000);
  await run;
  const waits = [...startedAt]
    .filter(([id]) => !id.startsWith('A-'))
    .map(([id, at]) => at - (publishedAt.get(id) as number))
    .sort((a, b) => a - b);
  const floodStarted = [...startedAt.keys()].filter((id) => id.startsWith('A-'));
  const parks = await Promise.all(
    Array.from(
      { length: Math.min(floodJobs, 1000) },
      async (_, i) => (await jobStore.get(`A-${i}`))?.history.filter((h) => h.what === 'waiting-key').length ?? 0,
    ),
  );
  return {
    floodJobs,
    smallJobs: waits.length,
    smallWaitMs: { p50: quantile(waits, 0.5), p95: quantile(waits, 0.95), max: waits.at(-1) ?? 0 },
    mostRunning: most,
    floodStartedMeanwhile: floodStarted.length,
    floodParkedPerJob: parks.length === 0 ? 0 : round(parks.reduce((a, n) => a + n, 0) / parks.length, 2),
  };
}

const dollarsPerMillion = (u: Usage) =>
  round(
    u.sqsRequests * PRICES.sqsPerMillionRequests +
      u.writeUnits * PRICES.dynamoPerMillionWriteUnits +
      u.readUnits * PRICES.dynamoPerMillionReadUnits,
    2,
  );

async function main() {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const emulators = await startEmulators();
  const workDir = mkdtempSync(join(tmpdir(), 'tw-bench-keys-'));
  mkdirSync(join(workDir, 'tasks'));
  for (const [name, source] of Object.entries(TASKS)) writeFileSync(join(workDir, 'tasks', `${name}.ts`), source);
  let measured: Awaited<ReturnType<typeof measureCosts>>;
  try {
    measured = await measureCosts(emulators, workDir);
  } finally {
    await emulators.stop();
  }
  const plain = measured.find((m) => m.workload === 'plain')?.perJob as Usage;
  const perRule = Object.fromEntries(
    measured
      .filter((m) => m.workload !== 'plain')
      .map((m) => {
        const more = usagePer(usageMinus(m.perJob, plain), 1);
        return [m.workload, { ...more, dollarsPerMillion: dollarsPerMillion(more), parksPerJob: m.parksPerJob }];
      }),
  );
  const quiet = await fairness(0);
  const flooded = await fairness(flood);
  const document = {
    bench: 'keys',
    node: process.version,
    jobsPerWorkload: jobs,
    prices: PRICES,
    workloads: measured.map((m) => ({ ...m, dollarsPerMillion: dollarsPerMillion(m.perJob) })),
    perRule,
    fairness: {
      limits: { perKey: 2, total: 20 },
      slots: 24,
      quiet,
      flooded,
      p95Ratio: round(flooded.smallWaitMs.p95 / Math.max(1, quiet.smallWaitMs.p95), 2),
    },
  };
  if (json) {
    printResults(document);
    return;
  }
  printTable(
    ['per job, over a plain one', 'SQS req', 'DynamoDB req', 'WCU', 'RCU', '$ per million', 'parks per job'],
    Object.entries(perRule).map(([k, u]) => [
      k,
      u.sqsRequests,
      u.dynamoRequests,
      u.writeUnits,
      u.readUnits,
      u.dollarsPerMillion,
      u.parksPerJob,
    ]),
  );
  printTable(
    ['B–J (100 jobs each)', 'p50 wait ms', 'p95 wait ms', 'max ms', 'most running (key / all)', 'flood parks per job'],
    [quiet, flooded].map((f) => [
      f.floodJobs === 0 ? 'no flood' : `${f.floodJobs} of tenant A ahead`,
      f.smallWaitMs.p50,
      f.smallWaitMs.p95,
      f.smallWaitMs.max,
      `${f.mostRunning.perKey} / ${f.mostRunning.all}`,
      f.floodParkedPerJob,
    ]),
  );
}

runBenchmark(main);
