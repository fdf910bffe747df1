/**
 * Load: N tasks through the local runtime (`taskworker dev`: fauxqs + dynalite in this process,
 * dispatcher processes running the real Lambda handler), then the books are checked against the
 * tables and queues, and each dispatcher's resident set is followed through the run.
 *
 *   npm run bench:load [-- --tasks 100000] [--dispatchers 4] [--json]
 *
 * Published as any SDK would (SendMessageBatch, no `queued` record), full job tracking: 97.5 %
 * succeed at once, 2 % fail once and then succeed, 0.4 % always fail (archived `exhausted`),
 * 0.1 % are not JSON (archived `malformed`). It prints progress to stderr, then a table (or JSON):
 * throughput, published = succeeded + archived from the jobs table, whether the stats table
 * agrees, and per dispatcher the peak RSS (VmHWM) and RSS by quarter of the run.
 */
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ScanCommand } from '@aws-sdk/client-dynamodb';
import { SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import { SqsQueueClient } from '../lib/adapters/sqs';
import { startLocalStack } from '../lib/local/dev';
import { seededRandom } from '../lib/random';
import type { BatchReport } from '../lib/settle/report';
import { printResults } from './results';

const args = process.argv.slice(2);
const option = (name: string, fallback: number) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : fallback;
};
const TASKS = option('tasks', 100_000);
const DISPATCHERS = option('dispatchers', 4);
const json = args.includes('--json');

const TASK_SOURCES: Record<string, string> = {
  'noop.ts': "export default { name: 'noop', queue: 'work', timeLimitSeconds: 5, run() { return undefined; } };",
  'flaky.ts':
    "export default { name: 'flaky', queue: 'work', timeLimitSeconds: 5, maxRetries: 2, backoff: { baseSeconds: 0, capSeconds: 0 }, run(_p, ctx) { if (ctx.attempt < 2) throw new Error('the first attempt fails'); } };",
  'doomed.ts':
    "export default { name: 'doomed', queue: 'work', timeLimitSeconds: 5, maxRetries: 0, run() { throw new Error('always'); } };",
};
const CONFIG = {
  app: 'load',
  tasksDir: 'tasks',
  queues: [
    { name: 'work', priority: 1, batchSize: 10, visibilityTimeoutSeconds: 60, longPollSeconds: 1, iterations: 10, maxReceiveCount: 10 },
  ],
  dispatcher: { concurrency: 10, timeoutSeconds: 300 },
};

/** VmRSS and VmHWM (peak) of a process, MB, from /proc. */
function memoryOf(pid: number): { rss: number; peak: number } | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0);
    return { rss: Math.round(kb('VmRSS') / 1024), peak: Math.round(kb('VmHWM') / 1024) };
  } catch {
    return undefined;
  }
}

