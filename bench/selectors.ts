/**
 * Selector benchmark: a deterministic discrete-event simulation of a dispatcher fleet (the real
 * lib/dispatch/loop.ts loop, lib/dispatch/batch.ts and the selectors of lib/select) on a simulated SQS,
 * for Kale's three queues under steady, overloaded, bursty and idle workloads.
 *
 *   npm run bench:selectors -- [--json] [--seeds 1,2,…,9] [--workloads steady-0.9,idle-hour] [--selectors sla-aware,strict] [--jobs 2]
 *
 * Every figure pools the runs of all seeds (percentiles over all their waits, max of all): nine by
 * default. The selector's parameters are chosen on seeds 1–3 (the design and idle trade-offs run
 * there); seeds 4–9 are held out, and the targets are reported per set of three as well as pooled,
 * so a target met by the luck of one maximum shows. The same seeds give the same figures to the
 * digit. Runs are independent, so they are spread over `--jobs` worker threads (default: up to 2
 * cores) without changing any figure. Prints a table, or with --json one JSON document.
 */
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import { isMainThread, parentPort, Worker } from 'node:worker_threads';
import { DISPATCHER_DEFAULTS, SELECTOR_NAMES, type SelectorName } from '../lib/config/app-config';
import type { SlaAwareOptions } from '../lib/select/sla-aware';
import { printResults } from './results';
import { type QueueOut, type SelectorOut, selectorOut } from './sim/figures';
import { DEFAULT_FLEET, type FleetSpec, type RunFigures, runSimulation } from './sim/run';
import { KALE_QUEUES, SCALING_WORKLOADS, SELECTOR_CHECK_CELL, WORKLOADS, type Workload, workloadFor } from './sim/workloads';

/** One simulation cell: a workload and selector, all seeds. */
interface Job {
  readonly workload: string;
  readonly selector: SelectorName;
  readonly seeds: readonly number[];
  readonly slaAware?: SlaAwareOptions;
  readonly fleet?: FleetSpec;
  /** Run only the workload's first minutes (the check cell). */
  readonly minutes?: number;
}

async function runJob(job: Job): Promise<RunFigures> {
  const workload = workloadFor(job.workload, job.minutes);
  if (!workload) throw new Error(`no workload ${job.workload}`);
  return runSimulation({
    workload,
    selector: job.selector,
    seeds: job.seeds,
    ...(job.slaAware ? { slaAware: job.slaAware } : {}),
    ...(job.fleet ? { fleet: job.fleet } : {}),
  });
}

if (!isMainThread) {
  parentPort?.on('message', (message: { id: number; job: Job }) => {
    void runJob(message.job).then((result) => parentPort?.postMessage({ id: message.id, result }));
  });
}

const { values } = parseArgs({
  options: {
    json: { type: 'boolean', default: false },
    seeds: { type: 'string', default: '1,2,3,4,5,6,7,8,9' },
    workloads: { type: 'string' },
    selectors: { type: 'string' },
    jobs: { type: 'string', default: String(Math.min(2, availableParallelism())) },
  },
});
const seeds = (values.seeds as string).split(',').map(Number);
const workloads = values.workloads ? WORKLOADS.filter((w) => (values.workloads as string).split(',').includes(w.name)) : WORKLOADS;
const selectors = (values.selectors ? (values.selectors as string).split(',') : [...SELECTOR_NAMES]) as SelectorName[];
const DEFAULT = DISPATCHER_DEFAULTS.selector;
const BASELINE: SelectorName = 'reduced-lottery';
const progress = (line: string) => process.stderr.write(`${line}\n`);

/** Runs jobs on worker threads (or here, with --jobs 1), results in job order. */
async function runAll(jobs: readonly Job[], parallel: number): Promise<RunFigures[]> {
  const results: RunFigures[] = new Array(jobs.length);
  if (parallel <= 1) {
    for (const [i, job] of jobs.entries()) {
      results[i] = await runJob(job);
      progress(`  ${job.workload} ${job.selector} done`);
    }
    return results;
  }
  let next = 0;
  const workers = Array.from({ length: Math.min(parallel, jobs.length) }, () => new Worker(__filename));
  await Promise.all(
    workers.map(
      (worker) =>
        new Promise<void>((resolve, reject) => {
          const feed = () => {
            if (next >= jobs.length) return resolve();
            const id = next++;
            worker.postMessage({ id, job: jobs[id] });
          };
          worker.on('message', (message: { id: number; result: RunFigures }) => {
            results[message.id] = message.result;
            progress(`  ${jobs[message.id]?.workload} ${jobs[message.id]?.selector} done`);
            feed();
          });
          worker.on('error', reject);
          feed();
        }),
    ),
  );
  await Promise.all(workers.map((w) => w.terminate()));
  return results;
}

