/**
 * What durable steps cost and how soon a parked job resumes, measured on the emulators (dynalite
 * meters ConsumedCapacity with DynamoDB's 1 KB rule; SDK middleware counts every HTTP attempt):
 *
 *   npm run bench:steps -- [--jobs N] [--json]
 *
 * Per workload, N jobs on a `full` tracked queue, run by a real dispatcher in this process:
 * - `plain`: a job with no steps (the baseline every cost is over);
 * - `steps`: ten `ctx.step.run` steps → the cost of one step;
 * - `sleep`: `ctx.step.sleep('1d')` — parked, the clock moved a day on, swept, resumed → one sleep;
 * - `token`: `ctx.step.waitForToken` — parked, each token completed (`publisher.completeToken`), resumed → one wait;
 * - `event`: `ctx.step.waitForEvent` matched on `order` — parked, each job's event delivered to the queue as the
 *   topic's raw delivery puts it there (its SNS publish priced, not run), resumed → one wait for an event;
 * - `workflow`: five steps, a day's sleep, five steps: the workflow the peers are priced for.
 * Resume latency (real time, 40 jobs each, started a quarter second apart so none waits for a slot):
 * a 2 s sleep's resume after its due time, a token wait's after its completion, an event wait's after
 * its event was sent.
 *
 * The peers are modelled from list prices (us-east-1), not run: Step Functions Standard bills each
 * state transition (10 Lambda task states and a Wait state: 11), and each task a Lambda invocation;
 * Lambda durable functions bill each durable operation (10 steps and a wait: 11) and an invocation
 * per replay (2: the start and the resume after the wait). Left out on every side: the step bodies'
 * own compute (the same work everywhere), durable functions' data written and retained (its rate is
 * not modelled here), and taskworker's dispatcher compute (bench:e2e measures it per job).
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { SqsQueueClient } from '../lib/adapters/sqs';
import { trackingFor } from '../lib/aws/wiring';
import { systemClock } from '../lib/clock';
import { sweepDue } from '../lib/invocation/parked-sweep';
import { startEmulators } from '../lib/local/emulators';
import { silentLogger } from '../lib/ports';
import type { JobOutcome } from '../lib/settle/report';
import type { JobRecord } from '../lib/track/job-record';
import type { JobStore } from '../lib/track/job-stores';
import { encodeEventEnvelope } from '../lib/wire/event';
import { meter, newMeter, type Usage, usage, usageMinus, usagePer } from './meter';
import { oneQueueVersion } from './one-queue';
import { PRICES, printTable, quantile, round, runBenchmark } from './prices';
import { printResults } from './results';

const args = process.argv.slice(2);
const json = args.includes('--json');
const jobs = Number(args[args.indexOf('--jobs') + 1] ?? 100) || 100;
const DAY = 86_400_000;
/** Jobs timed per resume latency. */
const LATENCY_SAMPLES = 40;

/** The peers' list prices (us-east-1), per million. */
const PEER_PRICES = {
  /** Step Functions Standard: $0.025 per 1,000 state transitions. */
  stepFunctionsPerMillionTransitions: 25,
  /** Lambda durable functions: durable operations, $8.00 per million (aws.amazon.com/lambda/pricing). */
  durablePerMillionOperations: 8,
  lambdaPerMillionInvocations: PRICES.lambdaPerMillionInvocations,
} as const;

const TASKS: Record<string, string> = {
  plain: "export default { name: 'plain', queue: 'work', timeLimitSeconds: 10, run() {} };",
  steps:
    "export default { name: 'steps', queue: 'work', timeLimitSeconds: 10, async run(_p, ctx) { for (let i = 0; i < 10; i++) await ctx.step.run('s' + i, () => i); } };",
  sleep:
    "export default { name: 'sleep', queue: 'work', timeLimitSeconds: 10, async run(_p, ctx) { await ctx.step.sleep('nap', '1d'); } };",
  token:
    "export default { name: 'token', queue: 'work', timeLimitSeconds: 10, async run(_p, ctx) { return ctx.step.waitForToken('ok', { timeout: '1d' }); } };",
  event:
    "export default { name: 'event', queue: 'work', timeLimitSeconds: 10, waitsFor: [{ event: 'order.paid', match: 'order' }], async run(_p, ctx) { return ctx.step.waitForEvent('paid', { event: 'order.paid', timeout: '1d' }); } };",
  workflow:
    "export default { name: 'workflow', queue: 'work', timeLimitSeconds: 10, async run(_p, ctx) { for (let i = 0; i < 5; i++) await ctx.step.run('a' + i, () => i); await ctx.step.sleep('day', '1d'); for (let i = 0; i < 5; i++) await ctx.step.run('b' + i, () => i); } };",
  nap: "export default { name: 'nap', queue: 'work', timeLimitSeconds: 10, async run(_p, ctx) { await ctx.step.sleep('nap', 2000); } };",
};

