/**
 * Scale to zero, side by side with Lambda's SQS trigger: what an idle version costs an hour, how
 * fast a task published into an idle version starts, and the monthly bill of three workloads.
 *
 *   npm run bench:idle -- [--json] [--samples 20]
 *
 * Measured here: the idle scheduled invocation (the example app on `taskworker dev --invocations
 * on-demand`, real handler, emulators; its duration per tick), and the wake-up latency (publish →
 * task start, from the dispatcher's batch reports, into an idle local version). Modelled, with the
 * assumptions printed: AWS's side of the same (Lambda's trigger pollers, cold starts, in-region
 * latency) and the trigger design. The monthly figures add the simulation (bench/sim, the real
 * dispatcher loop with its doorbells and schedule) for the awake hours.
 */
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startLocalStack } from '../lib/local/dev';
import { DUE_SHARDS } from '../lib/policy/due-times';
import type { BatchReport } from '../lib/settle/report';
import { doorbellQueues } from '../lib/wake-up';
import { PRICES, quantile, round, runBenchmark, TRIGGER_IDLE_POLLERS_PER_QUEUE, triggerIdleRequestsPerHour } from './prices';
import { printResults } from './results';
import { runSimulation } from './sim/run';
import { KALE_QUEUES, type SimQueueSpec, WORKLOADS, type Workload } from './sim/workloads';

const { values } = parseArgs({ options: { json: { type: 'boolean', default: false }, samples: { type: 'string', default: '20' } } });
const SAMPLES = Number(values.samples);
// Run from the repository root (npm run bench:idle): the example app.
const CONFIG = join(process.cwd(), 'taskworker.config.ts');
const DISPATCHER_GB = 1;
const HOURS_PER_MONTH = 730;

/** AWS's side of a wake-up and of an idle tick, where this machine cannot measure it. */
const AWS_MODEL = {
  /** A doorbell after an idle hour is a cold start: Lambda's own init for nodejs24.x at 1 GB. */
  runtimeInitMs: 150,
  /** The handler's module init (BENCHMARKS.md, bench:artifact: index.js + tasks.cjs medians). */
  handlerInitMs: 91,
  /** The trigger's long poll returning, and Lambda invoking the function with the batch. */
  pollAndInvokeMs: 60,
  /** One in-region SQS round trip (the idle tick's GetQueueAttributes calls run in parallel). */
  sqsRoundTripMs: 15,
  /** Lambda bills at least this much of an invocation. */
  minimumBilledMs: 1,
};

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Idle ticks of the scheduled dispatcher on the example app, invoked once a second. */
async function measureIdleTicks(ticks: number) {
  const stack = await startLocalStack({ configFile: CONFIG, invocations: 'on-demand', schedulePeriodMs: 1000, schedules: false });
  try {
    while ((stack.invocationsByFunction().dispatcher ?? 0) < ticks + 1) await sleep(200);
    // The first tick pays the container's start; the rest are what a warm idle minute costs.
    const ms = stack
      .invocationDurations()
      .filter((d) => d.fn === 'dispatcher')
      .slice(1, ticks + 1)
      .map((d) => d.ms)
      .sort((a, b) => a - b);
    return { queues: stack.bundle.config.queues.length, doorbells: doorbellQueues(stack.bundle.config).length, ms };
  } finally {
    await stack.stop();
  }
}

/** Publish → start of a task published into an idle local version, `samples` times. */
async function measureWakeUp(samples: number) {
  const reports: BatchReport[] = [];
  const stack = await startLocalStack({ configFile: CONFIG, invocations: 'on-demand', schedules: false, onBatch: (r) => reports.push(r) });
  const waits: number[] = [];
  try {
    while ((stack.invocationsByFunction().dispatcher ?? 0) < 1 || stack.invocationDurations().length < 1) await sleep(100);
    for (let i = 0; i < samples; i++) {
      // Idle: nothing running for a moment before each publish.
      await sleep(1500);
      const { jobId } = await stack.publisher.publish('send-notification', { user: `u${i}`, text: 'wake up' });
      let job: BatchReport['jobs'][number] | undefined;
      while (!job) {
        await sleep(20);
        job = reports.flatMap((r) => r.jobs).find((j) => j.jobId === jobId);
      }
      waits.push(job.waitMs ?? Number.NaN);
    }
    return { waits: waits.sort((a, b) => a - b), byFunction: stack.invocationsByFunction() };
  } finally {
    await stack.stop();
  }
}

/** Kale's queues with no-op tasks: what the queue itself costs, not the work. */
const NOOP_QUEUES: readonly SimQueueSpec[] = KALE_QUEUES.map((q) => ({ ...q, meanSeconds: 0.005, timeLimitSeconds: 5 }));
/** The simulation sizes arrivals against this capacity (5 dispatchers × 10 slots / mean task seconds). */
const SIM_CAPACITY_PER_SECOND = (5 * 10) / NOOP_QUEUES.reduce((a, q) => a + q.share * q.meanSeconds, 0);