const ratio = (a: number, b: number) => (b > 0 ? Math.round((a / b) * 1000) / 1000 : a > 0 ? Number.POSITIVE_INFINITY : 1);
const [HIGH, , LOW] = KALE_QUEUES.map((q) => q.name) as [string, string, string];

/** Kale's own ReducedLottery (GetQueueAttributes as the emptiness check): the second baseline. */
const KALE: SelectorName = 'reduced-lottery-gqa';
/** Idle target: a lone low-priority task starts within this share of its queue's SLA… */
const IDLE_LOW_MAX_SHARE_OF_SLA = 0.1;
/** …for at most this share of ReducedLottery's requests. */
const IDLE_REQUESTS_SHARE = 0.5;

/**
 * The issue's targets for the default selector, in the same run. Under load, against both
 * ReducedLottery variants (each ratio must hold against each): high-priority p99 ≤ 0.5×, low-priority
 * max ≤ 1×, requests per task ≤ 1×. Idle: the low-priority max within 10 % of its SLA, at ≤ 0.5× of
 * ReducedLottery's requests.
 */
function targets(workload: Workload, out: Record<string, SelectorOut>) {
  const d = out[DEFAULT];
  const rl = out[BASELINE];
  const kale = out[KALE];
  const strict = out.strict;
  if (!d || !rl || !kale) return undefined;
  const vs = (b: SelectorOut) => ({
    highP99: ratio(d.queues[HIGH]?.p99 ?? 0, b.queues[HIGH]?.p99 ?? 0),
    lowMax: ratio(d.queues[LOW]?.max ?? 0, b.queues[LOW]?.max ?? 0),
    requests: ratio(d.sqsRequestsPerTask, b.sqsRequestsPerTask),
  });
  const [againstRl, againstKale] = [vs(rl), vs(kale)];
  const common = {
    highP99VsReducedLottery: againstRl.highP99,
    highP99VsKale: againstKale.highP99,
    highP99VsStrict: strict ? ratio(d.queues[HIGH]?.p99 ?? 0, strict.queues[HIGH]?.p99 ?? 0) : null,
    lowMaxVsReducedLottery: againstRl.lowMax,
    lowMaxVsKale: againstKale.lowMax,
    requestsVsReducedLottery: againstRl.requests,
    requestsVsKale: againstKale.requests,
  };
  if (workload.targets === 'idle') {
    const low = KALE_QUEUES.find((q) => q.name === LOW) as (typeof KALE_QUEUES)[number];
    const lowMaxShareOfSla = Math.round(((d.queues[LOW]?.max ?? 0) / low.slaSeconds) * 1000) / 1000;
    return {
      kind: 'idle' as const,
      ...common,
      lowMaxShareOfSla,
      met: {
        lowMaxWithinSla: lowMaxShareOfSla <= IDLE_LOW_MAX_SHARE_OF_SLA,
        requestsAtMostHalf: againstRl.requests <= IDLE_REQUESTS_SHARE,
      },
    };
  }
  return {
    kind: 'loaded' as const,
    ...common,
    met: {
      highP99AtMostHalf: Math.max(againstRl.highP99, againstKale.highP99) <= 0.5,
      lowMaxNoWorse: Math.max(againstRl.lowMax, againstKale.lowMax) <= 1,
      requestsNoMore: Math.max(againstRl.requests, againstKale.requests) <= 1,
    },
    /** The margin aimed for, so that meeting the high-priority target does not rest on one maximum. */
    aimed: { highP99AtMost04: Math.max(againstRl.highP99, againstKale.highP99) <= 0.4 },
  };
}

