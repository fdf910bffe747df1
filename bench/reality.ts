/**
 * The simulation against reality: one loaded workload (steady, 0.7 of capacity) through the
 * simulation (bench/sim) and through real dispatchers (DispatcherRuntime: worker threads, the SQS
 * adapter, the SLA-aware selector) on fauxqs, with the same queues, tasks, arrival process and
 * seed, scaled down to a fleet this machine can run. Compares wait p50/p99 per queue and SQS
 * requests per task.
 *
 *   npm run bench:reality -- [--json] [--minutes 3] [--dispatchers 2] [--slots 5]
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { SqsQueueClient } from '../lib/adapters/sqs';
import { DispatcherRuntime } from '../lib/dispatching/runtime';
import type { BatchReport } from '../lib/dispatching/summary';
import { startEmulators } from '../lib/local/emulators';
import { provisionVersion } from '../lib/local/version';
import { silentLogger } from '../lib/ports';
import { buildTasksBundle } from '../lib/tasks/build';
import { loadTaskBundle } from '../lib/tasks/bundle';
import { meter, newMeter, total } from './meter';
import { round, runBenchmark } from './prices';
import { runSimulation, simConfig } from './sim/run';
import { KALE_QUEUES, meanTaskSeconds, PoissonArrivals, type Workload } from './sim/workloads';

const { values } = parseArgs({
  options: {
    json: { type: 'boolean', default: false },
    minutes: { type: 'string', default: '3' },
    dispatchers: { type: 'string', default: '2' },
    slots: { type: 'string', default: '5' },
  },
});
const MINUTES = Number(values.minutes);
const DISPATCHERS = Number(values.dispatchers);
const SLOTS = Number(values.slots);
const LOAD = 0.7;
const SEED = 1;
const workload: Workload = { name: `steady-${LOAD}`, description: 'steady', minutes: MINUTES, warmupMinutes: 0, profile: [[0, LOAD]] };
const fleet = { dispatchers: DISPATCHERS, concurrency: SLOTS, invocationSeconds: 300 };

/** fauxqs on loopback, in-process: about a millisecond a request. */
const LOCAL_LATENCY = { baseMs: 1, jitterMeanMs: 0.5 };

const quantile = (sorted: readonly number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? 0;

/** Task modules that sleep the run time drawn for them (`ms` in the payload), as the simulation's tasks do. */
function taskModules(dir: string): void {
  mkdirSync(join(dir, 'tasks'));
  for (const q of KALE_QUEUES) {
    writeFileSync(
      join(dir, 'tasks', `${q.task}.ts`),
      `export default { name: '${q.task}', queue: '${q.name}', timeLimitSeconds: ${q.timeLimitSeconds}, ` +
        'run: (p: { ms: number }, ctx: { signal: AbortSignal }) => new Promise<void>((resolve) => { const t = setTimeout(resolve, p.ms); ctx.signal.addEventListener("abort", () => { clearTimeout(t); resolve(); }); }) };\n',
    );
  }
}

async function real() {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const dir = mkdtempSync(join(tmpdir(), 'tw-bench-reality-'));
  taskModules(dir);
  const config = simConfig(KALE_QUEUES, 'sla-aware', fleet);
  writeFileSync(join(dir, 'taskworker.config.json'), JSON.stringify({ ...config, tasksDir: 'tasks' }));
  const { tasksFile } = await buildTasksBundle({ configFile: join(dir, 'taskworker.config.json'), outFile: join(dir, 'tasks.cjs') });
  const bundle = loadTaskBundle(tasksFile);
  const emulators = await startEmulators({});
  const credentials = { accessKeyId: 'local', secretAccessKey: 'local' };
  const admin = new SQSClient({ region: 'us-east-1', endpoint: emulators.sqsEndpoint, credentials });
  const { DynamoDBClient } = await import('@aws-sdk/client-dynamodb');
  const dynamo = new DynamoDBClient({ region: 'us-east-1', endpoint: emulators.dynamodbEndpoint, credentials });
  const { urls } = await provisionVersion({ bundle, version: 'v1', sqs: admin, dynamo });
  const counted = newMeter();
  const reports: BatchReport[] = [];
  const runtimes = Array.from({ length: DISPATCHERS }, (_, i) => {
    const client = meter(new SQSClient({ region: 'us-east-1', endpoint: emulators.sqsEndpoint, credentials }), counted);
    return new DispatcherRuntime({
      bundle,
      version: 'v1',
      urls,
      queues: new SqsQueueClient({ client }),
      logger: silentLogger,
      observer: { onBatch: (r) => reports.push(r) },
      workerId: `reality-${i}`,
    });
  });
  for (const r of runtimes) r.warm();
  const start = Date.now();
  const end = start + MINUTES * 60_000;
  const capacity = (fleet.dispatchers * fleet.concurrency) / meanTaskSeconds(KALE_QUEUES);
  const arrivals = KALE_QUEUES.map((q, i) => new PoissonArrivals(q, workload.profile, capacity, start, end, SEED * 1000 + i));
  const stop = new AbortController();
  const running = runtimes.map((r) => r.invoke(end + 60_000, stop.signal));
  let published = 0;
  // Publish each arrival at its time, as the simulated SQS makes it visible.
  for (;;) {
    const next = arrivals.reduce((best, a) => (a.peek() < best.peek() ? a : best));
    const at = next.peek();
    if (!Number.isFinite(at)) break;
    if (at > Date.now()) await new Promise((resolve) => setTimeout(resolve, at - Date.now()));
    const queue = KALE_QUEUES[arrivals.indexOf(next)]?.name as string;
    await admin.send(new SendMessageCommand({ QueueUrl: urls.queues[queue], MessageBody: next.take().body }));
    published += 1;
  }
  // Let the last ones run, then stop.
  const started = () => reports.reduce((n, r) => n + r.jobs.filter((j) => j.waitMs !== undefined).length, 0);
  const until = Date.now() + 60_000;
  while (started() < published && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 200));
  stop.abort();
  await Promise.all(running);
  await Promise.all(runtimes.map((r) => r.close()));
  admin.destroy();
  dynamo.destroy();
  await emulators.stop();
  const queues = KALE_QUEUES.map((q) => {
    const waits = reports
      .filter((r) => r.queue === q.name)
      .flatMap((r) => r.jobs)
      .filter((j) => j.waitMs !== undefined && j.jobId !== undefined)
      .map((j) => j.waitMs as number)
      .sort((a, b) => a - b);
    return { queue: q.name, started: waits.length, p50: round(quantile(waits, 0.5) / 1000), p99: round(quantile(waits, 0.99) / 1000) };
  });
  return { published, queues, sqsRequestsPerTask: round(total(counted) / Math.max(1, published), 4), requests: counted.requests };
}

