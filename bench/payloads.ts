/**
 * What a large payload costs per job, and how long it takes from the publish call to the task's
 * start, on the emulators (fauxqs's SQS and S3, dynalite metering ConsumedCapacity by DynamoDB's
 * 1 KB rule), counted by SDK middleware on the publisher's and the dispatcher's clients.
 *
 *   npm run bench:payloads -- [--jobs N] [--json]
 *
 * One app, one queue tracked `full`, one real dispatcher. For each size (1 KB in the message, the
 * baseline; 300 KB, 1 MB, 5 MB and 10 MB through the bucket), N jobs published one at a time, each
 * waited for before the next (so a job's latency is its own, not a backlog's): the publish call's
 * time, the time from the call to the task's start (the jobs table's `firstStartedAt`), and the
 * requests per job — SQS, DynamoDB write and read units, and S3 PutObject, GetObject and
 * DeleteObject — priced at AWS's list prices, with the object's storage for the seconds it lived.
 * The task checks the payload it sees (size and SHA-256) against what was published.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { DynamoJobStore } from '../lib/adapters/dynamo-job-store';
import { startEmulators } from '../lib/local/emulators';
import { provisionVersion } from '../lib/local/version';
import { silentLogger } from '../lib/ports';
import { buildTasksBundle } from '../lib/tasks/build';
import { loadTaskBundle } from '../lib/tasks/bundle';
import type { JobRecord } from '../lib/track/job-record';
import { meteredClients, newMeter, type Usage, usage, usageMinus, usagePer } from './meter';
import { PRICES, printTable, quantile, round, runBenchmark } from './prices';
import { printResults } from './results';

const args = process.argv.slice(2);
const json = args.includes('--json');
const at = args.indexOf('--jobs');
const JOBS = at >= 0 ? Number(args[at + 1]) || 20 : 20;

/** S3 Standard list prices (us-east-1): requests per 1,000, storage per GB-month; DeleteObject and transfer within the region cost nothing. */
const S3_PRICES = { putPerThousand: 0.005, getPerThousand: 0.0004, storagePerGbMonth: 0.023 };
const SECONDS_A_MONTH = 30 * 86_400;

const SIZES: ReadonlyArray<{ readonly label: string; readonly bytes: number }> = [
  { label: '1 KB (in the message)', bytes: 1_000 },
  { label: '300 KB', bytes: 300_000 },
  { label: '1 MB', bytes: 1_000_000 },
  { label: '5 MB', bytes: 5_000_000 },
  { label: '10 MB (the most a claim check takes is 10 MiB)', bytes: 10_000_000 },
];

interface SizeResult {
  readonly label: string;
  readonly payloadBytes: number;
  readonly jobs: number;
  readonly claimChecked: boolean;
  readonly publishMs: { readonly p50: number; readonly p99: number };
  readonly publishToStartMs: { readonly p50: number; readonly p99: number };
  readonly perJob: Usage & { readonly s3Puts: number; readonly s3Gets: number; readonly s3Deletes: number };
  /** Seconds from the put to the delete (the object's life), p50. */
  readonly objectSeconds: number;
  readonly dollarsPerMillionJobs: number;
  readonly s3DollarsPerMillionJobs: number;
}

/** A JSON payload of about `bytes` bytes (a string of rows). */
function payloadOf(bytes: number, i: number): { i: number; rows: string[] } {
  const row = 'p'.repeat(998);
  return { i, rows: Array.from({ length: Math.max(1, Math.floor(bytes / 1_001)) }, () => row) };
}