type Workload = 'plain' | 'steps' | 'sleep' | 'token' | 'event' | 'workflow';

interface Measured {
  readonly workload: Workload;
  /** Per job, every phase together. */
  readonly perJob: Usage;
  /** Per job, by phase: the first run (to its park), the sweep, the completions, the resumed run. */
  readonly phases: Readonly<Record<string, Usage>>;
}

async function measureAll(emulators: { sqsEndpoint: string; dynamodbEndpoint: string }, workDir: string) {
  const credentials = { accessKeyId: 'bench', secretAccessKey: 'bench' };
  const sqsMeter = newMeter();
  const dynamoMeter = newMeter();
  const sqs = meter(new SQSClient({ region: 'us-east-1', endpoint: emulators.sqsEndpoint, credentials }), sqsMeter);
  const dynamo = meter(new DynamoDBClient({ region: 'us-east-1', endpoint: emulators.dynamodbEndpoint, credentials }), dynamoMeter);
  // Reads the benchmark makes itself (tokens, latencies) go through a client nobody meters.
  const reader = new DynamoDBClient({ region: 'us-east-1', endpoint: emulators.dynamodbEndpoint, credentials });
  const provisioned = await oneQueueVersion({ workDir, run: 1, version: 'steps', mode: 'full', sqs, dynamo, events: ['order.paid'] });
  const queues = new SqsQueueClient(sqs);
  /** Delivers an `order.paid` event for each order to the queue, as the topic's raw delivery does. */
  const deliver = async (orders: readonly number[]) => {
    const url = provisioned.urls.queues.work as string;
    for (let i = 0; i < orders.length; i += 10) {
      const entries = orders.slice(i, i + 10).map((order, j) => ({
        id: String(j),
        body: encodeEventEnvelope({
          event: 'order.paid',
          payload: { order, paid: true },
          id: `paid-${order}-${clock.now()}`,
          emittedAt: clock.now(),
        }),
      }));
      await queues.sendBatch(url, entries);
    }
  };
  const clock = { shift: 0, now: () => Date.now() + clock.shift, sleep: systemClock.sleep };
  const store = trackingFor(provisioned.bundle.config, provisioned.tables, { client: reader }).jobs as JobStore;
  const sweepStore = trackingFor(provisioned.bundle.config, provisioned.tables, { client: dynamo }).jobs as JobStore;

  /** Runs a dispatcher until `count` reports of `outcome` for `task`. */
  const runUntil = async (task: string, outcome: JobOutcome, count: number) => {
    let done = 0;
    const runtime = provisioned.dispatcher({
      dynamo,
      logger: silentLogger,
      clock,
      observer: { onBatch: (r) => (done += r.jobs.filter((j) => j.task === task && j.outcome === outcome).length) },
    });
    const stop = new AbortController();
    const running = runtime.invoke(clock.now() + 600_000, stop.signal);
    while (done < count) await new Promise((resolve) => setTimeout(resolve, 20));
    stop.abort();
    await running;
    await runtime.close();
  };
  let orders = 0;
  const publish = async (task: string, n: number) => {
    const published = await provisioned.publisher.publishBatch(Array.from({ length: n }, () => ({ task, payload: { order: ++orders } })));
    return published.map((p) => p.jobId);
  };

  const measure = async (workload: Workload): Promise<Measured> => {
    const phases: Record<string, Usage> = {};
    let mark = usage(sqsMeter, dynamoMeter);
    const phase = (name: string) => {
      const now = usage(sqsMeter, dynamoMeter);
      phases[name] = usagePer(usageMinus(now, mark), jobs);
      mark = now;
    };
    const start = mark;
    const ids = await publish(workload, jobs);
    phase('publish');
    if (workload === 'sleep' || workload === 'workflow') {
      await runUntil(workload, 'scheduled', jobs);
      phase('run to the sleep');
      clock.shift += DAY + 60_000;
      const swept = await sweepDue(
        { jobs: sweepStore, queues: new SqsQueueClient(sqs), urls: provisioned.urls, clock, logger: silentLogger },
        clock.now() + 60_000,
      );
      if (swept.sent !== jobs) throw new Error(`the sweep sent ${swept.sent} of ${jobs}`);
      phase('sweep');
    } else if (workload === 'event') {
      await runUntil(workload, 'scheduled', jobs);
      phase('run to the wait');
      await deliver(Array.from({ length: jobs }, (_, i) => orders - jobs + 1 + i));
      phase('deliver the events');
    } else if (workload === 'token') {
      await runUntil(workload, 'scheduled', jobs);
      phase('run to the wait');
      const tokens = (await store.getMany(ids)).map((r) => r.waitToken as string);
      const completed = await Promise.all(tokens.map((t) => provisioned.publisher.completeToken(t, { ok: true })));
      if (completed.some((c) => c.outcome !== 'completed')) throw new Error('a token was not completed');
      phase('complete the token');
    }
    await runUntil(workload, 'succeeded', jobs);
    phase('run to the end');
    return { workload, perJob: usagePer(usageMinus(usage(sqsMeter, dynamoMeter), start), jobs), phases };
  };

  /** Resume latency in real time: a 2 s sleep after its due time, a token wait after its completion. */
  const latencies = async () => {
    clock.shift = 0;
    const runtime = provisioned.dispatcher({ dynamo, logger: silentLogger, clock });
    const stop = new AbortController();
    const running = runtime.invoke(clock.now() + 600_000, stop.signal);
    try {
      // One at a time, a quarter second apart: each resume is timed alone, not behind the others in the dispatcher's slots.
      const spaced = async (n: number, each: (i: number) => Promise<void>) => {
        for (let i = 0; i < n; i++) {
          await each(i);
          await new Promise((resolve) => setTimeout(resolve, 250));
        }
      };
      const napIds: string[] = [];
      const tokenIds: string[] = [];
      const eventIds: string[] = [];
      const eventOrders = new Map<string, number>();
      await spaced(LATENCY_SAMPLES, async () => {
        napIds.push(...(await publish('nap', 1)));
        tokenIds.push(...(await publish('token', 1)));
        const [id] = await publish('event', 1);
        eventIds.push(id as string);
        eventOrders.set(id as string, orders);
      });
      const settled = async (ids: string[], ok: (r: JobRecord) => boolean) => {
        for (;;) {
          const records = await store.getMany(ids);
          if (records.length === ids.length && records.every(ok)) return records;
          await new Promise((resolve) => setTimeout(resolve, 200));
        }
      };
      const completedAt = new Map<string, number>();
      const waiting = await settled(tokenIds, (r) => r.state === 'waiting-token');
      await spaced(waiting.length, async (i) => {
        const r = waiting[i] as JobRecord;
        completedAt.set(r.jobId, Date.now());
        await provisioned.publisher.completeToken(r.waitToken as string, 1);
      });
      const sentAt = new Map<string, number>();
      const eventWaiting = await settled(eventIds, (r) => r.state === 'waiting-event');
      await spaced(eventWaiting.length, async (i) => {
        const r = eventWaiting[i] as JobRecord;
        sentAt.set(r.jobId, Date.now());
        await deliver([eventOrders.get(r.jobId) as number]);
      });
      const resumedAt = (r: JobRecord) => r.history.filter((h) => h.what === 'started').at(-1)?.when ?? 0;
      const naps = await settled(napIds, (r) => r.state === 'succeeded');
      const tokens = await settled(tokenIds, (r) => r.state === 'succeeded');
      const sorted = (xs: number[]) => xs.sort((a, b) => a - b);
      const afterSleep = sorted(naps.map((r) => resumedAt(r) - (r.steps?.[0]?.wait?.until ?? 0)));
      const afterToken = sorted(tokens.map((r) => resumedAt(r) - (completedAt.get(r.jobId) ?? 0)));
      const events = await settled(eventIds, (r) => r.state === 'succeeded');
      const afterEvent = sorted(events.map((r) => resumedAt(r) - (sentAt.get(r.jobId) ?? 0)));
      const summary = (xs: number[]) => ({ p50Ms: quantile(xs, 0.5), p99Ms: quantile(xs, 0.99), maxMs: xs.at(-1) ?? 0 });
      return { afterSleepDue: summary(afterSleep), afterTokenCompleted: summary(afterToken), afterEventSent: summary(afterEvent) };
    } finally {
      stop.abort();
      await running;
      await runtime.close();
    }
  };

  try {
    const measured: Measured[] = [];
    for (const w of ['plain', 'steps', 'sleep', 'token', 'event', 'workflow'] as const) measured.push(await measure(w));
    return { measured, latency: await latencies() };
  } finally {
    sqs.destroy();
    dynamo.destroy();
    reader.destroy();
  }
}

