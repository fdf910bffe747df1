/**
 * What fleet-wide limits cost: DynamoDB write and read units and SQS requests per task, measured
 * on the emulators by SDK middleware (every HTTP attempt counted; dynalite meters ConsumedCapacity
 * with DynamoDB's rules).
 *
 *   npm run bench:limits -- [--tasks N] [--json]
 *
 * Cases, each N no-op jobs (10 ms) worked by 4 dispatchers with `full` tracking: no limits (the
 * baseline); limits that never bind (concurrency 10,000 and 100,000 a second: the reservation's
 * own cost); a concurrency limit of 3 that binds; a rate of 20 a second that binds; and beside a
 * task a 429 paused (RateLimitedError): N/2 jobs of another task on the same queue, interleaved,
 * whose task is paused for the whole run — what holding them back costs the no-op jobs' throughput
 * (its seconds against the baseline's) and how often each held job is received; the last two
 * again with 200 ms jobs, where slots rather than receives bound the throughput. Each case runs
 * `--runs` times (default 3); the run with the median seconds is reported.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { startEmulators } from '../lib/local/emulators';
import { provisionVersion } from '../lib/local/version';
import { silentLogger } from '../lib/ports';
import { buildTasksBundle } from '../lib/tasks/build';
import { loadTaskBundle } from '../lib/tasks/bundle';
import { type Meter, meter, newMeter, total } from './meter';
import { printTable, round, runBenchmark } from './prices';
import { printResults } from './results';

const args = process.argv.slice(2);
const json = args.includes('--json');
const tasks = Number(args[args.indexOf('--tasks') + 1] ?? 200) || 200;
const runs = Number(args[args.indexOf('--runs') + 1] ?? 3) || 3;
const DISPATCHERS = 4;

interface Case {
  readonly name: string;
  readonly limits?: string;
  /** Jobs of a task paused (a 429's pause) for the whole run, published between the no-op jobs. */
  readonly pausedJobs?: number;
  /** How long each no-op job takes, ms. @defaultValue 10 (receive-bound: the dispatchers wait on SQS, not on slots) */
  readonly runMs?: number;
}

const CASES: readonly Case[] = [
  { name: 'no limits' },
  { name: 'limits that never bind', limits: '{ concurrency: 10000, perSecond: 100000 }' },
  { name: 'concurrency 3 (binds)', limits: '{ concurrency: 3 }' },
  { name: '20 a second (binds)', limits: '{ perSecond: 20, burst: 2 }' },
  { name: 'beside a task a 429 paused', pausedJobs: Math.ceil(tasks / 2) },
  // Jobs that take a while: the slots, not the receives, bound the throughput.
  { name: 'no limits, 200 ms jobs', runMs: 200 },
  { name: 'beside a task a 429 paused, 200 ms jobs', pausedJobs: Math.ceil(tasks / 2), runMs: 200 },
];

