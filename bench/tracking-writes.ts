/**
 * DynamoDB write units per task, per tracking mode, measured on dynalite (which reports
 * ConsumedCapacity with DynamoDB's rules: 1 WCU per KB written, rounded up per item).
 *
 *   npx tsx bench/tracking-writes.ts [--tasks N] [--json]
 *
 * For each mode it publishes N no-op tasks through the library (full mode also records each as
 * `queued`), runs the real dispatcher (worker threads) until they settle, and reads the units
 * the job and stats stores consumed. A second pass runs tasks that fail once and then succeed. A
 * last one publishes no-op tasks with a 1 s delay to a `full` queue: the publisher's one `scheduled`
 * write per delayed publish (issue 25) is its "queued" column, and the dispatcher then claims over
 * that record. The last publishes 500-byte payloads, which the claim keeps on the record
 * (`tracking.keepPayloadBytes`): what keeping a payload costs.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import type { TrackingMode } from '../lib/config/app-config';
import { startEmulators } from '../lib/local/emulators';
import { silentLogger } from '../lib/ports';

import { oneQueueVersion } from './one-queue';
import { printTable } from './prices';
import { printResults } from './results';

const args = process.argv.slice(2);
const json = args.includes('--json');
const tasks = Number(args[args.indexOf('--tasks') + 1] ?? 200) || 200;

const TASKS_DIR = {
  'noop.ts': "export default { name: 'noop', queue: 'work', timeLimitSeconds: 5, run() {} };",
  'flaky.ts':
    "export default { name: 'flaky', queue: 'work', timeLimitSeconds: 5, maxRetries: 2, backoff: { baseSeconds: 0, capSeconds: 0 }, run(_p, ctx) { if (ctx.attempt < 2) throw new Error('once'); } };",
};

async function measure(
  mode: TrackingMode,
  task: 'noop' | 'flaky',
  sqs: SQSClient,
  dynamo: DynamoDBClient,
  workDir: string,
  run: number,
  delaySeconds = 0,
  /** Pads each payload's JSON to about this many bytes (0: a small one), to show what keeping it costs. */
  payloadBytes = 0,
) {
  const provisioned = await oneQueueVersion({ workDir, run, version: `r${run}`, mode, sqs, dynamo });
  const options = delaySeconds > 0 ? { delaySeconds } : {};
  const payload = () => {
    const small = { at: Date.now() };
    return payloadBytes > 0 ? { ...small, pad: 'x'.repeat(Math.max(0, payloadBytes - JSON.stringify(small).length - 10)) } : small;
  };
  await provisioned.publisher.publishBatch(Array.from({ length: tasks }, () => ({ task, payload: payload(), options })));
  const { jobs, stats } = provisioned;
  const queuedUnits = jobs.capacity.writeUnits;
  let settled = 0;
  let batches = 0;
  const runtime = provisioned.dispatcher({
    logger: silentLogger,
    observer: {
      onBatch: (r) => {
        batches += 1;
        settled += r.jobs.filter((j) => j.outcome === 'succeeded').length;
      },
    },
  });
  const stop = new AbortController();
  const running = runtime.invoke(Date.now() + 600_000, stop.signal);
  while (settled < tasks) await new Promise((resolve) => setTimeout(resolve, 20));
  stop.abort();
  await running;
  await runtime.close();
  const dispatcherJobUnits = jobs.capacity.writeUnits - queuedUnits;
  return {
    mode,
    task,
    delaySeconds,
    payloadBytes,
    tasks,
    batches,
    queuedWriteUnitsPerTask: round(queuedUnits / tasks),
    jobWriteUnitsPerTask: round(dispatcherJobUnits / tasks),
    statsWriteUnitsPerTask: round(stats.capacity.writeUnits / tasks),
    totalWriteUnitsPerTask: round((jobs.capacity.writeUnits + stats.capacity.writeUnits) / tasks),
  };
}

const round = (n: number) => Math.round(n * 1000) / 1000;

async function main() {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const emulators = await startEmulators();
  const credentials = { accessKeyId: 'bench', secretAccessKey: 'bench' };
  const sqs = new SQSClient({ region: 'us-east-1', endpoint: emulators.sqsEndpoint, credentials });
  const dynamo = new DynamoDBClient({ region: 'us-east-1', endpoint: emulators.dynamodbEndpoint, credentials });
  const workDir = mkdtempSync(join(tmpdir(), 'tw-bench-writes-'));
  const tasksDir = join(workDir, 'tasks');
  mkdirSync(tasksDir);
  for (const [file, source] of Object.entries(TASKS_DIR)) writeFileSync(join(tasksDir, file), source);
  const results = [];
  let run = 0;
  try {
    for (const task of ['noop', 'flaky'] as const) {
      for (const mode of ['full', 'failures', 'off'] as const) results.push(await measure(mode, task, sqs, dynamo, workDir, ++run));
    }
    // Delayed publishes: one `scheduled` record each, written by the publisher (none for immediate ones).
    results.push(await measure('full', 'noop', sqs, dynamo, workDir, ++run, 1));
    // A 500-byte payload, kept on the record by its claim (tracking.keepPayloadBytes 512, the default).
    results.push(await measure('full', 'noop', sqs, dynamo, workDir, ++run, 0, 500));
  } finally {
    sqs.destroy();
    dynamo.destroy();
    await emulators.stop();
  }
  if (json) {
    printResults({ bench: 'tracking-writes', tasksPerRun: tasks, results });
    return;
  }
  const header = ['mode', 'task', 'publisher WCU/task', 'dispatcher job WCU/task', 'stats WCU/task', 'total WCU/task', 'batches'];
  const rows = results.map((r) => [
    r.mode,
    `${r.task === 'noop' ? 'succeeds' : 'fails once'}${r.delaySeconds > 0 ? `, delayed ${r.delaySeconds} s` : ''}${r.payloadBytes > 0 ? `, ${r.payloadBytes} B payload kept` : ''}`,
    r.queuedWriteUnitsPerTask,
    r.jobWriteUnitsPerTask,
    r.statsWriteUnitsPerTask,
    r.totalWriteUnitsPerTask,
    r.batches,
  ]);
  printTable(header, rows);
}

void main().catch((error) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
