/**
 * DynamoDB write units per task, per tracking mode, measured on dynalite (which reports
 * ConsumedCapacity with DynamoDB's rules: 1 WCU per KB written, rounded up per item).
 *
 *   npm run bench:tracking -- [--tasks N] [--json]
 *
 * For each mode it publishes N no-op tasks through the library (full mode also records each as
 * `queued`), runs the real dispatcher (worker threads) until they settle, and reads the units
 * the job and stats stores consumed. A second pass runs tasks that fail once and then succeed. A
 * last one publishes no-op tasks with a 1 s delay to a `full` queue: the publisher's one `scheduled`
 * write per delayed publish (issue 25) is its "queued" column, and the dispatcher then claims over
 * that record. Then 500-byte payloads, which the claim keeps on the record
 * (`tracking.keepPayloadBytes`): what keeping a payload costs. The last turns `listSucceeded` off.
 *
 * dynalite meters the table's own writes but not its indexes'. What the `byQueueState` index costs
 * is counted from the items themselves: each item still carrying its index key when the run ends
 * (a listed success, an archived job) cost one index write of its size (DynamoDB's rule: the item
 * plus 100 bytes, by the KB, rounded up; the size by dynalite's own `itemSize`). A job that passed
 * through `retrying` also wrote and then removed an entry there: not counted here.
 *
 *   npm run bench:tracking -- --json > bench/results/tracking.json && npm run bench:tables
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type AttributeValue, DynamoDBClient, paginateScan } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import type { TrackingMode } from '../lib/config/app-config';
import { startEmulators } from '../lib/local/emulators';
import { silentLogger } from '../lib/ports';

import { oneQueueVersion } from './one-queue';
import { printTable } from './prices';
import { printResults } from './results';
import { TRACKING_HEADER, trackingRow } from './tracking-rows';

const args = process.argv.slice(2);
const json = args.includes('--json');
const tasks = Number(args[args.indexOf('--tasks') + 1] ?? 200) || 200;

const TASKS_DIR = {
  'noop.ts': "export default { name: 'noop', queue: 'work', timeLimitSeconds: 5, run() {} };",
  'flaky.ts':
    "export default { name: 'flaky', queue: 'work', timeLimitSeconds: 5, maxRetries: 2, backoff: { baseSeconds: 0, capSeconds: 0 }, run(_p, ctx) { if (ctx.attempt < 2) throw new Error('once'); } };",
};

/** dynalite's own item sizing (DynamoDB's rules), which its ConsumedCapacity uses. */
const { itemSize } = require('dynalite/db') as { itemSize: (item: Record<string, AttributeValue>) => number };

/** DynamoDB's index entry overhead, per item, on top of its attributes. */
const INDEX_ENTRY_OVERHEAD_BYTES = 100;

/** The write units of the index entries the jobs table's items carry at the end (see the file's comment). */
async function indexEntryUnits(dynamo: DynamoDBClient, table: string): Promise<number> {
  let units = 0;
  for await (const page of paginateScan({ client: dynamo }, { TableName: table, FilterExpression: 'attribute_exists(queueState)' })) {
    for (const item of page.Items ?? []) units += Math.ceil((itemSize(item) + INDEX_ENTRY_OVERHEAD_BYTES) / 1024);
  }
  return units;
}

interface Options {
  readonly delaySeconds?: number;
  /** Pads each payload's JSON to about this many bytes (0: a small one), to show what keeping it costs. */
  readonly payloadBytes?: number;
  /** The queue's `listSucceeded`; the default (on for `full`) when absent. */
  readonly listSucceeded?: boolean;
}

async function measure(
  mode: TrackingMode,
  task: 'noop' | 'flaky',
  sqs: SQSClient,
  dynamo: DynamoDBClient,
  workDir: string,
  run: number,
  { delaySeconds = 0, payloadBytes = 0, listSucceeded }: Options = {},
) {
  const provisioned = await oneQueueVersion({
    workDir,
    run,
    version: `r${run}`,
    mode,
    sqs,
    dynamo,
    ...(listSucceeded === undefined ? {} : { listSucceeded }),
  });
  const listed = provisioned.bundle.config.queues[0]?.listSucceeded ?? false;
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
  const indexUnits = await indexEntryUnits(dynamo, provisioned.tables.jobs);
  return {
    mode,
    task,
    delaySeconds,
    payloadBytes,
    listSucceeded: listed,
    tasks,
    batches,
    queuedWriteUnitsPerTask: round(queuedUnits / tasks),
    jobWriteUnitsPerTask: round(dispatcherJobUnits / tasks),
    statsWriteUnitsPerTask: round(stats.capacity.writeUnits / tasks),
    indexWriteUnitsPerTask: round(indexUnits / tasks),
    totalWriteUnitsPerTask: round((jobs.capacity.writeUnits + stats.capacity.writeUnits + indexUnits) / tasks),
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
    results.push(await measure('full', 'noop', sqs, dynamo, workDir, ++run, { delaySeconds: 1 }));
    // A 500-byte payload, kept on the record by its claim (tracking.keepPayloadBytes 512, the default).
    results.push(await measure('full', 'noop', sqs, dynamo, workDir, ++run, { payloadBytes: 500 }));
    // Succeeded jobs not listed from the index (`listSucceeded: false`): what listing them costs is the difference.
    results.push(await measure('full', 'noop', sqs, dynamo, workDir, ++run, { listSucceeded: false }));
  } finally {
    sqs.destroy();
    dynamo.destroy();
    await emulators.stop();
  }
  if (json) {
    printResults({ bench: 'tracking', tasksPerRun: tasks, results });
    return;
  }
  printTable(TRACKING_HEADER, results.map(trackingRow));
}

void main().catch((error) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