/**
 * An hour of one workload in the simulation, with doorbells and the schedule (or, `triggerOnly`,
 * the same triggers alone: Lambda's SQS trigger design): per-hour requests, Lambda seconds and invocations.
 */
async function simulatedHour(name: string, profile: ReadonlyArray<readonly [number, number]>, triggerOnly = false) {
  const workload: Workload = {
    name,
    description: name,
    minutes: 60,
    warmupMinutes: 0,
    profile: profile.map(([minute, perSecond]) => [minute, perSecond / SIM_CAPACITY_PER_SECOND] as const),
  };
  const r = await runSimulation({
    workload,
    selector: 'sla-aware',
    seeds: [1],
    queues: NOOP_QUEUES,
    fleet: {
      dispatchers: 5,
      concurrency: 10,
      invocationSeconds: 300,
      schedule: { maxConcurrency: 12, autoscale: true, doorbell: true, triggerOnly },
    },
  });
  return {
    tasks: r.tasks,
    sqsRequests: Math.round(r.requestsPerMinute * 60),
    lambdaGbSeconds: r.dispatcherSeconds * DISPATCHER_GB,
    invocations: r.invocations + r.doorbellInvocations,
    highP99: r.queues.find((q) => q.queue === 'high_priority')?.p99 ?? 0,
  };
}

/**
 * The selection benchmark's loaded workloads with the wake-up mechanism in the loop: Kale's
 * ReducedLottery and the SLA-aware selector on the scheduled, autoscaled fleet, and the SLA-aware
 * selector with the doorbells (and their switch) beside it. The targets are the selection
 * benchmark's, against ReducedLottery in the same run.
 */
async function wakeUpUnderLoad() {
  const rows = [];
  for (const name of ['steady-0.7', 'steady-0.9', 'steady-1.05', 'busy-hour']) {
    const workload = WORKLOADS.find((w) => w.name === name) as Workload;
    const run = (selector: 'reduced-lottery' | 'sla-aware', doorbell: boolean) =>
      runSimulation({
        workload,
        selector,
        seeds: [1, 2],
        fleet: { dispatchers: 5, concurrency: 10, invocationSeconds: 300, schedule: { maxConcurrency: 12, autoscale: true, doorbell } },
      });
    const [rl, sla, bell] = [await run('reduced-lottery', false), await run('sla-aware', false), await run('sla-aware', true)];
    const q = (r: typeof rl, queue: string) => r.queues.find((x) => x.queue === queue);
    const figures = (r: typeof rl) => ({
      highP99: q(r, 'high_priority')?.p99 ?? 0,
      lowMax: q(r, 'low_priority')?.max ?? 0,
      requestsPerTask: r.sqsRequestsPerTask,
      dispatcherSeconds: r.dispatcherSeconds,
      doorbellInvocations: r.doorbellInvocations,
    });
    const withDoorbell = figures(bell);
    const baseline = figures(rl);
    rows.push({
      workload: name,
      reducedLottery: baseline,
      slaAware: figures(sla),
      slaAwareWithDoorbells: withDoorbell,
      targets: {
        highP99AtMostHalf: withDoorbell.highP99 <= 0.5 * baseline.highP99,
        lowMaxNoWorse: withDoorbell.lowMax <= baseline.lowMax,
        requestsNoMore: withDoorbell.requestsPerTask <= baseline.requestsPerTask,
      },
    });
  }
  return rows;
}

const usd = (parts: { sqs?: number; wcu?: number; rru?: number; gbSeconds?: number; invocations?: number }) =>
  ((parts.sqs ?? 0) / 1e6) * PRICES.sqsPerMillionRequests +
  ((parts.wcu ?? 0) / 1e6) * PRICES.dynamoPerMillionWriteUnits +
  ((parts.rru ?? 0) / 1e6) * PRICES.dynamoPerMillionReadUnits +
  (parts.gbSeconds ?? 0) * PRICES.lambdaPerGbSecond +
  ((parts.invocations ?? 0) / 1e6) * PRICES.lambdaPerMillionInvocations;

/** Write units per task by tracking mode (bench:e2e at saturation: claim + completion in `full`; the per-batch stats ADD). */
const WCU_PER_TASK = { full: 2.1, failures: 0.1, off: 0.1 } as const;

/**
 * The trigger design: the same event-source mappings in the same simulation, without the
 * dispatcher (its requests and batches), with Powertools idempotency's 2 WCU a task and 50 ms at
 * 512 MB per invocation for the handler (a no-op task and two DynamoDB calls).
 */