function workloadOut(workload: Workload, runs: ReadonlyMap<SelectorName, RunFigures>) {
  const out: Record<string, SelectorOut> = {};
  for (const [selector, figures] of runs) out[selector] = selectorOut(figures);
  return {
    name: workload.name,
    description: workload.description,
    minutes: workload.minutes,
    warmupMinutes: workload.warmupMinutes,
    load: workload.profile.map(([fromMinute, load]) => ({ fromMinute, load })),
    selectors: out,
    targets: targets(workload, out),
  };
}

/**
 * The idle trade-off of the SLA-aware selector: how long it pauses between looks at an idle queue
 * (the first pause, and how far repeated empty looks stretch it) against what idling costs.
 */
const IDLE_POINTS: ReadonlyArray<{ readonly label: string; readonly options: SlaAwareOptions }> = [
  { label: 'every ≤ 1 s', options: { firstLookMaxMs: 1000, maxLookFraction: 0 } },
  { label: 'every ≤ 3 s', options: { firstLookMaxMs: 3000, maxLookFraction: 0 } },
  { label: 'back off to 2% SLA', options: { maxLookFraction: 0.02 } },
  { label: 'back off to 5% SLA (default)', options: {} },
  { label: 'back off to 10% SLA', options: { maxLookFraction: 0.1 } },
];

/**
 * The growth of a queue's weight with its age over its SLA, on the workloads where the targets are
 * tightest: how much priority gives way to age.
 */
const DESIGN_WORKLOADS = ['steady-0.7', 'busy-hour'] as const;
const DESIGN_POINTS: ReadonlyArray<{ readonly label: string; readonly options: SlaAwareOptions }> = [
  { label: 'growth 1', options: { growth: 1 } },
  { label: 'growth 1.5: default', options: {} },
  { label: 'growth 2', options: { growth: 2 } },
  { label: 'growth 3', options: { growth: 3 } },
];

/** The seeds the selector's parameters are chosen on (the design and idle trade-offs run on these alone). */
const TUNING_SEEDS: readonly number[] = [1, 2, 3];
/**
 * The targets per set of three seeds, the tuning set and the two held out, for the default and both
 * ReducedLottery variants on the loaded workloads: a target met pooled but missed on one set shows.
 */
const SEED_SETS: ReadonlyArray<readonly number[]> = [TUNING_SEEDS, [4, 5, 6], [7, 8, 9]];
const SEED_SET_SELECTORS: readonly SelectorName[] = [DEFAULT, BASELINE, KALE];
const CHECK_CELL = { ...SELECTOR_CHECK_CELL, selector: DEFAULT };

const LOOP_WORKLOAD = 'steady-0.9';

/** The scheduled fleet: one invocation a minute, 300 s each (5 overlap), 12 at most (the default maxConcurrency). */
const SCHEDULED_FLEET: FleetSpec = { dispatchers: 5, concurrency: 10, invocationSeconds: 300 };
const MAX_CONCURRENCY = 12;
/** Lambda arm64 price per GB-second, and the example dispatcher's memory. */
const LAMBDA_GB_SECOND_USD = 0.000_013_333_4;
const DISPATCHER_GB = 1;

/** Minute by which the backlog a surge left was gone (fewer than 100 waiting), counted from the surge's end. */
function drainedAfter(workload: Workload, timeline: RunFigures['timeline']): number | null {
  const steps = workload.profile;
  const surge = steps.findIndex(([, load]) => load > 1);
  const surgeEnd = surge >= 0 ? steps[surge + 1]?.[0] : undefined;
  if (surgeEnd === undefined) return null;
  const drained = timeline.find((p) => p.minute >= surgeEnd && p.waiting < 100);
  return drained ? drained.minute - surgeEnd : null;
}

