/**
 * What fleet-wide limits cost: DynamoDB write and read units and SQS requests per task, measured
 * on the emulators by SDK middleware (every HTTP attempt counted; dynalite meters ConsumedCapacity
 * with DynamoDB's rules).
 *
 *   npm run bench:limits -- [--tasks N] [--json]
 *
 * Cases, each N no-op jobs (10 ms) worked by 4 dispatchers with `full` tracking: no limits (the
 * baseline); limits that never bind (concurrency 10,000 and 100,000 a second: the reservation's
 * own cost); a concurrency limit of 3 that binds; a rate of 20 a second that binds.
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
const DISPATCHERS = 4;

const CASES = [
  { name: 'no limits', limits: undefined },
  { name: 'limits that never bind', limits: '{ concurrency: 10000, perSecond: 100000 }' },
  { name: 'concurrency 3 (binds)', limits: '{ concurrency: 3 }' },
  { name: '20 a second (binds)', limits: '{ perSecond: 20, burst: 2 }' },
] as const;

async function measure(
  c: (typeof CASES)[number],
  emulators: { sqsEndpoint: string; dynamodbEndpoint: string },
  workDir: string,
  run: number,
) {
  const credentials = { accessKeyId: 'bench', secretAccessKey: 'bench' };
  const sqsMeter: Meter = newMeter();
  const dynamoMeter: Meter = newMeter();
  const sqs = meter(new SQSClient({ region: 'us-east-1', endpoint: emulators.sqsEndpoint, credentials }), sqsMeter);
  const dynamo = meter(new DynamoDBClient({ region: 'us-east-1', endpoint: emulators.dynamodbEndpoint, credentials }), dynamoMeter);
  const dir = join(workDir, `case-${run}`);
  mkdirSync(join(dir, 'tasks'), { recursive: true });
  writeFileSync(
    join(dir, 'tasks', 'noop.ts'),
    `export default { name: 'noop', queue: 'work', timeLimitSeconds: 5, ${c.limits ? `limits: ${c.limits}, ` : ''}run: () => new Promise((r) => setTimeout(r, 10)) };`,
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
  await provisioned.publisher.publishBatch(Array.from({ length: tasks }, (_, i) => ({ task: 'noop', payload: { i } })));
  const start = { sqs: total(sqsMeter), writes: dynamoMeter.writeUnits, reads: dynamoMeter.readUnits, requests: total(dynamoMeter) };
  let succeeded = 0;
  let deferred = 0;
  const runtimes = Array.from({ length: DISPATCHERS }, () =>
    provisioned.dispatcher({
      dynamo,
      logger: silentLogger,
      observer: {
        onBatch: (r) => {
          succeeded += r.jobs.filter((j) => j.outcome === 'succeeded').length;
          deferred += r.jobs.filter((j) => j.limited).length;
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
    for (const [i, c] of CASES.entries()) results.push(await measure(c, emulators, workDir, i + 1));
  } finally {
    await emulators.stop();
  }
  if (json) {
    printResults({ bench: 'limits', dispatchers: DISPATCHERS, tracking: 'full', results });
    return;
  }
  const header = ['case', 'seconds', 'deferrals/task', 'SQS req/task', 'DynamoDB req/task', 'WCU/task', 'RCU/task'];
  const rows = results.map((r) => [
    r.case,
    r.seconds,
    r.deferralsPerTask,
    r.sqsRequestsPerTask,
    r.dynamoRequestsPerTask,
    r.writeUnitsPerTask,
    r.readUnitsPerTask,
  ]);
  printTable(header, rows);
}

runBenchmark(main);