function triggerUsd(hour: Awaited<ReturnType<typeof simulatedHour>>): number {
  return usd({ sqs: hour.sqsRequests, wcu: hour.tasks * 2, gbSeconds: hour.invocations * 0.05 * 0.5, invocations: hour.invocations });
}

async function main() {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const began = Date.now();
  const ticks = await measureIdleTicks(30);
  const wake = await measureWakeUp(SAMPLES);

  // Idle hour, AWS: 60 scheduled ticks (the sweep's query of each due-index shard, an empty
  // eventually consistent read of 0.5 RRU; GetQueueAttributes per queue; billed duration, with a
  // round trip each for the sweep and the depths), and the doorbells' trigger pollers; the schedule
  // itself (an EventBridge rule) is free.
  const tickBilledMs = Math.max(AWS_MODEL.minimumBilledMs, quantile(ticks.ms, 0.5) + 2 * AWS_MODEL.sqsRoundTripMs);
  const idleTaskworker = {
    rru: 60 * DUE_SHARDS * 0.5,
    sqs: 60 * ticks.queues + triggerIdleRequestsPerHour(ticks.doorbells),
    gbSeconds: (60 * tickBilledMs * DISPATCHER_GB) / 1000,
    invocations: 60,
  };
  const idleTrigger = { sqs: triggerIdleRequestsPerHour(ticks.queues) };
  const taskworkerIdleUsd = usd(idleTaskworker);
  const triggerIdleUsd = usd(idleTrigger);

  // Awake hours: a business hour of the 1 M/month team (two 5-minute bursts carrying 60 % of the
  // hour's 4,545 tasks), and an hour of 100 M/month steady (38.6 tasks/s).
  const businessHourTasks = 1_000_000 / (22 * 10);
  const base = (0.4 * businessHourTasks) / 3000;
  const burst = (0.6 * businessHourTasks) / 600;
  const businessProfile: ReadonlyArray<readonly [number, number]> = [
    [0, base],
    [20, burst],
    [25, base],
    [40, burst],
    [45, base],
  ];
  const steadyProfile: ReadonlyArray<readonly [number, number]> = [[0, 100_000_000 / (HOURS_PER_MONTH * 3600)]];
  const business = await simulatedHour('business-hour', businessProfile);
  const steady = await simulatedHour('steady-100M', steadyProfile);
  const businessTrigger = await simulatedHour('business-hour', businessProfile, true);
  const steadyTrigger = await simulatedHour('steady-100M', steadyProfile, true);

  const underLoad = await wakeUpUnderLoad();

  const monthly = (['full', 'failures', 'off'] as const).flatMap((mode) => {
    const hour = (h: typeof business) =>
      usd({ sqs: h.sqsRequests, wcu: h.tasks * WCU_PER_TASK[mode], gbSeconds: h.lambdaGbSeconds, invocations: h.invocations });
    return [
      {
        workload: '1 M tasks/month, bursty over business hours',
        design: `taskworker (tracking ${mode})`,
        usd: round(220 * hour(business) + (HOURS_PER_MONTH - 220) * taskworkerIdleUsd, 2),
      },
      { workload: '100 M tasks/month, steady', design: `taskworker (tracking ${mode})`, usd: round(HOURS_PER_MONTH * hour(steady), 2) },
      { workload: 'idle staging version', design: `taskworker (tracking ${mode})`, usd: round(HOURS_PER_MONTH * taskworkerIdleUsd, 2) },
    ];
  });
  monthly.push(
    {
      workload: '1 M tasks/month, bursty over business hours',
      design: 'Lambda SQS trigger + Powertools idempotency (modelled)',
      usd: round(220 * triggerUsd(businessTrigger) + (HOURS_PER_MONTH - 220) * triggerIdleUsd, 2),
    },
    {
      workload: '100 M tasks/month, steady',
      design: 'Lambda SQS trigger + Powertools idempotency (modelled)',
      usd: round(HOURS_PER_MONTH * triggerUsd(steadyTrigger), 2),
    },
    {
      workload: 'idle staging version',
      design: 'Lambda SQS trigger + Powertools idempotency (modelled)',
      usd: round(HOURS_PER_MONTH * triggerIdleUsd, 2),
    },
  );
  const triggerOf = (workload: string) => monthly.find((m) => m.workload === workload && m.design.startsWith('Lambda'))?.usd ?? 0;

  const awsWakeMs = AWS_MODEL.runtimeInitMs + AWS_MODEL.handlerInitMs + AWS_MODEL.pollAndInvokeMs;
  const doc = {
    benchmark: 'idle',
    command: 'npm run bench:idle -- --json',
    node: process.version,
    taskworker: {
      idleUsdPerHour: round(taskworkerIdleUsd, 5),
      idleRequestsPerHour: idleTaskworker.sqs,
      idleSweepReadUnitsPerHour: idleTaskworker.rru,
      idleGbSecondsPerHour: round(idleTaskworker.gbSeconds, 2),
      idleTickMs: { p50: round(quantile(ticks.ms, 0.5), 1), max: round(ticks.ms.at(-1) ?? 0, 1), samples: ticks.ms.length },
      wakeLatencySeconds: {
        p50: round(quantile(wake.waits, 0.5) / 1000, 3),
        p99: round(quantile(wake.waits, 0.99) / 1000, 3),
        max: round((wake.waits.at(-1) ?? 0) / 1000, 3),
        samples: wake.waits.length,
        invokedBy: wake.byFunction,
      },
      awsWakeLatencySecondsModelled: { coldStart: round(awsWakeMs / 1000, 3), warm: round(AWS_MODEL.pollAndInvokeMs / 1000, 3) },
    },
    lambdaTrigger: {
      idleUsdPerHour: round(triggerIdleUsd, 5),
      idleRequestsPerHour: idleTrigger.sqs,
      pollersPerQueue: TRIGGER_IDLE_POLLERS_PER_QUEUE,
    },
    idleRatio: round(taskworkerIdleUsd / triggerIdleUsd, 2),
    awakeHours: { business, steady, businessTrigger, steadyTrigger },
    underLoad,
    monthly: monthly.map((m) => ({ ...m, vsTrigger: round(m.usd / Math.max(0.005, triggerOf(m.workload)), 2) })),
    goals: {
      idleAtMost1_5xTrigger: taskworkerIdleUsd <= 1.5 * triggerIdleUsd,
      wakeP50AtMost1s: quantile(wake.waits, 0.5) <= 1000,
      wakeP99AtMost2s: quantile(wake.waits, 0.99) <= 2000,
      fullTrackingAtMostTrigger: monthly
        .filter((m) => m.design === 'taskworker (tracking full)')
        .map((m) => ({ workload: m.workload, met: m.usd <= triggerOf(m.workload) })),
    },
    assumptions: {
      aws: AWS_MODEL,
      prices: PRICES,
      businessHours: '22 days × 10 h; two 5-minute bursts carry 60 % of each hour',
      tasks: 'no-op (5 ms): what the queue costs, not the work',
      simulatedPollers: 'one trigger poller per queue in the simulation when awake; five per queue when idle (AWS)',
      trigger: 'the same triggers in the same simulation without the dispatcher; 2 WCU, and 50 ms at 512 MB per invocation',
    },
    elapsedSeconds: Math.round((Date.now() - began) / 1000),
  };
  if (values.json) {
    printResults(doc);
    return;
  }
  const lines = [
    `idle version, per hour (example app, ${ticks.queues} queues, ${ticks.doorbells} with a doorbell)`,
    `  taskworker      $${doc.taskworker.idleUsdPerHour}  (${idleTaskworker.sqs} SQS requests, ${idleTaskworker.rru} read units for the sweep, ${doc.taskworker.idleGbSecondsPerHour} GB-s: 60 idle ticks of ${doc.taskworker.idleTickMs.p50} ms + 2 × ${AWS_MODEL.sqsRoundTripMs} ms in AWS)`,
    `  Lambda trigger  $${doc.lambdaTrigger.idleUsdPerHour}  (${idleTrigger.sqs} SQS requests)   ratio ${doc.idleRatio}`,
    `wake-up, publish → start (local, ${wake.waits.length} samples): p50 ${doc.taskworker.wakeLatencySeconds.p50} s, p99 ${doc.taskworker.wakeLatencySeconds.p99} s; AWS modelled: cold ${doc.taskworker.awsWakeLatencySecondsModelled.coldStart} s, warm ${doc.taskworker.awsWakeLatencySecondsModelled.warm} s`,
    '',
    'under load, scheduled fleet (simulation, seeds 1,2): high p99 s / low max s / requests per task',
    ...underLoad.map(
      (r) =>
        `  ${r.workload.padEnd(12)} ReducedLottery ${r.reducedLottery.highP99}/${r.reducedLottery.lowMax}/${r.reducedLottery.requestsPerTask}` +
        `  SLA-aware ${r.slaAware.highP99}/${r.slaAware.lowMax}/${r.slaAware.requestsPerTask}` +
        `  + doorbells ${r.slaAwareWithDoorbells.highP99}/${r.slaAwareWithDoorbells.lowMax}/${r.slaAwareWithDoorbells.requestsPerTask}  ${JSON.stringify(r.targets)}`,
    ),
    '',
    'monthly bill (USD)',
    ...doc.monthly.map((m) => `  ${m.workload.padEnd(46)} ${m.design.padEnd(56)} ${String(m.usd).padStart(9)}  ×${m.vsTrigger}`),
    '',
    `goals: ${JSON.stringify(doc.goals)}`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

runBenchmark(main);