async function main() {
  const began = Date.now();
  const parallel = Number(values.jobs) || 1;
  const cells: Job[] = workloads.flatMap((w) => selectors.map((selector) => ({ workload: w.name, selector, seeds })));
  const tuning = [...TUNING_SEEDS];
  const idleJobs: Job[] = selectors.includes(DEFAULT)
    ? IDLE_POINTS.map((p) => ({ workload: 'idle-hour', selector: 'sla-aware', seeds: tuning, slaAware: p.options }))
    : [];
  const designJobs: Job[] = selectors.includes(DEFAULT)
    ? DESIGN_WORKLOADS.flatMap((workload) =>
        DESIGN_POINTS.map((p) => ({ workload, selector: DEFAULT, seeds: tuning, slaAware: p.options })),
      )
    : [];
  const heldOutJobs: Job[] = SEED_SET_SELECTORS.every((s) => selectors.includes(s))
    ? [
        ...SEED_SETS.flatMap((set) =>
          workloads
            .filter((w) => w.targets !== 'idle')
            .flatMap((w) => SEED_SET_SELECTORS.map((selector) => ({ workload: w.name, selector, seeds: set }))),
        ),
        { ...CHECK_CELL, seeds: [...CHECK_CELL.seeds] },
      ]
    : [];
  const loopJobs: Job[] = [BASELINE, DEFAULT]
    .filter((s) => selectors.includes(s))
    .flatMap((selector) =>
      [1, 0].map((maxBatchesInFlight) => ({
        workload: LOOP_WORKLOAD,
        selector,
        seeds,
        fleet: { ...DEFAULT_FLEET, ...(maxBatchesInFlight ? { maxBatchesInFlight } : {}) },
      })),
    );
  const scalingJobs: Job[] = selectors.includes(DEFAULT)
    ? SCALING_WORKLOADS.flatMap((w) =>
        [false, true].map((autoscale) => ({
          workload: w.name,
          selector: DEFAULT,
          seeds,
          fleet: { ...SCHEDULED_FLEET, schedule: { maxConcurrency: MAX_CONCURRENCY, autoscale } },
        })),
      )
    : [];
  const all = await runAll([...cells, ...idleJobs, ...loopJobs, ...scalingJobs, ...designJobs, ...heldOutJobs], parallel);
  const cellResults = all.slice(0, cells.length);
  const results = workloads.map((w) =>
    workloadOut(w, new Map(cellResults.filter((r) => r.workload === w.name).map((r) => [r.selector as SelectorName, r]))),
  );
  const idleTradeoff = all.slice(cells.length, cells.length + idleJobs.length).map((r, i) => {
    const o = selectorOut(r);
    return {
      looks: IDLE_POINTS[i]?.label ?? '',
      options: IDLE_POINTS[i]?.options ?? {},
      idleRequestsPerMinute: o.idleRequestsPerMinute,
      highP99: o.queues[HIGH]?.p99 ?? 0,
      defaultMax: o.queues.default?.max ?? 0,
      lowMax: o.queues[LOW]?.max ?? 0,
    };
  });
  const scalingStart = cells.length + idleJobs.length + loopJobs.length;
  const designStart = scalingStart + scalingJobs.length;
  const heldOutStart = designStart + designJobs.length;
  const heldOut = all.slice(heldOutStart);
  const seedSets = SEED_SETS.flatMap((set) =>
    workloads
      .filter((w) => w.targets !== 'idle')
      .map((w) => {
        const out: Record<string, SelectorOut> = {};
        for (const [i, r] of heldOut.entries()) {
          const job = heldOutJobs[i] as Job;
          if (job.workload === w.name && job.seeds === set) out[r.selector] = selectorOut(r);
        }
        // The figures the targets compare, for each selector: the design trade-off is judged against the tuning set's.
        const figures = Object.fromEntries(
          Object.entries(out).map(([name, o]) => [
            name,
            { highP99: o.queues[HIGH]?.p99 ?? 0, lowMax: o.queues[LOW]?.max ?? 0, sqsRequestsPerTask: o.sqsRequestsPerTask },
          ]),
        );
        return { workload: w.name, seeds: set, role: set === TUNING_SEEDS ? 'tuning' : 'held out', figures, targets: targets(w, out) };
      }),
  );
  const checkRun = heldOut.at(-1);
  const check = checkRun && heldOutJobs.length > 0 ? { ...CHECK_CELL, figures: selectorOut(checkRun) } : undefined;
  const designTradeoff = all.slice(designStart, heldOutStart).map((r, i) => {
    const o = selectorOut(r);
    const point = DESIGN_POINTS[i % DESIGN_POINTS.length];
    return {
      workload: r.workload,
      design: point?.label ?? '',
      options: point?.options ?? {},
      highP99: o.queues[HIGH]?.p99 ?? 0,
      defaultP99: o.queues.default?.p99 ?? 0,
      lowMax: o.queues[LOW]?.max ?? 0,
      sqsRequestsPerTask: o.sqsRequestsPerTask,
    };
  });
  const autoscaling = all.slice(scalingStart, designStart).map((r, i) => {
    const job = scalingJobs[i] as Job;
    const workload = SCALING_WORKLOADS.find((w) => w.name === job.workload) as Workload;
    const o = selectorOut(r);
    return {
      workload: r.workload,
      description: workload.description,
      fleet: job.fleet?.schedule?.autoscale
        ? `autoscaled (scheduled 5, at most ${MAX_CONCURRENCY})`
        : 'fixed (scheduled 5, run to timeout)',
      autoscale: job.fleet?.schedule?.autoscale === true,
      queues: o.queues,
      backlogDrainedMinutesAfterSurge: drainedAfter(workload, r.timeline),
      peakDispatchers: r.peakDispatchers,
      throttledInvocations: r.throttled,
      dispatcherSecondsPerRun: r.dispatcherSeconds,
      lambdaUsdPerHour:
        Math.round(((r.dispatcherSeconds * DISPATCHER_GB * LAMBDA_GB_SECOND_USD) / (workload.minutes / 60)) * 10_000) / 10_000,
      sqsRequestsPerTask: o.sqsRequestsPerTask,
      requestsPerMinute: o.requestsPerMinute,
      timeline: r.timeline,
    };
  });
  const loop = all.slice(cells.length + idleJobs.length, scalingStart).map((r, i) => ({
    selector: r.selector,
    loop: loopJobs[i]?.fleet?.maxBatchesInFlight === 1 ? 'blocking' : 'pipelined',
    workload: LOOP_WORKLOAD,
    ...selectorOut(r),
  }));
  const document = {
    benchmark: 'selectors',
    command: 'npm run bench:selectors -- --json',
    default: DEFAULT,
    baseline: BASELINE,
    seeds,
    fleet: DEFAULT_FLEET,
    queues: KALE_QUEUES,
    model: {
      sqs: 'bench/sim/sqs.ts: request latency 8 ms + exp(4 ms); short poll finds each visible message with p = 0.8; long poll answers on the first visible message',
      tasks: 'lognormal run times (σ 0.8) with the queue means, capped at 80% of the time limit; Poisson arrivals at load × fleet capacity',
      waits: 'publish → start; a task still waiting at the end counts with its age then; tasks published in the warm-up are not counted',
    },
    workloads: results,
    idleTradeoff,
    tuningSeeds: TUNING_SEEDS,
    designTradeoff,
    seedSets,
    check,
    loop,
    autoscaling,
    elapsedSeconds: Math.round((Date.now() - began) / 100) / 10,
  };
  if (values.json) {
    printResults(document);
    return;
  }
  printTables(document);
}