async function measure(c: Case, emulators: { sqsEndpoint: string; dynamodbEndpoint: string }, workDir: string, run: number) {
  const credentials = { accessKeyId: 'bench', secretAccessKey: 'bench' };
  const sqsMeter: Meter = newMeter();
  const dynamoMeter: Meter = newMeter();
  const sqs = meter(new SQSClient({ region: 'us-east-1', endpoint: emulators.sqsEndpoint, credentials }), sqsMeter);
  const dynamo = meter(new DynamoDBClient({ region: 'us-east-1', endpoint: emulators.dynamodbEndpoint, credentials }), dynamoMeter);
  const dir = join(workDir, `case-${run}`);
  mkdirSync(join(dir, 'tasks'), { recursive: true });
  writeFileSync(
    join(dir, 'tasks', 'noop.ts'),
    `export default { name: 'noop', queue: 'work', timeLimitSeconds: 5, ${c.limits ? `limits: ${c.limits}, ` : ''}run: () => new Promise((r) => setTimeout(r, ${c.runMs ?? 10})) };`,
  );
  // Never runs while the pause holds; were it run, it would meet the 429 again.
  writeFileSync(
    join(dir, 'tasks', 'paused-api.ts'),
    // RateLimitedError by name and fields, as a copy of the class from another bundle would be.
    `export default { name: 'paused-api', queue: 'work', timeLimitSeconds: 5, run: () => { throw Object.assign(new Error('429'), { name: 'RateLimitedError', retryAfterMs: 600000, scope: 'task' }); } };`,
  );
  writeFileSync(
    join(dir, 'config.json'),
    JSON.stringify({
      app: 'bench',
      tasksDir: 'tasks',
      queues: [{ name: 'work', priority: 1, visibilityTimeoutSeconds: 30, longPollSeconds: 0 }],
      dispatcher: { concurrency: 10 },
    }),
  );
  const { tasksFile } = await buildTasksBundle({ configFile: join(dir, 'config.json'), outFile: join(dir, 'tasks.cjs') });
  const provisioned = await provisionVersion({ bundle: loadTaskBundle(tasksFile), version: `l${run}`, sqs, dynamo, recordQueued: false });
  const paused = c.pausedJobs ?? 0;
  // The pause is in force before any dispatcher starts: each reads it at its invocation's start.
  if (paused > 0) await provisioned.controls.pause('task:paused-api', Date.now() + 600_000, Date.now());
  const every = paused > 0 ? Math.max(1, Math.floor(tasks / paused)) : Number.POSITIVE_INFINITY;
  const items = Array.from({ length: tasks }, (_, i) => [
    { task: 'noop', payload: { i } },
    ...(i % every === 0 && i / every < paused ? [{ task: 'paused-api', payload: { i } }] : []),
  ]).flat();
  for (let i = 0; i < items.length; i += 500) await provisioned.publisher.publishBatch(items.slice(i, i + 500));
  const start = { sqs: total(sqsMeter), writes: dynamoMeter.writeUnits, reads: dynamoMeter.readUnits, requests: total(dynamoMeter) };
  let succeeded = 0;
  let deferred = 0;
  let held = 0;
  const runtimes = Array.from({ length: DISPATCHERS }, () =>
    provisioned.dispatcher({
      dynamo,
      logger: silentLogger,
      observer: {
        onBatch: (r) => {
          succeeded += r.jobs.filter((j) => j.outcome === 'succeeded').length;
          deferred += r.jobs.filter((j) => j.limited).length;
          held += r.jobs.filter((j) => j.heldBy !== undefined).length;
        },
      },
    }),
  );
  const began = Date.now();
  const stop = new AbortController();
  const running = runtimes.map((r) => r.invoke(Date.now() + 600_000, stop.signal));
  while (succeeded < tasks) await new Promise((resolve) => setTimeout(resolve, 20));
  const seconds = (Date.now() - began) / 1000;
  stop.abort();
  await Promise.all(running);
  await Promise.all(runtimes.map((r) => r.close()));
  sqs.destroy();
  dynamo.destroy();
  return {
    case: c.name,
    tasks,
    seconds: round(seconds, 1),
    deferralsPerTask: round(deferred / tasks),
    ...(paused > 0 ? { pausedJobs: paused, receivesPerHeldJob: round(held / paused) } : {}),
    sqsRequestsPerTask: round((total(sqsMeter) - start.sqs) / tasks),
    dynamoRequestsPerTask: round((total(dynamoMeter) - start.requests) / tasks),
    writeUnitsPerTask: round((dynamoMeter.writeUnits - start.writes) / tasks),
    readUnitsPerTask: round((dynamoMeter.readUnits - start.reads) / tasks),
  };
}

async function main() {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const emulators = await startEmulators();
  const workDir = mkdtempSync(join(tmpdir(), 'tw-bench-limits-'));
  const results = [];
  try {
    for (const [i, c] of CASES.entries()) {
      const measured = [];
      for (let run = 1; run <= runs; run++) measured.push(await measure(c, emulators, workDir, (i + 1) * 100 + run));
      measured.sort((a, b) => a.seconds - b.seconds);
      results.push({
        ...(measured[Math.floor((measured.length - 1) / 2)] as (typeof measured)[number]),
        runs: measured.map((m) => m.seconds),
      });
    }
  } finally {
    await emulators.stop();
  }
  if (json) {
    printResults({ bench: 'limits', dispatchers: DISPATCHERS, tracking: 'full', results });
    return;
  }
  const header = [
    'case',
    'seconds (runs)',
    'deferrals/task',
    'receives/held job',
    'SQS req/task',
    'DynamoDB req/task',
    'WCU/task',
    'RCU/task',
  ];
  const rows = results.map((r) => [
    r.case,
    `${r.seconds} (${r.runs.join(', ')})`,
    r.deferralsPerTask,
    r.receivesPerHeldJob ?? '—',
    r.sqsRequestsPerTask,
    r.dynamoRequestsPerTask,
    r.writeUnitsPerTask,
    r.readUnitsPerTask,
  ]);
  printTable(header, rows);
}

runBenchmark(main);