async function main() {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const dir = await mkdtemp(join(tmpdir(), 'tw-bench-load-'));
  await mkdir(join(dir, 'tasks'));
  for (const [file, source] of Object.entries(TASK_SOURCES)) await writeFile(join(dir, 'tasks', file), source);
  await writeFile(join(dir, 'config.json'), JSON.stringify(CONFIG));

  let settled = 0;
  const perDispatcher = new Array<number>(DISPATCHERS).fill(0);
  const stack = await startLocalStack({
    configFile: join(dir, 'config.json'),
    version: 'load',
    dispatchers: 0,
    logLevel: 'ERROR',
    onBatch: (report: BatchReport, index) => {
      const done = report.jobs.filter((j) => j.outcome === 'succeeded' || j.outcome === 'archived').length;
      settled += done;
      perDispatcher[index] = (perDispatcher[index] ?? 0) + done;
    },
  });
  try {
    // Publish everything first, as other services would: plain SendMessageBatch, 10 at a time.
    const random = seededRandom(7);
    const expected = { succeeded: 0, exhausted: 0, malformed: 0 };
    const publishStart = Date.now();
    const url = stack.urls.queues.work as string;
    const bodies = Array.from({ length: TASKS }, (_, n) => {
      const roll = random();
      if (roll < 0.001) {
        expected.malformed += 1;
        return `not json #${n}`;
      }
      if (roll < 0.005) {
        expected.exhausted += 1;
        return JSON.stringify({ task: 'doomed', payload: { n } });
      }
      expected.succeeded += 1;
      return JSON.stringify({ task: roll < 0.025 ? 'flaky' : 'noop', payload: { n } });
    });
    const senders = Array.from({ length: 8 }, async (_, lane) => {
      for (let i = lane * 10; i < bodies.length; i += 80) {
        const out = await stack.sqs.send(
          new SendMessageBatchCommand({
            QueueUrl: url,
            Entries: bodies.slice(i, i + 10).map((MessageBody, j) => ({ Id: String(j), MessageBody })),
          }),
        );
        if ((out.Failed ?? []).length > 0) throw new Error(`publish failed: ${JSON.stringify(out.Failed)}`);
      }
    });
    await Promise.all(senders);
    const publishMs = Date.now() - publishStart;

    // Run: N dispatcher processes until every message is settled.
    const start = Date.now();
    for (let i = 0; i < DISPATCHERS; i++) stack.startDispatcher();
    const samples: Array<{ at: number; settled: number; rss: number[] }> = [];
    const queues = new SqsQueueClient(stack.sqs);
    for (;;) {
      await new Promise((resolve) => setTimeout(resolve, 5000));
      const rss = stack.dispatchers.map((c) => memoryOf(c.pid as number)?.rss ?? 0);
      samples.push({ at: Date.now() - start, settled, rss });
      process.stderr.write(`load: ${Math.round((Date.now() - start) / 1000)} s, ${settled}/${TASKS} settled, RSS ${rss.join('/')} MB\n`);
      if (settled < TASKS) continue;
      const depth = await queues.depth(url);
      if (depth.visible + depth.inFlight + depth.delayed === 0) break;
    }
    const runMs = Date.now() - start;
    const peaks = stack.dispatchers.map((c) => memoryOf(c.pid as number)?.peak ?? 0);
    await stack.stopDispatchers();

    // The books: the jobs table, the archive, the stats table.
    const states: Record<string, number> = {};
    const reasons: Record<string, number> = {};
    let startKey: Record<string, import('@aws-sdk/client-dynamodb').AttributeValue> | undefined;
    do {
      const out = await stack.dynamo.send(
        new ScanCommand({
          TableName: stack.tables.jobs,
          ProjectionExpression: '#s, #r',
          ExpressionAttributeNames: { '#s': 'state', '#r': 'reason' },
          ...(startKey ? { ExclusiveStartKey: startKey } : {}),
        }),
      );
      for (const item of out.Items ?? []) {
        const state = item.state?.S ?? 'none';
        states[state] = (states[state] ?? 0) + 1;
        if (item.reason?.S) reasons[item.reason.S] = (reasons[item.reason.S] ?? 0) + 1;
      }
      startKey = out.LastEvaluatedKey;
    } while (startKey);
    const archiveDepth = (await queues.depth(stack.urls.archive)).visible;
    const deadLetters = (await queues.depth(stack.urls.deadLetter.work as string)).visible;
    const days = [...new Set([new Date(start).toISOString().slice(0, 10), new Date().toISOString().slice(0, 10)])];
    const stats = (await Promise.all(days.map((d) => stack.stats.get('work', d)))).filter((s) => s !== undefined);
    const statsSucceeded = stats.reduce((n, s) => n + (s.counters.succeeded ?? 0), 0);
    const statsArchived: Record<string, number> = {};
    for (const s of stats) for (const [r, n] of Object.entries(s.archived)) statsArchived[r] = (statsArchived[r] ?? 0) + (n ?? 0);

    const succeeded = states.succeeded ?? 0;
    const archived = states.archived ?? 0;
    const quarter = (q: number) =>
      samples
        .filter((s) => s.at > (runMs * q) / 4 && s.at <= (runMs * (q + 1)) / 4)
        .reduce((max, s) => s.rss.map((r, i) => Math.max(r, max[i] ?? 0)), [] as number[]);
    const result = {
      bench: 'load',
      tasks: TASKS,
      dispatchers: DISPATCHERS,
      concurrency: CONFIG.dispatcher.concurrency,
      node: process.version,
      publishSeconds: Math.round(publishMs / 100) / 10,
      runSeconds: Math.round(runMs / 100) / 10,
      tasksPerSecond: Math.round(TASKS / (runMs / 1000)),
      published: TASKS,
      succeeded,
      archived,
      otherStates: Object.fromEntries(Object.entries(states).filter(([s]) => s !== 'succeeded' && s !== 'archived')),
      publishedEqualsSucceededPlusArchived: succeeded + archived === TASKS,
      expected,
      archivedByReason: reasons,
      archiveMessages: archiveDepth,
      deadLetters,
      stats: { succeeded: statsSucceeded, archived: statsArchived },
      statsAgree:
        statsSucceeded === succeeded &&
        JSON.stringify(Object.entries(statsArchived).sort()) === JSON.stringify(Object.entries(reasons).sort()),
      settledPerDispatcher: perDispatcher,
      peakRssMb: peaks,
      rssMbByQuarter: [0, 1, 2, 3].map(quarter),
    };
    if (json) {
      printResults(result);
      return;
    }
    const rows: Array<[string, string]> = [
      ['tasks', `${TASKS} (${DISPATCHERS} dispatchers × ${CONFIG.dispatcher.concurrency} threads, ${process.version})`],
      ['publish', `${result.publishSeconds} s`],
      ['run', `${result.runSeconds} s, ${result.tasksPerSecond} tasks/s`],
      [
        'published = succeeded + archived',
        `${TASKS} = ${succeeded} + ${archived}: ${result.publishedEqualsSucceededPlusArchived ? 'yes' : 'NO'}`,
      ],
      ['archived by reason', JSON.stringify(reasons)],
      ['archive messages / DLQ', `${archiveDepth} / ${deadLetters}`],
      ['stats agree with the jobs table', result.statsAgree ? 'yes' : `NO: ${JSON.stringify(result.stats)}`],
      ['settled per dispatcher', perDispatcher.join(' / ')],
      ['peak RSS per dispatcher (VmHWM)', `${peaks.join(' / ')} MB`],
      ...result.rssMbByQuarter.map((r, q): [string, string] => [`RSS max, quarter ${q + 1} of the run`, `${r.join(' / ')} MB`]),
    ];
    const width = Math.max(...rows.map(([k]) => k.length));
    for (const [k, v] of rows) process.stdout.write(`${k.padEnd(width)}  ${v}\n`);
  } finally {
    await stack.stop();
  }
}

void main().catch((error) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