function printTables(doc: {
  default: string;
  workloads: ReturnType<typeof workloadOut>[];
  idleTradeoff: Array<{ looks: string; idleRequestsPerMinute: number; highP99: number; defaultMax: number; lowMax: number }>;
  loop: Array<SelectorOut & { selector: string; loop: string }>;
  autoscaling: Array<{
    workload: string;
    fleet: string;
    queues: Readonly<Record<string, QueueOut>>;
    backlogDrainedMinutesAfterSurge: number | null;
    peakDispatchers: number;
    throttledInvocations: number;
    dispatcherSecondsPerRun: number;
    lambdaUsdPerHour: number;
    sqsRequestsPerTask: number;
  }>;
  seeds: number[];
  elapsedSeconds: number;
}) {
  const pad = (s: string | number, n: number) => String(s).padStart(n);
  const lines: string[] = [];
  lines.push(
    `Selector benchmark — seeds ${doc.seeds.join(',')}, fleet ${DEFAULT_FLEET.dispatchers}×${DEFAULT_FLEET.concurrency} slots; waits in s (p50 / p99 / max)`,
  );
  for (const w of doc.workloads) {
    lines.push('', `${w.name}: ${w.description}`);
    lines.push(`${'selector'.padEnd(22)}${KALE_QUEUES.map((q) => pad(q.name, 26)).join('')}${pad('req/task', 10)}${pad('idle rpm', 10)}`);
    for (const [name, s] of Object.entries(w.selectors)) {
      const cells = KALE_QUEUES.map((q) => {
        const f = s.queues[q.name];
        return pad(f ? `${f.p50.toFixed(2)} / ${f.p99.toFixed(2)} / ${f.max.toFixed(1)}` : '-', 26);
      }).join('');
      lines.push(
        `${(name === doc.default ? `${name} (default)` : name).padEnd(22)}${cells}${pad(s.sqsRequestsPerTask.toFixed(3), 10)}${pad(s.idleRequestsPerMinute, 10)}`,
      );
    }
    const t = w.targets;
    if (t) {
      const mark = (ok: boolean) => (ok ? 'met' : 'NOT met');
      const both = (a: number, b: number) => `×${a} / ×${b}`;
      lines.push(
        t.kind === 'idle'
          ? `idle targets: low max ${Math.round(t.lowMaxShareOfSla * 1000) / 10} % of its SLA (≤ 10 %: ${mark(t.met.lowMaxWithinSla)}), ` +
              `requests/task ×${t.requestsVsReducedLottery} of reduced-lottery's (≤ 0.5: ${mark(t.met.requestsAtMostHalf)})`
          : `targets vs reduced-lottery / ${KALE}: high p99 ${both(t.highP99VsReducedLottery, t.highP99VsKale)} (≤ 0.5: ${mark(t.met.highP99AtMostHalf)}; ×${t.highP99VsStrict} of strict), ` +
              `low max ${both(t.lowMaxVsReducedLottery, t.lowMaxVsKale)} (≤ 1: ${mark(t.met.lowMaxNoWorse)}), requests/task ${both(t.requestsVsReducedLottery, t.requestsVsKale)} (≤ 1: ${mark(t.met.requestsNoMore)})`,
      );
    }
  }
  if (doc.idleTradeoff.length > 0) {
    lines.push('', 'idle trade-off (sla-aware, idle hour): pauses between looks at an idle queue vs what idling costs');
    lines.push(
      `${'looks at an idle queue'.padEnd(30)}${pad('idle rpm', 10)}${pad('high p99', 10)}${pad('def max', 10)}${pad('low max', 10)}`,
    );
    for (const p of doc.idleTradeoff) {
      lines.push(
        `${p.looks.padEnd(30)}${pad(p.idleRequestsPerMinute, 10)}${pad(p.highP99, 10)}${pad(p.defaultMax, 10)}${pad(p.lowMax, 10)}`,
      );
    }
  }
  if (doc.loop.length > 0) {
    lines.push('', 'dispatcher loop, steady-0.9: blocking (one batch in flight) vs pipelined (batches share the slots)');
    for (const r of doc.loop) {
      const q = (name: string) => r.queues[name];
      lines.push(
        `${`${r.selector} ${r.loop}`.padEnd(30)} high p99 ${pad(q(HIGH)?.p99 ?? 0, 8)}  low p99 ${pad(q(LOW)?.p99 ?? 0, 8)}  tasks ${pad(r.tasks, 7)}  req/task ${r.sqsRequestsPerTask}`,
      );
    }
  }
  if (doc.autoscaling.length > 0) {
    lines.push('', 'autoscaling (sla-aware; Lambda-like schedule: one invocation a minute, 300 s each)');
    lines.push(
      `${'workload / fleet'.padEnd(52)}${pad('high p99', 9)}${pad('def max', 9)}${pad('low max', 9)}${pad('drained', 9)}${pad('peak', 6)}${pad('disp-s', 8)}${pad('$/h', 8)}${pad('thr', 5)}`,
    );
    for (const a of doc.autoscaling) {
      const q = (name: string) => a.queues[name];
      const drained = a.backlogDrainedMinutesAfterSurge === null ? '-' : `${a.backlogDrainedMinutesAfterSurge} min`;
      lines.push(
        `${`${a.workload}: ${a.fleet}`.padEnd(52)}${pad(q(HIGH)?.p99 ?? 0, 9)}${pad(q('default')?.max ?? 0, 9)}${pad(q(LOW)?.max ?? 0, 9)}${pad(drained, 9)}${pad(a.peakDispatchers, 6)}${pad(a.dispatcherSecondsPerRun, 8)}${pad(a.lambdaUsdPerHour, 8)}${pad(a.throttledInvocations, 5)}`,
      );
    }
  }
  lines.push('', `(${doc.elapsedSeconds} s)`);
  process.stdout.write(`${lines.join('\n')}\n`);
}

if (isMainThread) {
  main().catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  });
}
