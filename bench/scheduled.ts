/**
 * What a job published to run later costs, beside the same job published to run now: DynamoDB
 * capacity units and requests, SQS requests, measured on the emulators (dynalite meters
 * ConsumedCapacity with DynamoDB's 1 KB rule) by SDK middleware that counts every HTTP attempt.
 *
 *   npm run bench:scheduled -- [--tasks N] [--json]
 *
 * Per tracking mode (`full`, `off`): N no-op jobs are published with `delaySeconds: 3600`; a real
 * dispatcher parks them (phase park); the clock moves an hour on and the sweep the scheduled
 * invocation runs sends them back (phase sweep); a dispatcher runs them (phase run). The same N
 * jobs published to run now are the baseline (phase run alone).
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { SqsQueueClient } from '../lib/adapters/sqs';
import { trackingFor } from '../lib/aws/wiring';
import { type Clock, systemClock } from '../lib/clock';
import type { TrackingMode } from '../lib/config/app-config';
import { sweepDue } from '../lib/invocation/parked-sweep';
import { startEmulators } from '../lib/local/emulators';
import { silentLogger } from '../lib/ports';
import type { JobStore } from '../lib/track/job-stores';
import { meter, newMeter, type Usage, usage, usageMinus, usagePer } from './meter';
import { oneQueueVersion } from './one-queue';
import { printTable, runBenchmark } from './prices';
import { printResults } from './results';

const args = process.argv.slice(2);
const json = args.includes('--json');
const tasks = Number(args[args.indexOf('--tasks') + 1] ?? 200) || 200;
const HOUR = 3_600_000;

type Phase = Usage;
const perJob = (p: Phase): Phase => usagePer(p, tasks);

async function measure(
  mode: TrackingMode,
  later: boolean,
  emulators: { sqsEndpoint: string; dynamodbEndpoint: string },
  workDir: string,
  run: number,
) {
  const credentials = { accessKeyId: 'bench', secretAccessKey: 'bench' };
  const sqsMeter = newMeter();
  const dynamoMeter = newMeter();
  const sqs = meter(new SQSClient({ region: 'us-east-1', endpoint: emulators.sqsEndpoint, credentials }), sqsMeter);
  const dynamo = meter(new DynamoDBClient({ region: 'us-east-1', endpoint: emulators.dynamodbEndpoint, credentials }), dynamoMeter);
  const provisioned = await oneQueueVersion({ workDir, run, version: `s${run}`, mode, sqs, dynamo, recordQueued: false });
  const { bundle } = provisioned;
  const clock = { shift: 0, now: () => Date.now() + clock.shift, sleep: systemClock.sleep };
  const start = usage(sqsMeter, dynamoMeter);
  await provisioned.publisher.publishBatch(
    Array.from({ length: tasks }, (_, i) => ({ task: 'noop', payload: { i }, options: later ? { delaySeconds: 3600 } : {} })),
  );
  const runUntil = async (what: 'scheduled' | 'succeeded', c: Clock) => {
    let done = 0;
    const runtime = provisioned.dispatcher({
      dynamo,
      logger: silentLogger,
      clock: c,
      observer: { onBatch: (r) => (done += r.jobs.filter((j) => j.outcome === what).length) },
    });
    const stop = new AbortController();
    const running = runtime.invoke(c.now() + 600_000, stop.signal);
    while (done < tasks) await new Promise((resolve) => setTimeout(resolve, 20));
    stop.abort();
    await running;
    await runtime.close();
  };
  let park: Phase | undefined;
  let sweep: Phase | undefined;
  if (later) {
    await runUntil('scheduled', clock);
    const parked = usage(sqsMeter, dynamoMeter);
    park = usageMinus(parked, start);
    clock.shift = HOUR;
    const jobs = trackingFor(bundle.config, provisioned.tables, { client: dynamo }).jobs as JobStore;
    const swept = await sweepDue(
      { jobs, queues: new SqsQueueClient(sqs), urls: provisioned.urls, clock, logger: silentLogger },
      clock.now() + 60_000,
    );
    if (swept.sent !== tasks) throw new Error(`the sweep sent ${swept.sent} of ${tasks}`);
    sweep = usageMinus(usage(sqsMeter, dynamoMeter), parked);
  }
  const beforeRun = usage(sqsMeter, dynamoMeter);
  await runUntil('succeeded', clock);
  const ran = usageMinus(usage(sqsMeter, dynamoMeter), beforeRun);
  sqs.destroy();
  dynamo.destroy();
  return { mode, later, ...(park ? { park: perJob(park) } : {}), ...(sweep ? { sweep: perJob(sweep) } : {}), run: perJob(ran) };
}

async function main() {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const emulators = await startEmulators();
  const workDir = mkdtempSync(join(tmpdir(), 'tw-bench-scheduled-'));
  mkdirSync(join(workDir, 'tasks'));
  writeFileSync(join(workDir, 'tasks', 'noop.ts'), "export default { name: 'noop', queue: 'work', timeLimitSeconds: 5, run() {} };");
  const results = [];
  let run = 0;
  try {
    for (const mode of ['full', 'off'] as const) {
      for (const later of [false, true]) results.push(await measure(mode, later, emulators, workDir, ++run));
    }
  } finally {
    await emulators.stop();
  }
  if (json) {
    printResults({ bench: 'scheduled', tasksPerRun: tasks, delaySeconds: 3600, results });
    return;
  }
  const header = ['tracking', 'published', 'phase', 'SQS req/job', 'DynamoDB req/job', 'WCU/job', 'RCU/job'];
  const rows = results.flatMap((r) =>
    (['park', 'sweep', 'run'] as const)
      .filter((phase) => r[phase as keyof typeof r] !== undefined)
      .map((phase) => {
        const p = r[phase as keyof typeof r] as Phase;
        return [r.mode, r.later ? 'in 1 hour' : 'now', phase, p.sqsRequests, p.dynamoRequests, p.writeUnits, p.readUnits];
      }),
  );
  printTable(header, rows);
}

runBenchmark(main);
