/**
 * The simulation against reality: one loaded workload (steady, 0.7 of capacity) through the
 * simulation (bench/sim) and through real dispatchers (DispatcherRuntime: worker threads, the SQS
 * adapter, the SLA-aware selector) on fauxqs, with the same queues, tasks, arrival process and
 * seed, scaled down to a fleet this machine can run. Compares wait p50/p99 per queue and SQS
 * requests per task.
 *
 * The check runs the simulation with fauxqs's receive semantics ({@link FAUXQS_MODEL}: a message
 * ends every long poll waiting on its queue, short polls find everything) and fauxqs's loopback
 * latency, since that is what the real dispatchers run on here; the same run under SQS's own
 * semantics and in-region latency is printed beside it, as the prediction for AWS.
 *
 *   npm run bench:reality -- [--json] [--minutes 3] [--dispatchers 2] [--slots 5]
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { SqsQueueClient } from '../lib/adapters/sqs';
import { DispatcherRuntime } from '../lib/invocation/dispatcher-runtime';
import { startEmulators } from '../lib/local/emulators';
import { provisionVersion } from '../lib/local/version';
import { silentLogger } from '../lib/ports';
import type { BatchReport } from '../lib/settle/report';
import { buildTasksBundle } from '../lib/tasks/build';
import { loadTaskBundle } from '../lib/tasks/bundle';
import { meter, newMeter, total } from './meter';
import { quantile, round, runBenchmark } from './prices';
import { printResults } from './results';
import { type RunFigures, runSimulation, simConfig } from './sim/run';
import { FAUXQS_MODEL } from './sim/sqs';
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

/** fauxqs on loopback, in-process, as measured from the dispatchers: about 3 ms a short request. */
const LOCAL_LATENCY = { baseMs: 2.5, jitterMeanMs: 0.5 };

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
      queues: new SqsQueueClient(client),
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
    return {
      queue: q.name,
      started: waits.length,
      p50: round(quantile(waits, 0.5) / 1000),
      p90: round(quantile(waits, 0.9) / 1000),
      p99: round(quantile(waits, 0.99) / 1000),
    };
  });
  return { published, queues, sqsRequestsPerTask: round(total(counted) / Math.max(1, published), 4), requests: counted.requests };
}

/** Simulated runs of the same arrivals, each with its own draws (the selector's, the latencies'): the model's own spread. */
const SIM_RUNS = 8;
const QUANTILES = ['p50', 'p90', 'p99'] as const;
/** Waits this short are timer resolution on both sides: compared in absolute terms only. */
const RESOLUTION_SECONDS = 0.05;

const median = (xs: readonly number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? (s[(s.length - 1) / 2] as number) : ((s[s.length / 2 - 1] as number) + (s[s.length / 2] as number)) / 2;
};

async function main() {
  const began = Date.now();
  // The check: fauxqs's receive semantics and loopback latency, as the real dispatchers meet them.
  const runs: RunFigures[] = [];
  for (let seed = 1; seed <= SIM_RUNS; seed++) {
    runs.push(
      await runSimulation({
        workload,
        selector: 'sla-aware',
        seeds: [seed],
        arrivalSeed: SEED,
        queues: KALE_QUEUES,
        fleet,
        latency: LOCAL_LATENCY,
        sqsModel: FAUXQS_MODEL,
      }),
    );
  }
  // The prediction for AWS: SQS's semantics, in-region latency, the same arrivals.
  const seeds = Array.from({ length: SIM_RUNS }, (_, i) => i + 1);
  const aws = await runSimulation({ workload, selector: 'sla-aware', seeds, arrivalSeed: SEED, queues: KALE_QUEUES, fleet });
  const measured = await real();
  const diff = (a: number, b: number) => (b === 0 ? 0 : round((a - b) / b, 2));
  const queues = KALE_QUEUES.map((q) => {
    const r = measured.queues.find((x) => x.queue === q.name);
    const per = runs.map((run) => run.queues.find((x) => x.queue === q.name));
    const compare = (k: (typeof QUANTILES)[number]) => {
      const simulated = per.map((f) => f?.[k] ?? 0);
      const mid = round(median(simulated));
      const realValue = r?.[k] ?? 0;
      const range = [Math.min(...simulated), Math.max(...simulated)] as const;
      const tiny = Math.max(mid, realValue) < RESOLUTION_SECONDS;
      return {
        simulatedMedian: mid,
        simulatedRange: range,
        real: realValue,
        difference: tiny ? 0 : diff(realValue, mid),
        withinSimulatedRange: tiny || (realValue >= range[0] && realValue <= range[1]),
      };
    };
    const figures = { p50: compare('p50'), p90: compare('p90'), p99: compare('p99') };
    const a = aws.queues.find((x) => x.queue === q.name);
    return {
      queue: q.name,
      started: r?.started ?? 0,
      ...figures,
      predictedForAws: { p50: a?.p50 ?? 0, p90: a?.p90 ?? 0, p99: a?.p99 ?? 0 },
    };
  });
  const simulatedRequests = runs.map((run) => run.sqsRequestsPerTask);
  const requestsMedian = round(median(simulatedRequests), 4);
  const differences = queues.flatMap((q) => QUANTILES.map((k) => Math.abs(q[k].difference)));
  const doc = {
    benchmark: 'reality',
    command: 'npm run bench:reality -- --json',
    workload: { load: LOAD, minutes: MINUTES, fleet, simulatedRuns: SIM_RUNS },
    queues,
    sqsRequestsPerTask: {
      simulatedMedian: requestsMedian,
      simulatedRange: [Math.min(...simulatedRequests), Math.max(...simulatedRequests)],
      predictedForAws: aws.sqsRequestsPerTask,
      real: measured.sqsRequestsPerTask,
      difference: diff(measured.sqsRequestsPerTask, requestsMedian),
    },
    largestDifference: round(Math.max(...differences, Math.abs(diff(measured.sqsRequestsPerTask, requestsMedian))), 2),
    p50AndP90Within25Percent: queues.every((q) => Math.abs(q.p50.difference) <= 0.25 && Math.abs(q.p90.difference) <= 0.25),
    p99WithinSimulatedRange: queues.every((q) => q.p99.withinSimulatedRange),
    published: measured.published,
    simulatedRequests: runs[0]?.requests,
    realRequests: measured.requests,
    elapsedSeconds: Math.round((Date.now() - began) / 1000),
  };
  if (values.json) {
    printResults(doc);
    return;
  }
  const cell = (f: (typeof queues)[number]['p50']) => `${f.simulatedMedian} [${f.simulatedRange.join('–')}] vs ${f.real} (${f.difference})`;
  const lines = [
    `steady ${LOAD}, ${MINUTES} min, ${DISPATCHERS} dispatchers × ${SLOTS} slots: simulated (median [range] of ${SIM_RUNS} runs, fauxqs model) vs real (fauxqs), wait seconds`,
    ...queues.map((q) => `  ${q.queue.padEnd(14)} ${QUANTILES.map((k) => `${k} ${cell(q[k])}`).join('   ')}`),
    `  SQS requests per task ${requestsMedian} vs ${measured.sqsRequestsPerTask} (${doc.sqsRequestsPerTask.difference})`,
    `  predicted for AWS (SQS semantics, in-region latency): ${queues.map((q) => `${q.queue} p50 ${q.predictedForAws.p50} p99 ${q.predictedForAws.p99}`).join(', ')}; ${aws.sqsRequestsPerTask} requests per task`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

runBenchmark(main);