async function main() {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const emulators = await startEmulators();
  const workDir = mkdtempSync(join(tmpdir(), 'tw-bench-payloads-'));
  mkdirSync(join(workDir, 'tasks'));
  writeFileSync(
    join(workDir, 'tasks', 'digest.ts'),
    `import { createHash } from 'node:crypto';
export default { name: 'digest', queue: 'a', timeLimitSeconds: 10, run(p) { return createHash('sha256').update(JSON.stringify(p)).digest('hex'); } };`,
  );
  const configFile = join(workDir, 'taskworker.config.json');
  writeFileSync(
    configFile,
    JSON.stringify({
      app: 'bench',
      tasksDir: 'tasks',
      queues: [{ name: 'a', priority: 1, visibilityTimeoutSeconds: 30, longPollSeconds: 1 }],
      dispatcher: { concurrency: 4 },
    }),
  );
  const bundle = loadTaskBundle((await buildTasksBundle({ configFile, outFile: join(workDir, 'tasks.cjs') })).tasksFile);
  const clients = meteredClients(emulators);
  const { local, sqsMeter, dynamoMeter, sqs, dynamo, unmetered } = clients;
  const s3Meter = newMeter();
  const s3 = clients.metered(new S3Client({ ...local, endpoint: emulators.sqsEndpoint }), s3Meter);
  const unmeteredS3 = new S3Client({ ...local, endpoint: emulators.sqsEndpoint });
  try {
    const provisioned = await provisionVersion({ bundle, version: 'p1', sqs, dynamo, s3, recordQueued: false });
    const runtime = provisioned.dispatcher({ dynamo, logger: silentLogger });
    const stop = new AbortController();
    const running = runtime.invoke(Date.now() + 3_600_000, stop.signal);
    const observer = new DynamoJobStore(provisioned.tables.jobs, { historyLimit: 20, retentionDays: 1 }, unmetered);
    const succeeded = async (id: string): Promise<JobRecord> => {
      for (;;) {
        const record = await observer.get(id);
        if (record?.state === 'succeeded') return record;
        if (record?.state === 'archived') throw new Error(`job ${id} was archived: ${record.lastError?.message}`);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    };
    const objectsLeft = async () =>
      (await unmeteredS3.send(new ListObjectsV2Command({ Bucket: provisioned.payloadBucket, Prefix: 'payloads/' }))).KeyCount ?? 0;
    const s3Count = (command: string) => s3Meter.requests[command] ?? 0;
    const results: SizeResult[] = [];
    for (const size of SIZES) {
      const before = { ...usage(sqsMeter, dynamoMeter), puts: s3Count('PutObjectCommand'), gets: s3Count('GetObjectCommand') };
      const deletesBefore = s3Count('DeleteObjectCommand');
      const publishMs: number[] = [];
      const toStart: number[] = [];
      const lives: number[] = [];
      let bytes = 0;
      for (let i = 0; i < JOBS; i++) {
        const payload = payloadOf(size.bytes, i);
        const text = JSON.stringify(payload);
        bytes = Buffer.byteLength(text);
        const called = Date.now();
        const { jobId } = await provisioned.publisher.publish('digest', payload);
        publishMs.push(Date.now() - called);
        const record = await succeeded(jobId);
        if (record.result !== JSON.stringify(createHash('sha256').update(text).digest('hex')))
          throw new Error(`job ${jobId} saw another payload than the one published`);
        toStart.push((record.firstStartedAt ?? 0) - called);
        lives.push((record.finishedAt ?? 0) - called);
      }
      // The dispatcher's settle (the message's delete, the object's delete, stats) lands a moment after the record.
      for (let waited = 0; waited < 10_000 && (await objectsLeft()) > 0; waited += 100) await new Promise((r) => setTimeout(r, 100));
      await new Promise((resolve) => setTimeout(resolve, 1500));
      const cost = usageMinus(usage(sqsMeter, dynamoMeter), before);
      const per = {
        ...usagePer(cost, JOBS, 4),
        s3Puts: round((s3Count('PutObjectCommand') - before.puts) / JOBS, 4),
        s3Gets: round((s3Count('GetObjectCommand') - before.gets) / JOBS, 4),
        s3Deletes: round((s3Count('DeleteObjectCommand') - deletesBefore) / JOBS, 4),
      };
      const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
      const objectSeconds = quantile(sorted(lives), 0.5) / 1000;
      const storage = per.s3Puts > 0 ? ((bytes / 1e9) * S3_PRICES.storagePerGbMonth * objectSeconds) / SECONDS_A_MONTH : 0;
      const s3Dollars = (per.s3Puts * S3_PRICES.putPerThousand + per.s3Gets * S3_PRICES.getPerThousand) / 1000 + storage;
      const dollars =
        (per.sqsRequests * PRICES.sqsPerMillionRequests +
          per.writeUnits * PRICES.dynamoPerMillionWriteUnits +
          per.readUnits * PRICES.dynamoPerMillionReadUnits) /
          1e6 +
        s3Dollars;
      results.push({
        label: size.label,
        payloadBytes: bytes,
        jobs: JOBS,
        claimChecked: per.s3Puts > 0,
        publishMs: { p50: quantile(sorted(publishMs), 0.5), p99: quantile(sorted(publishMs), 0.99) },
        publishToStartMs: { p50: quantile(sorted(toStart), 0.5), p99: quantile(sorted(toStart), 0.99) },
        perJob: per,
        objectSeconds: round(objectSeconds, 2),
        dollarsPerMillionJobs: round(dollars * 1e6, 2),
        s3DollarsPerMillionJobs: round(s3Dollars * 1e6, 2),
      });
    }
    const left = await objectsLeft();
    stop.abort();
    await running;
    await runtime.close();
    const document = { bench: 'payloads', jobsPerSize: JOBS, results, objectsLeftAfterwards: left, s3Prices: S3_PRICES };
    if (json) {
      printResults(document);
      return;
    }
    printTable(
      ['payload', 'publish p50 ms', 'publish→start p50 ms', 'p99 ms', 'SQS req', 'WCU', 'RCU', 'S3 put/get/delete', '$ per million jobs'],
      results.map((r) => [
        r.label,
        r.publishMs.p50,
        r.publishToStartMs.p50,
        r.publishToStartMs.p99,
        r.perJob.sqsRequests,
        r.perJob.writeUnits,
        r.perJob.readUnits,
        `${r.perJob.s3Puts}/${r.perJob.s3Gets}/${r.perJob.s3Deletes}`,
        r.dollarsPerMillionJobs,
      ]),
    );
    process.stdout.write(`\nobjects left in payloads/ afterwards: ${left}\n`);
  } finally {
    clients.destroy();
    unmeteredS3.destroy();
    await emulators.stop();
  }
}

runBenchmark(main);
