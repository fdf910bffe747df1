/**
 * What jobs that wait for other jobs cost and how fast a fan-in closes, on the emulators (fauxqs,
 * dynalite metering ConsumedCapacity by DynamoDB's 1 KB rule), counted by SDK middleware that sees
 * every HTTP attempt of the publisher and the dispatcher.
 *
 *   npm run bench:flows -- [--members N] [--chords R] [--chain K] [--json]
 *
 * - independent: N no-op jobs, the baseline a flow's jobs cost anyway (claim, completion, SQS).
 * - chord: R times, N members and a callback (`publisher.chord`); the flow's own cost is what it
 *   adds to N independent jobs and one more, per member; and, from the jobs table, the time from the
 *   last member's end to the callback's start.
 * - chain: K steps, each waiting for the one before: the cost per dependent edge.
 * Then 100,000 such fan-ins a day for a month, beside Step Functions' published price for the same
 * graph (a Map state over N Task states and a callback Task: N + 2 state transitions, at $0.025 per
 * 1,000 — a lower bound; the tasks' own Lambda time is the same on both and left out).
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoJobStore } from '../lib/adapters/dynamo-job-store';
import { startEmulators } from '../lib/local/emulators';
import { silentLogger } from '../lib/ports';
import { Publisher } from '../lib/publish/publisher';
import { meter, newMeter, type Usage, usage, usageMinus, usagePer } from './meter';
import { oneQueueVersion } from './one-queue';
import { PRICES, printTable, quantile, round, runBenchmark } from './prices';
import { printResults } from './results';

const args = process.argv.slice(2);
const json = args.includes('--json');
const option = (name: string, fallback: number) => {
  const at = args.indexOf(name);
  return at >= 0 ? Number(args[at + 1]) || fallback : fallback;
};
const MEMBERS = option('--members', 1000);
const CHORDS = option('--chords', 5);
const CHAIN = option('--chain', 100);
const FLOWS_A_DAY = 100_000;
const DAYS_A_MONTH = 30;
const STEP_FUNCTIONS_PER_THOUSAND_TRANSITIONS = 0.025;

type Cost = Usage;
const per = (c: Cost, n: number): Cost => usagePer(c, n, 4);
const dollars = (c: Cost) =>
  (c.sqsRequests * PRICES.sqsPerMillionRequests +
    c.writeUnits * PRICES.dynamoPerMillionWriteUnits +
    c.readUnits * PRICES.dynamoPerMillionReadUnits) /
  1e6;

async function main() {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const emulators = await startEmulators();
  const workDir = mkdtempSync(join(tmpdir(), 'tw-bench-flows-'));
  mkdirSync(join(workDir, 'tasks'));
  writeFileSync(
    join(workDir, 'tasks', 'noop.ts'),
    "export default { name: 'noop', queue: 'work', timeLimitSeconds: 5, run() { return 1; } };",
  );
  const credentials = { accessKeyId: 'bench', secretAccessKey: 'bench' };
  const sqsMeter = newMeter();
  const dynamoMeter = newMeter();
  const sqs = meter(new SQSClient({ region: 'us-east-1', endpoint: emulators.sqsEndpoint, credentials }), sqsMeter);
  const dynamo = meter(new DynamoDBClient({ region: 'us-east-1', endpoint: emulators.dynamodbEndpoint, credentials }), dynamoMeter);
  const unmetered = new DynamoDBClient({ region: 'us-east-1', endpoint: emulators.dynamodbEndpoint, credentials });
  try {
    const provisioned = await oneQueueVersion({ workDir, run: 1, version: 'f1', mode: 'full', sqs, dynamo, recordQueued: false });
    const { bundle } = provisioned;
    const jobs = new DynamoJobStore(provisioned.tables.jobs, { historyLimit: 20, retentionDays: 1 }, dynamo);
    // Flows need the jobs table; plain jobs get no `queued` record (the default), as in production.
    const publisher = new Publisher({
      config: bundle.config,
      version: 'f1',
      tasks: bundle.tasks,
      queues: provisioned.queues,
      urls: provisioned.urls,
      jobs,
      recordQueued: false,
    });
    const runtime = provisioned.dispatcher({ dynamo, logger: silentLogger });
    const stop = new AbortController();
    const running = runtime.invoke(Date.now() + 3_600_000, stop.signal);
    // The benchmark's own polling reads go through a client nobody meters.
    const observer = new DynamoJobStore(provisioned.tables.jobs, { historyLimit: 20, retentionDays: 1 }, unmetered);
    const ended = async (ids: readonly string[]) => {
      for (;;) {
        const records = await observer.getMany(ids);
        if (records.length === ids.length && records.every((r) => r.state === 'succeeded')) return records;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    };
    const measure = async (publish: () => Promise<string[]>) => {
      const before = usage(sqsMeter, dynamoMeter);
      const ids = await publish();
      const records = await ended(ids);
      // The dispatcher's last settle (deletes, stats) lands a moment after the record.
      await new Promise((resolve) => setTimeout(resolve, 1500));
      return { cost: usageMinus(usage(sqsMeter, dynamoMeter), before), records };
    };

    const independent = await measure(async () =>
      (await publisher.publishBatch(Array.from({ length: MEMBERS + 1 }, (_, i) => ({ task: 'noop', payload: { i } })))).map((p) => p.jobId),
    );
    const chords: Array<{ cost: Cost; closeMs: number }> = [];
    for (let r = 0; r < CHORDS; r++) {
      const members = Array.from({ length: MEMBERS }, (_, i) => ({ task: 'noop', payload: { r, i } }));
      let callbackId = '';
      const { cost, records } = await measure(async () => {
        const { callback, members: sent } = await publisher.chord(members, { task: 'noop', payload: { r } });
        callbackId = callback.jobId;
        return [...sent.map((m) => m.jobId), callback.jobId];
      });
      const callback = records.find((x) => x.jobId === callbackId);
      const lastMemberEnd = Math.max(...records.filter((x) => x.jobId !== callbackId).map((x) => x.finishedAt ?? 0));
      chords.push({ cost, closeMs: (callback?.firstStartedAt ?? 0) - lastMemberEnd });
    }
    const chain = await measure(async () =>
      (await publisher.chain(Array.from({ length: CHAIN }, (_, i) => ({ task: 'noop', payload: { i } })))).map((p) => p.jobId),
    );
    const chainBaseline = per(independent.cost, MEMBERS + 1);
    stop.abort();
    await running;
    await runtime.close();

    const base = per(independent.cost, MEMBERS + 1);
    const chordCost = per(
      chords.reduce(
        (a, c) => ({
          sqsRequests: a.sqsRequests + c.cost.sqsRequests,
          dynamoRequests: a.dynamoRequests + c.cost.dynamoRequests,
          writeUnits: a.writeUnits + c.cost.writeUnits,
          readUnits: a.readUnits + c.cost.readUnits,
        }),
        { sqsRequests: 0, dynamoRequests: 0, writeUnits: 0, readUnits: 0 },
      ),
      CHORDS,
    );
    // What the flow adds to running its N + 1 jobs, per member.
    const flowPerMember = per(
      usageMinus(chordCost, {
        sqsRequests: base.sqsRequests * (MEMBERS + 1),
        dynamoRequests: base.dynamoRequests * (MEMBERS + 1),
        writeUnits: base.writeUnits * (MEMBERS + 1),
        readUnits: base.readUnits * (MEMBERS + 1),
      }),
      MEMBERS,
    );
    const perEdge = per(
      usageMinus(chain.cost, {
        sqsRequests: chainBaseline.sqsRequests * CHAIN,
        dynamoRequests: chainBaseline.dynamoRequests * CHAIN,
        writeUnits: chainBaseline.writeUnits * CHAIN,
        readUnits: chainBaseline.readUnits * CHAIN,
      }),
      CHAIN - 1,
    );
    const closes = chords.map((c) => c.closeMs).sort((a, b) => a - b);
    const flowsAMonth = FLOWS_A_DAY * DAYS_A_MONTH;
    const flowDollars = dollars({
      ...flowPerMember,
      sqsRequests: flowPerMember.sqsRequests * MEMBERS,
      writeUnits: flowPerMember.writeUnits * MEMBERS,
      readUnits: flowPerMember.readUnits * MEMBERS,
      dynamoRequests: 0,
    });
    const wholeDollars = dollars(chordCost);
    const transitions = MEMBERS + 2;
    const stepFunctionsDollars = (transitions / 1000) * STEP_FUNCTIONS_PER_THOUSAND_TRANSITIONS;
    const document = {
      bench: 'flows',
      members: MEMBERS,
      chords: CHORDS,
      chainSteps: CHAIN,
      perJob: base,
      chord: { whole: chordCost, addedPerMember: flowPerMember },
      chain: { addedPerEdge: perEdge },
      close: { samples: closes, p50Ms: quantile(closes, 0.5), p99Ms: quantile(closes, 0.99) },
      monthly: {
        flowsADay: FLOWS_A_DAY,
        taskworkerFlowOnly: round(flowDollars * flowsAMonth, 2),
        taskworkerWhole: round(wholeDollars * flowsAMonth, 2),
        stepFunctionsTransitionsPerFlow: transitions,
        stepFunctions: round(stepFunctionsDollars * flowsAMonth, 2),
        ratio: round(flowDollars / stepFunctionsDollars, 4),
      },
    };
    if (json) {
      printResults(document);
      return;
    }
    printTable(
      ['what', 'SQS req', 'DynamoDB req', 'WCU', 'RCU'],
      [
        ['a job (no flow)', base.sqsRequests, base.dynamoRequests, base.writeUnits, base.readUnits],
        [`chord of ${MEMBERS}, whole`, chordCost.sqsRequests, chordCost.dynamoRequests, chordCost.writeUnits, chordCost.readUnits],
        [
          'chord, added per member',
          flowPerMember.sqsRequests,
          flowPerMember.dynamoRequests,
          flowPerMember.writeUnits,
          flowPerMember.readUnits,
        ],
        ['chain, added per edge', perEdge.sqsRequests, perEdge.dynamoRequests, perEdge.writeUnits, perEdge.readUnits],
      ],
    );
    process.stdout.write(
      `\nlast member's end → callback's start: p50 ${document.close.p50Ms} ms, p99 ${document.close.p99Ms} ms (${CHORDS} chords)\n`,
    );
    process.stdout.write(
      `100,000 fan-ins of ${MEMBERS} a day for a month: taskworker's flow $${document.monthly.taskworkerFlowOnly} ($${document.monthly.taskworkerWhole} with the jobs' own bookkeeping), Step Functions $${document.monthly.stepFunctions} (${transitions} transitions a flow)\n`,
    );
  } finally {
    sqs.destroy();
    dynamo.destroy();
    unmetered.destroy();
    await emulators.stop();
  }
}

runBenchmark(main);
