/**
 * What an event costs per subscriber, on the emulators (fauxqs's SQS and SNS, dynalite metering
 * ConsumedCapacity by DynamoDB's 1 KB rule), counted by SDK middleware on the emitter's SNS client
 * and the dispatcher's SQS and DynamoDB clients.
 *
 *   npm run bench:events -- [--events N] [--json]
 *
 * One app, two queues (`a`, `b`), tracking `full`, one real dispatcher:
 * - a job: N no-op jobs published to `a`, the baseline every job costs anyway;
 * - one subscriber per queue: N events of `placed`, taken by one task on `a` and one on `b` (SNS
 *   delivers a copy to each queue; each runs as its subscriber's job straight from that message);
 * - three subscribers on one queue: N events of `shipped`, taken by three tasks on `a` (SNS
 *   delivers one copy; the dispatcher splits it into a job message per subscriber).
 * Each is per subscriber job and beside the baseline, with the SNS publishes at SNS's list price
 * (deliveries to SQS are free) and, from the jobs table, the time from the emit to each
 * subscriber's start.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SNSClient } from '@aws-sdk/client-sns';
import { DynamoJobStore } from '../lib/adapters/dynamo-job-store';
import { startEmulators } from '../lib/local/emulators';
import { provisionVersion } from '../lib/local/version';
import { silentLogger } from '../lib/ports';
import { buildTasksBundle } from '../lib/tasks/build';
import { loadTaskBundle } from '../lib/tasks/bundle';
import type { JobRecord } from '../lib/track/job-record';
import { subscriberJobId } from '../lib/wire/event';
import { meteredClients, newMeter, total, type Usage, usage, usageMinus, usagePer } from './meter';
import { PRICES, printTable, quantile, round, runBenchmark } from './prices';
import { printResults } from './results';

const args = process.argv.slice(2);
const json = args.includes('--json');
const at = args.indexOf('--events');
const EVENTS = at >= 0 ? Number(args[at + 1]) || 300 : 300;
/** SNS list price per million publish requests (64 KB each); deliveries to SQS queues cost nothing. */
const SNS_PER_MILLION_PUBLISHES = 0.5;

const TASKS: Record<string, { queue: string; on?: string }> = {
  noop: { queue: 'a' },
  'placed-a': { queue: 'a', on: 'placed' },
  'placed-b': { queue: 'b', on: 'placed' },
  'shipped-1': { queue: 'a', on: 'shipped' },
  'shipped-2': { queue: 'a', on: 'shipped' },
  'shipped-3': { queue: 'a', on: 'shipped' },
};

interface Case {
  readonly subscriberJobs: number;
  readonly perSubscriberJob: Usage & { readonly snsPublishes: number };
  readonly addedPerSubscriberJob: Usage & { readonly snsPublishes: number };
  readonly dollarsPerMillionEvents: number;
  readonly emitToStartMs: { readonly p50: number; readonly p99: number };
}