async function main() {
  const began = Date.now();
  // The simulation models in-region AWS latency; fauxqs on loopback answers in about a millisecond.
  const sim = await runSimulation({ workload, selector: 'sla-aware', seeds: [SEED], queues: KALE_QUEUES, fleet, latency: LOCAL_LATENCY });
  const aws = await runSimulation({ workload, selector: 'sla-aware', seeds: [SEED], queues: KALE_QUEUES, fleet });
  const measured = await real();
  const diff = (a: number, b: number) => (b === 0 ? 0 : round((a - b) / b, 2));
  const queues = KALE_QUEUES.map((q) => {
    const s = sim.queues.find((x) => x.queue === q.name);
    const r = measured.queues.find((x) => x.queue === q.name);
    return {
      queue: q.name,
      simulated: { p50: s?.p50 ?? 0, p99: s?.p99 ?? 0 },
      simulatedAwsLatency: {
        p50: aws.queues.find((x) => x.queue === q.name)?.p50 ?? 0,
        p99: aws.queues.find((x) => x.queue === q.name)?.p99 ?? 0,
      },
      real: { p50: r?.p50 ?? 0, p99: r?.p99 ?? 0, started: r?.started ?? 0 },
      difference: { p50: diff(r?.p50 ?? 0, s?.p50 ?? 0), p99: diff(r?.p99 ?? 0, s?.p99 ?? 0) },
    };
  });
  const doc = {
    benchmark: 'reality',
    command: 'npm run bench:reality -- --json',
    workload: { load: LOAD, minutes: MINUTES, fleet },
    queues,
    sqsRequestsPerTask: {
      simulated: sim.sqsRequestsPerTask,
      simulatedAwsLatency: aws.sqsRequestsPerTask,
      real: measured.sqsRequestsPerTask,
      difference: diff(measured.sqsRequestsPerTask, sim.sqsRequestsPerTask),
    },
    published: measured.published,
    realRequests: measured.requests,
    elapsedSeconds: Math.round((Date.now() - began) / 1000),
  };
  if (values.json) {
    process.stdout.write(`${JSON.stringify(doc, null, 2)}\n`);
    return;
  }
  const lines = [
    `steady ${LOAD}, ${MINUTES} min, ${DISPATCHERS} dispatchers × ${SLOTS} slots: simulated vs real (fauxqs), wait seconds`,
    ...queues.map(
      (q) =>
        `  ${q.queue.padEnd(14)} p50 ${q.simulated.p50} vs ${q.real.p50} (${q.difference.p50})   p99 ${q.simulated.p99} vs ${q.real.p99} (${q.difference.p99})`,
    ),
    `  SQS requests per task ${doc.sqsRequestsPerTask.simulated} vs ${doc.sqsRequestsPerTask.real} (${doc.sqsRequestsPerTask.difference})`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

runBenchmark(main);