/** Dollars per million of what `u` counts (SQS requests, DynamoDB write and read units). */
const dollarsPerMillion = (u: Usage) =>
  round(
    u.sqsRequests * PRICES.sqsPerMillionRequests +
      u.writeUnits * PRICES.dynamoPerMillionWriteUnits +
      u.readUnits * PRICES.dynamoPerMillionReadUnits,
    2,
  );

const over = (a: Usage, b: Usage, n = 1): Usage => usagePer(usageMinus(a, b), n);

async function main() {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const emulators = await startEmulators();
  const workDir = mkdtempSync(join(tmpdir(), 'tw-bench-steps-'));
  mkdirSync(join(workDir, 'tasks'));
  for (const [name, source] of Object.entries(TASKS)) writeFileSync(join(workDir, 'tasks', `${name}.ts`), source);
  let result: Awaited<ReturnType<typeof measureAll>>;
  try {
    result = await measureAll(emulators, workDir);
  } finally {
    await emulators.stop();
  }
  const by = (w: Workload) => result.measured.find((m) => m.workload === w)?.perJob as Usage;
  const plain = by('plain');
  const perItem = {
    step: over(by('steps'), plain, 10),
    sleep: over(by('sleep'), plain),
    tokenWait: over(by('token'), plain),
    // The event's SNS publish is not run here (the bench sends what its raw delivery would): one request more.
    eventWait: { ...over(by('event'), plain), snsPublishes: 1 },
  };
  const workflow = by('workflow');
  const peers = {
    taskworker: { perMillionWorkflows: dollarsPerMillion(workflow), modelled: false },
    stepFunctionsStandard: {
      perMillionWorkflows: round(11 * PEER_PRICES.stepFunctionsPerMillionTransitions + 10 * PEER_PRICES.lambdaPerMillionInvocations, 2),
      modelled: true,
    },
    lambdaDurableFunctions: {
      perMillionWorkflows: round(11 * PEER_PRICES.durablePerMillionOperations + 2 * PEER_PRICES.lambdaPerMillionInvocations, 2),
      modelled: true,
    },
  };
  const document = {
    bench: 'steps',
    node: process.version,
    jobsPerWorkload: jobs,
    prices: { ...PRICES, ...PEER_PRICES },
    workloads: result.measured,
    perItem: Object.fromEntries(Object.entries(perItem).map(([k, u]) => [k, { ...u, dollarsPerMillion: dollarsPerMillion(u) }])),
    workflow: { steps: 10, sleepDays: 1, perJob: workflow, peers },
    latency: { samples: LATENCY_SAMPLES, ...result.latency },
  };
  if (json) {
    printResults(document);
    return;
  }
  printTable(
    ['item', 'SQS req', 'DynamoDB req', 'WCU', 'RCU', '$ per million'],
    Object.entries(document.perItem).map(([k, u]) => [k, u.sqsRequests, u.dynamoRequests, u.writeUnits, u.readUnits, u.dollarsPerMillion]),
  );
  printTable(
    ['10 steps + a day’s sleep', '$ per million workflows', 'how'],
    Object.entries(peers).map(([k, p]) => [k, p.perMillionWorkflows, p.modelled ? 'list prices (modelled)' : 'measured on the emulators']),
  );
  printTable(
    ['resume', 'p50 ms', 'p99 ms', 'max ms'],
    Object.entries(result.latency).map(([k, l]) => [k, l.p50Ms, l.p99Ms, l.maxMs]),
  );
}

runBenchmark(main);