async function main() {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const emulators = await startEmulators();
  const workDir = mkdtempSync(join(tmpdir(), 'tw-bench-events-'));
  mkdirSync(join(workDir, 'tasks'));
  for (const [name, t] of Object.entries(TASKS)) {
    writeFileSync(
      join(workDir, 'tasks', `${name}.ts`),
      `export default { name: '${name}', queue: '${t.queue}', timeLimitSeconds: 5, ${t.on ? `on: '${t.on}', ` : ''}run() { return 1; } };`,
    );
  }
  const configFile = join(workDir, 'taskworker.config.json');
  writeFileSync(
    configFile,
    JSON.stringify({
      app: 'bench',
      tasksDir: 'tasks',
      queues: ['a', 'b'].map((name) => ({ name, priority: 1, visibilityTimeoutSeconds: 30, longPollSeconds: 0 })),
      dispatcher: { concurrency: 10 },
      events: [{ name: 'placed' }, { name: 'shipped' }],
    }),
  );
  const bundle = loadTaskBundle((await buildTasksBundle({ configFile, outFile: join(workDir, 'tasks.cjs') })).tasksFile);
  const clients = meteredClients(emulators);
  const { local, sqsMeter, dynamoMeter, sqs, dynamo, unmetered } = clients;
  const snsMeter = newMeter();
  const sns = clients.metered(new SNSClient({ ...local, endpoint: emulators.sqsEndpoint }), snsMeter);
  try {
    const provisioned = await provisionVersion({ bundle, version: 'e1', sqs, dynamo, sns, recordQueued: false });
    const runtime = provisioned.dispatcher({ dynamo, logger: silentLogger });
    const stop = new AbortController();
    const running = runtime.invoke(Date.now() + 3_600_000, stop.signal);
    const observer = new DynamoJobStore(provisioned.tables.jobs, { historyLimit: 20, retentionDays: 1 }, unmetered);
    const ended = async (ids: readonly string[]): Promise<JobRecord[]> => {
      for (;;) {
        const records = (await Promise.all(chunks(ids, 100).map((c) => observer.getMany(c)))).flat();
        if (records.length === ids.length && records.every((r) => r.state === 'succeeded')) return records;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    };
    const now = () => ({ ...usage(sqsMeter, dynamoMeter), snsPublishes: total(snsMeter) });
    const measure = async (work: () => Promise<string[]>) => {
      const before = now();
      const ids = await work();
      const records = await ended(ids);
      // The dispatcher's last settle (deletes, stats) lands a moment after the record.
      await new Promise((resolve) => setTimeout(resolve, 1500));
      const after = now();
      return { cost: { ...usageMinus(after, before), snsPublishes: after.snsPublishes - before.snsPublishes }, records };
    };
    const baseline = await measure(async () =>
      (await provisioned.publisher.publishBatch(Array.from({ length: EVENTS }, (_, i) => ({ task: 'noop', payload: { i } })))).map(
        (p) => p.jobId,
      ),
    );
    const base = { ...usagePer(baseline.cost, EVENTS, 4), snsPublishes: 0 };
    const emitCase = async (event: string, subscribers: readonly string[]): Promise<Case> => {
      const emittedAt = new Map<string, number>();
      const { cost, records } = await measure(async () => {
        const ids: string[] = [];
        for (let i = 0; i < EVENTS; i++) {
          const id = `${event}-${i}`;
          emittedAt.set(id, Date.now());
          await provisioned.publisher.emit(event, { i }, { id });
          ids.push(...subscribers.map((task) => subscriberJobId(id, task)));
        }
        return ids;
      });
      const n = EVENTS * subscribers.length;
      const per = { ...usagePer(cost, n, 4), snsPublishes: round(cost.snsPublishes / n, 4) };
      const added = {
        ...usagePer(usageMinus(cost, scale(base, n)), n, 4),
        snsPublishes: per.snsPublishes,
      };
      const waits = records.map((r) => (r.firstStartedAt ?? 0) - (emittedAt.get(r.event?.id ?? '') ?? 0)).sort((a, b) => a - b);
      const dollarsPerEvent =
        (cost.sqsRequests * PRICES.sqsPerMillionRequests +
          cost.writeUnits * PRICES.dynamoPerMillionWriteUnits +
          cost.readUnits * PRICES.dynamoPerMillionReadUnits +
          cost.snsPublishes * SNS_PER_MILLION_PUBLISHES) /
        1e6 /
        EVENTS;
      return {
        subscriberJobs: n,
        perSubscriberJob: per,
        addedPerSubscriberJob: added,
        dollarsPerMillionEvents: round(dollarsPerEvent * 1e6, 2),
        emitToStartMs: { p50: quantile(waits, 0.5), p99: quantile(waits, 0.99) },
      };
    };
    const onePerQueue = await emitCase('placed', ['placed-a', 'placed-b']);
    const splitOnOneQueue = await emitCase('shipped', ['shipped-1', 'shipped-2', 'shipped-3']);
    stop.abort();
    await running;
    await runtime.close();
    const document = {
      bench: 'events',
      events: EVENTS,
      perJob: base,
      onePerQueue,
      splitOnOneQueue,
      snsPerMillionPublishes: SNS_PER_MILLION_PUBLISHES,
    };
    if (json) {
      printResults(document);
      return;
    }
    const row = (what: string, u: Usage & { snsPublishes: number }) => [
      what,
      u.snsPublishes,
      u.sqsRequests,
      u.dynamoRequests,
      u.writeUnits,
      u.readUnits,
    ];
    printTable(
      ['per job', 'SNS publishes', 'SQS req', 'DynamoDB req', 'WCU', 'RCU'],
      [
        row('a job (no event)', base),
        row('subscriber, one per queue', onePerQueue.perSubscriberJob),
        row('  added by the event', onePerQueue.addedPerSubscriberJob),
        row('subscriber, 3 on one queue (split)', splitOnOneQueue.perSubscriberJob),
        row('  added by the event', splitOnOneQueue.addedPerSubscriberJob),
      ],
    );
    process.stdout.write(
      `\nemit → subscriber start: one per queue p50 ${onePerQueue.emitToStartMs.p50} ms, p99 ${onePerQueue.emitToStartMs.p99} ms; ` +
        `split p50 ${splitOnOneQueue.emitToStartMs.p50} ms, p99 ${splitOnOneQueue.emitToStartMs.p99} ms\n` +
        `a million events: $${onePerQueue.dollarsPerMillionEvents} (2 subscribers on 2 queues), $${splitOnOneQueue.dollarsPerMillionEvents} (3 on one queue)\n`,
    );
  } finally {
    clients.destroy();
    await emulators.stop();
  }
}

function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

function scale(u: Usage, n: number): Usage {
  return { sqsRequests: u.sqsRequests * n, dynamoRequests: u.dynamoRequests * n, writeUnits: u.writeUnits * n, readUnits: u.readUnits * n };
}

runBenchmark(main);
