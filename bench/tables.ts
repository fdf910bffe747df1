/**
 * BENCHMARKS.md's tables and docs/performance.md's figures, written from the JSON the benchmarks
 * wrote (`bench/results/*.json`). In the Markdown, a block
 *
 *   <!-- bench:selectors:steady-0.7 -->
 *   …generated…
 *   <!-- /bench -->
 *
 * holds what `BLOCKS['selectors:steady-0.7']` makes of its JSON, and nothing else: prose outside the
 * markers is written by hand, every figure inside them comes from a file, and each block names the
 * file and the commit it was measured at. `npm run bench:tables` rewrites the blocks;
 * `npm run bench:tables -- --check` (and test/unit/bench-tables.test.ts) fails when they differ.
 *
 * The JSON against the code is bench/staleness.ts's rule: a stale benchmark's blocks carry a line
 * saying so (and the check fails for a simulation).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join, posix } from 'node:path';
import { PRICES, round } from './prices';
import type { MeasuredAt } from './results';
import type { SelectorOut } from './sim/figures';
import {
  type BenchmarkName,
  type ChangedSince,
  type Freshness,
  freshness,
  gitChangedSince,
  MEASURED,
  remeasure,
  resultsFile,
  staleNote,
} from './staleness';
import { TRACKING_HEADER, type TrackingResult, trackingRow } from './tracking-rows';

/** The Markdown files that hold generated blocks, and the blocks each must hold (paths from the repository's root). */
export const DOCUMENTS: Readonly<Record<string, readonly string[]>> = {
  'BENCHMARKS.md': [
    'selectors:steady-0.7',
    'selectors:steady-0.9',
    'selectors:steady-1.05',
    'selectors:busy-hour',
    'selectors:burst',
    'selectors:idle-hour',
    'selectors:targets',
    'selectors:seeds',
    'selectors:design',
    'selectors:idle-tradeoff',
    'selectors:loop',
    'selectors:autoscaling',
    'e2e:saturation',
    'e2e:peer',
    'e2e:io-concurrency',
    'e2e:cost',
    'e2e:cost-attribution',
    'e2e:idle-cost',
    'idle:idle',
    'idle:wake',
    'idle:monthly',
    'idle:under-load',
    'tracking',
    'scheduled',
    'flows',
    'events',
    'payloads',
    'limits',
    'reality',
    'load',
    'mixed',
    'steps',
    'keys',
  ],
  'docs/performance.md': ['selectors:targets', 'readme:autoscaling', 'readme:e2e', 'readme:idle'],
  'docs/guarantees.md': ['tracking'],
  'docs/tasks.md': ['steps'],
  'docs/keys.md': ['keys'],
};

// ---------------------------------------------------------------------------------------------
// The JSON, as far as the tables read it.

interface Recorded {
  readonly measuredAt?: MeasuredAt;
  readonly node?: string;
}

/** The default selector against ReducedLottery (`…VsReducedLottery`) and Kale's own variant (`…VsKale`), same run. */
interface TargetRatios {
  readonly highP99VsReducedLottery: number;
  readonly highP99VsKale: number;
  readonly highP99VsStrict: number | null;
  readonly lowMaxVsReducedLottery: number;
  readonly lowMaxVsKale: number;
  readonly requestsVsReducedLottery: number;
  readonly requestsVsKale: number;
}

type SelectorTargets =
  | (TargetRatios & {
      readonly kind: 'loaded';
      readonly met: { readonly highP99AtMostHalf: boolean; readonly lowMaxNoWorse: boolean; readonly requestsNoMore: boolean };
      /** The margin aimed for: high-priority p99 ≤ 0.4× both baselines. */
      readonly aimed?: { readonly highP99AtMost04: boolean };
    })
  | (TargetRatios & {
      readonly kind: 'idle';
      readonly lowMaxShareOfSla: number;
      readonly met: { readonly lowMaxWithinSla: boolean; readonly requestsAtMostHalf: boolean };
    });

interface SelectorsDoc extends Recorded {
  readonly default: string;
  readonly baseline: string;
  readonly seeds: readonly number[];
  readonly fleet: { readonly dispatchers: number; readonly concurrency: number };
  readonly queues: ReadonlyArray<{ readonly name: string; readonly slaSeconds: number }>;
  readonly workloads: ReadonlyArray<{
    readonly name: string;
    readonly description: string;
    readonly selectors: Readonly<Record<string, SelectorOut>>;
    readonly targets?: SelectorTargets;
  }>;
  /** The seeds the selector's parameters were chosen on (the design and idle trade-offs ran on these). */
  readonly tuningSeeds: readonly number[];
  readonly seedSets: ReadonlyArray<{
    readonly workload: string;
    readonly seeds: readonly number[];
    readonly role: 'tuning' | 'held out';
    readonly figures: Readonly<Record<string, { readonly highP99: number; readonly lowMax: number; readonly sqsRequestsPerTask: number }>>;
    readonly targets?: SelectorTargets;
  }>;
  /** One cell, one seed, that the test suite runs again (test/unit/bench-tables.test.ts). */
  readonly check?: {
    readonly workload: string;
    readonly selector: string;
    readonly seeds: readonly number[];
    /** The workload's first minutes only. */
    readonly minutes?: number;
    readonly figures: SelectorOut;
  };
  readonly designTradeoff: ReadonlyArray<{
    readonly workload: string;
    readonly design: string;
    readonly highP99: number;
    readonly defaultP99: number;
    readonly lowMax: number;
    readonly sqsRequestsPerTask: number;
  }>;
  readonly idleTradeoff: ReadonlyArray<{
    readonly looks: string;
    readonly idleRequestsPerMinute: number;
    readonly highP99: number;
    readonly defaultMax: number;
    readonly lowMax: number;
  }>;
  readonly loop: ReadonlyArray<SelectorOut & { readonly selector: string; readonly loop: string; readonly workload: string }>;
  readonly autoscaling: ReadonlyArray<{
    readonly workload: string;
    readonly fleet: string;
    readonly autoscale: boolean;
    readonly queues: SelectorOut['queues'];
    readonly backlogDrainedMinutesAfterSurge: number | null;
    readonly peakDispatchers: number;
    readonly lambdaUsdPerHour: number;
  }>;
}

interface E2eFigures {
  readonly consumer: string;
  readonly tasksPerSecond: number;
  readonly sqsRequestsPerTask: number;
  readonly dynamoWriteUnitsPerTask?: number;
  readonly rounds?: readonly number[];
  readonly cpuMsPerTask?: { readonly consumer: number; readonly consumerMainThread: number; readonly emulators: number };
  /** Absent in results written before the peers ran at the dispatcher's concurrency. */
  readonly concurrency?: {
    readonly loops?: number;
    readonly pollers?: { readonly initial: number; readonly peak: number };
    readonly messagesInFlight: { readonly mean: number; readonly peak: number };
  };
  readonly criticalPath?: {
    readonly dynamoWritesPerJob: { readonly first: number; readonly second: number; readonly other: number };
    readonly dynamoWritesPerBatch: number;
    readonly meanMs: Readonly<Record<string, number>>;
    readonly endedWithinCycle: { readonly firstWrites: number; readonly secondWrites: number; readonly delete: number };
    readonly roundTripsOnCycle: { readonly sqs: number; readonly dynamo: number };
    readonly dynamoInFlight: number;
  };
}

/** One run's attributed parts against its metered whole (bench/e2e.ts `costAttribution`). */
interface E2eCostAttribution {
  readonly consumer: string;
  readonly attributedSqs: number;
  readonly meteredSqs: number;
  readonly attributedWcu: number;
  readonly meteredWcu: number;
  readonly ratio: number;
  readonly attributedGbSeconds: number;
  readonly usdPerMillionTasks: number;
}

interface E2eModel {
  readonly mainThreadMsPerBatch: number;
  readonly pipelined: boolean;
  /** Receive loops modelled (the trigger: its mapping's first invocations); absent before the peers scaled: 1. */
  readonly loops?: number;
  readonly tasksPerSecond: Readonly<Record<string, number>>;
  /** One loop's (one invocation's). */
  readonly perLoop?: Readonly<Record<string, number>>;
}

interface E2eDoc extends Recorded {
  readonly saturation: readonly E2eFigures[];
  readonly breakdown: readonly E2eFigures[];
  /** Absent in results written before the per-task cost was attributed (issue 23). */
  readonly costAttribution?: readonly E2eCostAttribution[];
  /** Absent in results written before the peer was measured. */
  readonly peer?: {
    readonly package: string;
    /** How the trigger's pollers grew (absent in results written when it ran one poller). */
    readonly scaling?: { readonly initial: number; readonly addedPerMinute: number; readonly maximum: number };
    readonly concurrency: string;
    readonly full: string;
    readonly trigger: string;
    readonly fullVsPeer: {
      readonly tasksPerSecond: number;
      readonly dynamoWriteUnitsPerTask: number;
      readonly sqsRequestsPerTask: number;
      readonly awsModel: Readonly<Record<string, number>>;
      readonly awsModelPerInvocation?: Readonly<Record<string, number>>;
      readonly dispatchersForFivePollers?: Readonly<Record<string, number>>;
    };
    readonly goals: { readonly throughputAtLeast1x: boolean; readonly writeUnitsPerTaskAtMost1x: boolean };
    readonly awsModel: {
      readonly formula: string;
      readonly sqsMs: number;
      readonly dynamoWriteMs: readonly number[];
      readonly full: E2eModel;
      readonly trigger: E2eModel;
    };
  };
  /** The raw loops and sqs-consumer instances, and why that many (absent when they ran one each). */
  readonly instances?: { readonly count: number; readonly why: string };
  readonly ratios: {
    readonly taskworkerOffVsRaw: number;
    readonly taskworkerOffVsSqsConsumer: number;
    readonly inlineOffVsRaw: number;
    readonly inlineOffVsSqsConsumer: number;
  };
  readonly goals: {
    readonly sqsRequestsPerTaskAtMost0_21: boolean;
    readonly atLeast0_8xRawWithTrackingOff: { readonly threads: boolean; readonly inline: boolean };
    readonly atLeast1xSqsConsumer: { readonly threads: boolean; readonly inline: boolean };
  };
  readonly ioConcurrency: { readonly taskMs: number; readonly runs: readonly E2eFigures[] };
  readonly costPerMillionTasks: ReadonlyArray<{
    readonly design: string;
    readonly usdPerMillionTasks: { readonly sqs: number; readonly dynamo: number; readonly lambda: number; readonly total: number };
  }>;
  readonly idleCostPerHour: ReadonlyArray<{
    readonly design: string;
    readonly averageDispatchers: number;
    readonly sqsRequestsPerHour: number;
    readonly lambdaGbSecondsPerHour: number;
    readonly usdPerHour: number;
  }>;
}

interface UnderLoadFigures {
  readonly highP99: number;
  readonly lowMax: number;
  readonly requestsPerTask: number;
  readonly doorbellInvocations: number;
}

interface IdleDoc extends Recorded {
  readonly taskworker: {
    readonly idleUsdPerHour: number;
    readonly idleRequestsPerHour: number;
    readonly idleSweepReadUnitsPerHour: number;
    readonly idleGbSecondsPerHour: number;
    readonly idleTickMs: { readonly p50: number; readonly max: number; readonly samples: number };
    readonly wakeLatencySeconds: {
      readonly p50: number;
      readonly p99: number;
      readonly max: number;
      readonly samples: number;
      readonly invokedBy: Readonly<Record<string, number>>;
    };
    readonly awsWakeLatencySecondsModelled: { readonly coldStart: number; readonly warm: number };
  };
  readonly lambdaTrigger: { readonly idleUsdPerHour: number; readonly idleRequestsPerHour: number; readonly pollersPerQueue: number };
  readonly idleRatio: number;
  readonly underLoad: ReadonlyArray<{
    readonly workload: string;
    readonly reducedLottery: UnderLoadFigures;
    readonly slaAware: UnderLoadFigures;
    readonly slaAwareWithDoorbells: UnderLoadFigures;
    readonly targets: { readonly highP99AtMostHalf: boolean; readonly lowMaxNoWorse: boolean; readonly requestsNoMore: boolean };
  }>;
  readonly monthly: ReadonlyArray<{ readonly workload: string; readonly design: string; readonly usd: number; readonly vsTrigger: number }>;
  readonly goals: {
    readonly idleAtMost1_5xTrigger: boolean;
    readonly wakeP50AtMost1s: boolean;
    readonly wakeP99AtMost2s: boolean;
    readonly fullTrackingAtMostTrigger: ReadonlyArray<{ readonly workload: string; readonly met: boolean }>;
  };
}

interface Units {
  readonly sqsRequests: number;
  readonly dynamoRequests: number;
  readonly writeUnits: number;
  readonly readUnits: number;
}

interface TrackingDoc extends Recorded {
  readonly tasksPerRun: number;
  readonly results: readonly TrackingResult[];
}

interface ScheduledDoc extends Recorded {
  readonly results: ReadonlyArray<{
    readonly mode: string;
    readonly later: boolean;
    readonly park?: Units;
    readonly sweep?: Units;
    readonly run: Units;
  }>;
}

interface StepsDoc extends Recorded {
  readonly jobsPerWorkload: number;
  readonly perItem: Readonly<Record<'step' | 'sleep' | 'tokenWait' | 'eventWait', Units & { readonly dollarsPerMillion: number }>>;
  readonly workflow: {
    readonly perJob: Units;
    readonly peers: Readonly<Record<string, { readonly perMillionWorkflows: number; readonly modelled: boolean }>>;
  };
  readonly latency: { readonly samples: number } & Readonly<
    Record<
      'afterSleepDue' | 'afterTokenCompleted' | 'afterEventSent',
      { readonly p50Ms: number; readonly p99Ms: number; readonly maxMs: number }
    >
  >;
}

type FairnessRun = {
  readonly floodJobs: number;
  readonly smallJobs: number;
  readonly smallWaitMs: { readonly p50: number; readonly p95: number; readonly max: number };
  readonly mostRunning: { readonly all: number; readonly perKey: number };
  readonly floodParkedPerJob: number;
};

interface KeysDoc extends Recorded {
  readonly jobsPerWorkload: number;
  readonly perRule: Readonly<
    Record<
      'keyed' | 'parked' | 'unique' | 'in-turn' | 'ordered',
      Units & { readonly dollarsPerMillion: number; readonly parksPerJob: number }
    >
  >;
  readonly fairness: {
    readonly limits: { readonly perKey: number; readonly total: number };
    readonly slots: number;
    readonly quiet: FairnessRun;
    readonly flooded: FairnessRun;
    readonly p95Ratio: number;
  };
}

interface LimitsDoc extends Recorded {
  readonly results: ReadonlyArray<{
    readonly case: string;
    readonly seconds: number;
    readonly deferralsPerTask: number;
    /** The case beside a task a 429 paused: its jobs, and how often each was received (and held back). */
    readonly pausedJobs?: number;
    readonly receivesPerHeldJob?: number;
    /** Each run's seconds (the reported run is the median's). */
    readonly runs?: readonly number[];
    readonly sqsRequestsPerTask: number;
    readonly dynamoRequestsPerTask: number;
    readonly writeUnitsPerTask: number;
    readonly readUnitsPerTask: number;
  }>;
}

interface RealityQuantile {
  readonly simulatedMedian: number;
  readonly simulatedRange: readonly [number, number];
  readonly real: number;
  readonly difference: number;
}

interface RealityDoc extends Recorded {
  readonly queues: ReadonlyArray<{
    readonly queue: string;
    readonly started: number;
    readonly p50: RealityQuantile;
    readonly p90: RealityQuantile;
    readonly p99: RealityQuantile;
    readonly predictedForAws: { readonly p50: number; readonly p90: number; readonly p99: number };
  }>;
  readonly sqsRequestsPerTask: RealityQuantile & { readonly predictedForAws: number };
  readonly simulatedRequests: Readonly<Record<string, number>>;
  readonly realRequests: Readonly<Record<string, number>>;
}

interface LoadDoc extends Recorded {
  readonly tasks: number;
  readonly dispatchers: number;
  readonly concurrency: number;
  readonly publishSeconds: number;
  readonly runSeconds: number;
  readonly tasksPerSecond: number;
  readonly published: number;
  readonly succeeded: number;
  readonly archived: number;
  readonly publishedEqualsSucceededPlusArchived: boolean;
  readonly expected: Readonly<Record<string, number>>;
  readonly archivedByReason: Readonly<Record<string, number>>;
  readonly archiveMessages: number;
  readonly deadLetters: number;
  readonly statsAgree: boolean;
  readonly settledPerDispatcher: readonly number[];
  readonly peakRssMb: readonly number[];
  readonly rssMbByQuarter: ReadonlyArray<readonly number[]>;
}

interface FlowsDoc extends Recorded {
  readonly members: number;
  readonly chords: number;
  readonly chainSteps: number;
  readonly perJob: Units;
  readonly chord: { readonly whole: Units; readonly addedPerMember: Units };
  readonly chain: { readonly addedPerEdge: Units };
  readonly close: { readonly samples: readonly number[]; readonly p50Ms: number; readonly p99Ms: number };
  readonly monthly: {
    readonly flowsADay: number;
    readonly taskworkerFlowOnly: number;
    readonly taskworkerWhole: number;
    readonly stepFunctionsTransitionsPerFlow: number;
    readonly stepFunctions: number;
    readonly ratio: number;
  };
}

interface EventUnits extends Units {
  readonly snsPublishes: number;
}

interface EventCase {
  readonly subscriberJobs: number;
  readonly perSubscriberJob: EventUnits;
  readonly addedPerSubscriberJob: EventUnits;
  readonly dollarsPerMillionEvents: number;
  readonly emitToStartMs: { readonly p50: number; readonly p99: number };
}

interface EventsDoc extends Recorded {
  readonly events: number;
  readonly perJob: EventUnits;
  readonly onePerQueue: EventCase;
  readonly splitOnOneQueue: EventCase;
  readonly snsPerMillionPublishes: number;
}

interface PayloadsSize {
  readonly label: string;
  readonly payloadBytes: number;
  readonly claimChecked: boolean;
  readonly publishMs: { readonly p50: number; readonly p99: number };
  readonly publishToStartMs: { readonly p50: number; readonly p99: number };
  readonly perJob: {
    readonly sqsRequests: number;
    readonly writeUnits: number;
    readonly readUnits: number;
    readonly s3Puts: number;
    readonly s3Gets: number;
    readonly s3Deletes: number;
  };
  readonly dollarsPerMillionJobs: number;
  readonly s3DollarsPerMillionJobs: number;
}

interface PayloadsDoc extends Recorded {
  readonly jobsPerSize: number;
  readonly results: readonly PayloadsSize[];
  readonly objectsLeftAfterwards: number;
  readonly s3Prices: { readonly putPerThousand: number; readonly getPerThousand: number; readonly storagePerGbMonth: number };
}

interface MixedWaits {
  readonly samples: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  readonly met: boolean;
}

interface MixedDoc extends Recorded {
  readonly setup: string;
  readonly targets: { readonly p50Seconds: number; readonly p99Seconds: number };
  readonly rounds: number;
  readonly cases: ReadonlyArray<
    MixedWaits & {
      readonly case: string;
      /** Absent in results written before the cases described themselves. */
      readonly description?: string;
      /** The first round, on containers it started. */
      readonly coldRound: MixedWaits;
    }
  >;
  /** The same cases on the simulation; absent in results written before it ran them. */
  readonly simulation?: {
    readonly setup: string;
    readonly cases: ReadonlyArray<MixedWaits & { readonly case: string; readonly description: string; readonly lowMaxSeconds: number }>;
  };
}

/** Each benchmark's document, as the tables read it. */
interface Documents {
  readonly selectors: SelectorsDoc;
  readonly e2e: E2eDoc;
  readonly idle: IdleDoc;
  readonly scheduled: ScheduledDoc;
  readonly steps: StepsDoc;
  readonly keys: KeysDoc;
  readonly tracking: TrackingDoc;
  readonly flows: FlowsDoc;
  readonly events: EventsDoc;
  readonly payloads: PayloadsDoc;
  readonly limits: LimitsDoc;
  readonly reality: RealityDoc;
  readonly load: LoadDoc;
  /** Undefined until it is first measured (see {@link MAY_BE_ABSENT}). */
  readonly mixed: MixedDoc | undefined;
}

/** The result files, read once per rendering, and whether each still describes the code. */
export type Results = { readonly [K in BenchmarkName]: Documents[K] } & {
  readonly freshness: Readonly<Record<BenchmarkName, Freshness>>;
};

export const RESULT_FILES = Object.fromEntries((Object.keys(MEASURED) as BenchmarkName[]).map((name) => [name, resultsFile(name)])) as {
  readonly [K in BenchmarkName]: string;
};

/**
 * Benchmarks whose JSON may be absent: their blocks say they have not been measured yet.
 * bench:mixed was written on a loaded machine and is measured later.
 */
const MAY_BE_ABSENT: ReadonlySet<BenchmarkName> = new Set(['mixed']);

/** Reads every result file and judges each against the code (`changedSince`: git in `root`, unless a test injects one). */
export function readResults(root: string, changedSince: ChangedSince = gitChangedSince(root)): Results {
  const names = Object.keys(MEASURED) as BenchmarkName[];
  const docs: Partial<Record<BenchmarkName, { measuredAt?: MeasuredAt } | undefined>> = {};
  const fresh: Partial<Record<BenchmarkName, Freshness>> = {};
  for (const name of names) {
    const path = join(root, RESULT_FILES[name]);
    const absent = MAY_BE_ABSENT.has(name) && !existsSync(path);
    const doc = absent ? undefined : (JSON.parse(readFileSync(path, 'utf8')) as { measuredAt?: MeasuredAt });
    docs[name] = doc;
    fresh[name] = freshness(name, doc?.measuredAt, changedSince, absent);
  }
  return { ...docs, freshness: fresh } as unknown as Results;
}

// ---------------------------------------------------------------------------------------------
// Formatting.

const num = (n: number) => String(n);
const grouped = (n: number) => n.toLocaleString('en-US');
const times = (n: number) => `${n}×`;
const percent = (share: number) => `${Math.round(share * 1000) / 10} %`;
const ratio = (a: number, b: number) => (b > 0 ? Math.round((a / b) * 1000) / 1000 : Number.POSITIVE_INFINITY);
const met = (ok: boolean) => (ok ? 'met' : '**not met**');
const signed = (n: number) => (n > 0 || Object.is(n, 0) ? `+${n}` : String(n));
const range = (values: readonly number[]) => `${Math.min(...values)}–${Math.max(...values)}`;

function table(header: readonly string[], rows: ReadonlyArray<ReadonlyArray<string | number>>): string {
  const line = (cells: ReadonlyArray<string | number>) => `| ${cells.map(String).join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}

/**
 * The first line of every block: which file, measured at which commit; and under it, when the file
 * is stale (bench/staleness.ts), a line saying so and how to re-measure it.
 */
function source(key: BenchmarkName, results: Results, extra?: string): string {
  const doc: Recorded | undefined = results[key];
  const file = RESULT_FILES[key];
  if (!doc) return `<sub>Generated by \`npm run bench:tables\` from \`${file}\`: not measured yet.</sub>`;
  const at = doc.measuredAt;
  const commit =
    at?.commit == null ? 'commit not recorded' : `measured at commit ${at.commit}${at.dirty ? ' with uncommitted changes' : ''}`;
  const node = doc.node ? `, Node ${doc.node}` : '';
  const line = `<sub>Generated by \`npm run bench:tables\` from [\`${file}\`](${file}): ${commit}${node}${extra ? `; ${extra}` : ''}.</sub>`;
  const note = staleNote(key, results.freshness[key]);
  return note === null ? line : `${line}\n\n${note}`;
}

// ---------------------------------------------------------------------------------------------
// Selection (bench:selectors).

const shortQueue = (name: string) => name.replace(/_priority$/, '');

function selectorWorkload(r: Results, name: string): string {
  const doc = r.selectors;
  const w = doc.workloads.find((x) => x.name === name);
  if (!w) throw new Error(`${RESULT_FILES.selectors} has no workload ${name}`);
  const names = Object.keys(w.selectors);
  const order = [doc.default, doc.baseline, ...names.filter((n) => n !== doc.default && n !== doc.baseline)].filter((n) =>
    names.includes(n),
  );
  const rows = order.map((selector) => {
    const s = w.selectors[selector] as SelectorOut;
    return [
      selector === doc.default ? `**${selector}** (default)` : selector,
      ...doc.queues.map((q) => `${s.queues[q.name]?.p99} / ${s.queues[q.name]?.max}`),
      num(s.sqsRequestsPerTask),
      num(s.idleRequestsPerMinute),
    ];
  });
  const lines = [
    source('selectors', r, `seeds ${doc.seeds.join(', ')} pooled; times in seconds`),
    '',
    `**${w.name}** — ${w.description}`,
    '',
    table(
      ['selector', ...doc.queues.map((q) => `${shortQueue(q.name)} p99 / max (s)`), 'SQS requests per task', 'idle requests per minute'],
      rows,
    ),
  ];
  const t = w.targets;
  if (t) lines.push('', targetSentence(doc.default, doc.baseline, t));
  return lines.join('\n');
}

const KALE = 'reduced-lottery-gqa';
const pair = (a: number, b: number) => `${times(a)} / ${times(b)}`;

/** What a workload's targets came to, in one paragraph under its table. */
function targetSentence(selector: string, baseline: string, t: SelectorTargets): string {
  if (t.kind === 'idle') {
    const count = [t.met.lowMaxWithinSla, t.met.requestsAtMostHalf].filter(Boolean).length;
    return (
      `Idle targets for ${selector}: its lone low-priority task waits at most ${percent(t.lowMaxShareOfSla)} of the queue's SLA ` +
      `(target within 10 %: ${met(t.met.lowMaxWithinSla)}) for ${times(t.requestsVsReducedLottery)} ${baseline}'s SQS requests per task ` +
      `(target ≤ 0.5×: ${met(t.met.requestsAtMostHalf)}). ${count === 2 ? 'Both met.' : `**${count} of 2 met.**`} ` +
      `(Its low-priority max is ${pair(t.lowMaxVsReducedLottery, t.lowMaxVsKale)} ${baseline}'s / ${KALE}'s: those look at every queue on every pass.)`
    );
  }
  const count = [t.met.highP99AtMostHalf, t.met.lowMaxNoWorse, t.met.requestsNoMore].filter(Boolean).length;
  return (
    `${selector} against ${baseline} / ${KALE} (Kale's code): high p99 ${pair(t.highP99VsReducedLottery, t.highP99VsKale)} ` +
    `(target ≤ 0.5× both: ${met(t.met.highP99AtMostHalf)}${t.highP99VsStrict === null ? '' : `; ×${t.highP99VsStrict} of strict's`}), ` +
    `low max ${pair(t.lowMaxVsReducedLottery, t.lowMaxVsKale)} (target ≤ 1× both: ${met(t.met.lowMaxNoWorse)}), ` +
    `SQS requests per task ${pair(t.requestsVsReducedLottery, t.requestsVsKale)} (target ≤ 1× both: ${met(t.met.requestsNoMore)}). ` +
    (count === 3 ? 'All three targets met.' : `**${count} of 3 targets met.**`)
  );
}

function selectorTargets(r: Results): string {
  const doc = r.selectors;
  const rows: string[][] = [];
  const missed: string[] = [];
  for (const w of doc.workloads) {
    const t = w.targets;
    if (!t) continue;
    if (t.kind === 'idle') {
      rows.push([
        w.name,
        'idle: —',
        `${percent(t.lowMaxShareOfSla)} of its SLA (target ≤ 10 %) ${met(t.met.lowMaxWithinSla)}`,
        `${times(t.requestsVsReducedLottery)} of ${doc.baseline}'s (target ≤ 0.5×) ${met(t.met.requestsAtMostHalf)}`,
      ]);
      const not = [
        t.met.lowMaxWithinSla ? null : `low-priority max ${percent(t.lowMaxShareOfSla)} of its SLA`,
        t.met.requestsAtMostHalf ? null : `requests ${times(t.requestsVsReducedLottery)}`,
      ].filter((x) => x !== null);
      if (not.length > 0) missed.push(`${w.name} (${not.join(', ')})`);
      continue;
    }
    rows.push([
      w.name,
      `${pair(t.highP99VsReducedLottery, t.highP99VsKale)} ${met(t.met.highP99AtMostHalf)}${t.aimed?.highP99AtMost04 === false ? ' (over the 0.4× aimed for)' : ''}`,
      `${pair(t.lowMaxVsReducedLottery, t.lowMaxVsKale)} ${met(t.met.lowMaxNoWorse)}`,
      `${pair(t.requestsVsReducedLottery, t.requestsVsKale)} ${met(t.met.requestsNoMore)}`,
    ]);
    const not = [
      t.met.highP99AtMostHalf ? null : `high-priority p99 ${pair(t.highP99VsReducedLottery, t.highP99VsKale)}`,
      t.met.lowMaxNoWorse ? null : `low-priority max ${pair(t.lowMaxVsReducedLottery, t.lowMaxVsKale)}`,
      t.met.requestsNoMore ? null : `requests per task ${pair(t.requestsVsReducedLottery, t.requestsVsKale)}`,
    ].filter((x) => x !== null);
    if (not.length > 0) missed.push(`${w.name} (${not.join(', ')})`);
  }
  return [
    source('selectors', r, `seeds ${doc.seeds.join(', ')} pooled`),
    '',
    table(
      [
        `workload (${doc.default} against ${doc.baseline} / ${KALE}, same run)`,
        'high-priority p99 wait (target ≤ 0.5× both)',
        'low-priority max wait (target ≤ 1× both)',
        'SQS requests per task (target ≤ 1× both)',
      ],
      rows,
    ),
    '',
    missed.length === 0 ? 'Every target met on every workload.' : `Not met: ${missed.join('; ')}.`,
  ].join('\n');
}

/** The loaded workloads' targets per set of three seeds: the set the parameters were chosen on, and the two held out. */
function selectorSeeds(r: Results): string {
  const doc = r.selectors;
  const rows: string[][] = [];
  let cells = 0;
  let metCells = 0;
  for (const h of doc.seedSets) {
    const t = h.targets;
    if (t?.kind !== 'loaded') continue;
    cells += 1;
    if (t.met.highP99AtMostHalf && t.met.lowMaxNoWorse && t.met.requestsNoMore) metCells += 1;
    rows.push([
      h.workload,
      `${h.seeds.join(', ')} (${h.role})`,
      `${pair(t.highP99VsReducedLottery, t.highP99VsKale)} ${met(t.met.highP99AtMostHalf)}`,
      `${pair(t.lowMaxVsReducedLottery, t.lowMaxVsKale)} ${met(t.met.lowMaxNoWorse)}`,
      `${pair(t.requestsVsReducedLottery, t.requestsVsKale)} ${met(t.met.requestsNoMore)}`,
    ]);
  }
  return [
    source('selectors', r, `${doc.default}, ${doc.baseline} and ${KALE} only; each row pools its three seeds`),
    '',
    table(
      [
        'workload',
        'seeds',
        'high-priority p99 (target ≤ 0.5× both)',
        'low-priority max (target ≤ 1× both)',
        'SQS requests per task (target ≤ 1× both)',
      ],
      rows,
    ),
    '',
    `Every target met in ${metCells} of ${cells} workload × seed-set cells.`,
  ].join('\n');
}

/** The growth curve on the tuning seeds, judged against the baselines on the same seeds: what each point costs and buys. */
function selectorDesign(r: Results): string {
  const doc = r.selectors;
  const workloads = [...new Set(doc.designTradeoff.map((p) => p.workload))];
  const lines = [
    source('selectors', r, `seeds ${doc.tuningSeeds.join(', ')} pooled (the tuning set); ${doc.default} only; times in seconds`),
    '',
  ];
  for (const workload of workloads) {
    const tuned = doc.seedSets.find((h) => h.workload === workload && h.role === 'tuning');
    const rl = tuned?.figures[doc.baseline];
    const kale = tuned?.figures[KALE];
    const bound = (f: (s: { highP99: number; lowMax: number; sqsRequestsPerTask: number }) => number) =>
      rl && kale ? Math.min(f(rl), f(kale)) : Number.NaN;
    const highBound = round(bound((s) => s.highP99) / 2, 3);
    const lowBound = bound((s) => s.lowMax);
    const reqBound = bound((s) => s.sqsRequestsPerTask);
    lines.push(
      `**${workload}** (targets on these seeds: high p99 ≤ ${highBound}, low max ≤ ${lowBound}, requests per task ≤ ${reqBound})`,
      '',
      table(
        ['design', 'high p99', 'default p99', 'low max', 'SQS requests per task'],
        doc.designTradeoff
          .filter((p) => p.workload === workload)
          .map((p) => [
            p.design,
            `${p.highP99}${p.highP99 <= highBound ? '' : ' ✗'}`,
            num(p.defaultP99),
            `${p.lowMax}${p.lowMax <= lowBound ? '' : ' ✗'}`,
            `${p.sqsRequestsPerTask}${p.sqsRequestsPerTask <= reqBound ? '' : ' ✗'}`,
          ]),
      ),
      '',
    );
  }
  lines.push('✗: misses the target on that workload.');
  return lines.join('\n');
}

function selectorIdleTradeoff(r: Results): string {
  const doc = r.selectors;
  const idle = doc.workloads.find((w) => w.name === 'idle-hour');
  const [, , low] = doc.queues;
  const lines = [source('selectors', r, 'the idle-hour workload'), ''];
  const rl = idle?.selectors[doc.baseline];
  const d = idle?.selectors[doc.default];
  if (rl && d && low) {
    const lowMax = d.queues[low.name]?.max ?? 0;
    lines.push(
      `Idle hour: ${doc.baseline} makes ${rl.idleRequestsPerMinute} requests a minute that find no message ` +
        `(the fleet; $${round((rl.idleRequestsPerMinute * 60 * PRICES.sqsPerMillionRequests) / 1e6, 4)} an hour at $${PRICES.sqsPerMillionRequests} per million), and a lone low-priority task waits at most ` +
        `${rl.queues[low.name]?.max} s. ${doc.default} makes ${d.idleRequestsPerMinute} (${percent(d.idleRequestsPerMinute / rl.idleRequestsPerMinute)} of them), ` +
        `and its lone low-priority task waits at most ${lowMax} s (${percent(lowMax / low.slaSeconds)} of its ${low.slaSeconds} s SLA).`,
      '',
    );
  }
  lines.push(
    table(
      ['looks at an empty queue', 'fleet idle requests / min', 'high p99 (s)', 'default max (s)', 'low max (s)'],
      doc.idleTradeoff.map((p) => [p.looks, num(p.idleRequestsPerMinute), num(p.highP99), num(p.defaultMax), num(p.lowMax)]),
    ),
  );
  return lines.join('\n');
}

function selectorLoop(r: Results): string {
  const doc = r.selectors;
  const [high, def, low] = doc.queues.map((q) => q.name) as [string, string, string];
  return [
    source('selectors', r, `${doc.loop[0]?.workload ?? ''}`),
    '',
    table(
      ['selector', 'loop', 'high p99 / max (s)', 'default p99 (s)', 'low p99 (s)', 'share of high over its SLA', 'tasks run'],
      doc.loop.map((l) => [
        l.selector,
        l.loop,
        `${l.queues[high]?.p99} / ${l.queues[high]?.max}`,
        num(l.queues[def]?.p99 ?? 0),
        num(l.queues[low]?.p99 ?? 0),
        percent(l.queues[high]?.overSla ?? 0),
        num(l.tasks),
      ]),
    ),
  ].join('\n');
}

function selectorAutoscaling(r: Results): string {
  const doc = r.selectors;
  const names = doc.queues.map((q) => q.name);
  const lines = [
    source('selectors', r),
    '',
    table(
      [
        'workload',
        'fleet',
        ...names.map((q) => `${shortQueue(q)} p99 (s)`),
        'backlog drained after the surge',
        'peak dispatchers',
        'Lambda $/hour',
      ],
      doc.autoscaling.map((a) => [
        a.workload,
        a.fleet,
        ...names.map((q) => num(a.queues[q]?.p99 ?? 0)),
        a.backlogDrainedMinutesAfterSurge === null ? '—' : `${a.backlogDrainedMinutesAfterSurge} min`,
        num(a.peakDispatchers),
        num(a.lambdaUsdPerHour),
      ]),
    ),
    '',
  ];
  for (const workload of [...new Set(doc.autoscaling.map((a) => a.workload))]) {
    const fixed = doc.autoscaling.find((a) => a.workload === workload && !a.autoscale);
    const scaled = doc.autoscaling.find((a) => a.workload === workload && a.autoscale);
    if (!fixed || !scaled) continue;
    const drained =
      scaled.backlogDrainedMinutesAfterSurge !== null && fixed.backlogDrainedMinutesAfterSurge !== null
        ? `the backlog is gone ${scaled.backlogDrainedMinutesAfterSurge} min after the surge instead of ${fixed.backlogDrainedMinutesAfterSurge}; `
        : '';
    const waits = names.map((q) => `${shortQueue(q)} ${scaled.queues[q]?.p99} s against ${fixed.queues[q]?.p99} s`).join(', ');
    lines.push(
      `- ${workload}, autoscaled against fixed: ${drained}p99 ${waits}; Lambda ×${ratio(scaled.lambdaUsdPerHour, fixed.lambdaUsdPerHour)} ` +
        `($${scaled.lambdaUsdPerHour} against $${fixed.lambdaUsdPerHour} an hour).`,
    );
  }
  return lines.join('\n');
}

// ---------------------------------------------------------------------------------------------
// End to end (bench:e2e).

function e2eSaturation(r: Results): string {
  const doc = r.e2e;
  const g = doc.goals;
  const t = doc.ratios;
  const rows = [...doc.saturation, ...doc.breakdown];
  // Results written before the peers ran at the dispatcher's concurrency have no messages held.
  const held = rows.some((f) => f.concurrency);
  return [
    source('e2e', r),
    '',
    table(
      [
        'consumer',
        'tasks/s (median)',
        'rounds',
        'SQS requests per task',
        'DynamoDB WCU per task',
        ...(held ? ['messages held at once: mean / peak'] : []),
      ],
      rows.map((f) => [
        f.consumer,
        num(f.tasksPerSecond),
        f.rounds ? f.rounds.join(', ') : '1 run',
        num(f.sqsRequestsPerTask),
        f.dynamoWriteUnitsPerTask === undefined ? '—' : num(f.dynamoWriteUnitsPerTask),
        ...(held ? [f.concurrency ? `${f.concurrency.messagesInFlight.mean} / ${f.concurrency.messagesInFlight.peak}` : '—'] : []),
      ]),
    ),
    '',
    ...(doc.instances ? [`Peers' concurrency: ${doc.instances.why}.`, ''] : []),
    `Tracking off, tasks in threads: ×${t.taskworkerOffVsRaw} the raw loop (goal ≥ 0.8×: ${met(g.atLeast0_8xRawWithTrackingOff.threads)}), ` +
      `×${t.taskworkerOffVsSqsConsumer} sqs-consumer (goal ≥ 1×: ${met(g.atLeast1xSqsConsumer.threads)}); inline: ×${t.inlineOffVsRaw} ` +
      `(${met(g.atLeast0_8xRawWithTrackingOff.inline)}) and ×${t.inlineOffVsSqsConsumer} (${met(g.atLeast1xSqsConsumer.inline)}). ` +
      `SQS requests per task ≤ 0.21: ${met(g.sqsRequestsPerTaskAtMost0_21)}.`,
  ].join('\n');
}

function e2ePeer(r: Results): string {
  const doc = r.e2e;
  const peer = doc.peer;
  if (!peer) return [source('e2e', r), '', 'Not measured in this file.'].join('\n');
  const rows = [peer.full, peer.trigger].map((name) => doc.saturation.find((f) => f.consumer === name) as E2eFigures);
  const models = [peer.awsModel.full, peer.awsModel.trigger];
  const ms = peer.awsModel.dynamoWriteMs;
  const v = peer.fullVsPeer;
  /** Results written since the trigger's pollers start at five and scale as the mapping's do. */
  const scaled = peer.scaling !== undefined;
  const phases: ReadonlyArray<readonly [string, string]> = [
    ['receive', 'receive'],
    ['receiveToFirstWrites', '→ first writes'],
    ['firstWrites', 'first writes'],
    ['secondWrites', 'second writes'],
    ['delete', 'delete'],
    ['cycle', 'loop cycle'],
    ['receiveToDeleted', 'receive → deleted'],
  ];
  return [
    source('e2e', r, `${peer.package}; ${peer.concurrency}`),
    '',
    table(
      [
        'consumer',
        'tasks/s (median)',
        'rounds',
        'SQS requests per task',
        'DynamoDB WCU per task',
        'CPU ms per task: consumer (main thread) / emulators',
        ...(scaled ? ['concurrent invocations: first / most'] : []),
        ...ms.map((w) => `AWS model, ${w} ms writes: tasks/s`),
        ...(scaled ? ms.map((w) => `AWS model, ${w} ms writes: tasks/s per invocation`) : []),
      ],
      rows.map((f, i) => [
        f.consumer,
        num(f.tasksPerSecond),
        f.rounds ? f.rounds.join(', ') : '1 run',
        num(f.sqsRequestsPerTask),
        f.dynamoWriteUnitsPerTask === undefined ? '—' : num(f.dynamoWriteUnitsPerTask),
        f.cpuMsPerTask ? `${f.cpuMsPerTask.consumer} (${f.cpuMsPerTask.consumerMainThread}) / ${f.cpuMsPerTask.emulators}` : '—',
        ...(scaled ? [f.concurrency?.pollers ? `${f.concurrency.pollers.initial} / ${f.concurrency.pollers.peak}` : '1 dispatcher'] : []),
        ...ms.map((w) => num(models[i]?.tasksPerSecond[`dynamoWrite${w}ms`] ?? 0)),
        ...(scaled ? ms.map((w) => num(models[i]?.perLoop?.[`dynamoWrite${w}ms`] ?? 0)) : []),
      ]),
    ),
    '',
    `\`full\` against the trigger: throughput ×${v.tasksPerSecond} on the emulators (goal ≥ 1×: ${met(peer.goals.throughputAtLeast1x)}), ` +
      `write units per task ×${v.dynamoWriteUnitsPerTask} (goal ≤ 1×: ${met(peer.goals.writeUnitsPerTaskAtMost1x)}), SQS requests per task ×${v.sqsRequestsPerTask}; ` +
      (scaled && peer.scaling && v.awsModelPerInvocation && v.dispatchersForFivePollers
        ? `AWS model, one dispatcher against the mapping's first ${peer.scaling.initial} invocations: ` +
          `${ms.map((w) => `×${v.awsModel[`dynamoWrite${w}ms`]} at ${w} ms`).join(', ')} ` +
          `(dispatchers doing what those ${peer.scaling.initial} do: ${ms.map((w) => `${v.dispatchersForFivePollers?.[`dynamoWrite${w}ms`]} at ${w} ms`).join(', ')}); ` +
          `against one invocation (what a Lambda-second buys): ${ms.map((w) => `×${v.awsModelPerInvocation?.[`dynamoWrite${w}ms`]} at ${w} ms`).join(', ')}.`
        : `AWS model ${ms.map((w) => `×${v.awsModel[`dynamoWrite${w}ms`]} at ${w} ms`).join(', ')}, against one poller (not the mapping's five).`),
    '',
    'Where the time goes (mean ms per batch on the emulators; first writes: the claim / the in-progress record, second: the completion):',
    '',
    table(
      [
        'consumer',
        'writes per job (first + second), per batch',
        ...phases.map(([, label]) => label),
        'ended before the loop received again: first writes / second writes / delete',
        'round trips on the cycle: SQS / DynamoDB',
        'DynamoDB requests in flight',
      ],
      rows.map((f) => {
        const p = f.criticalPath;
        if (!p) return [f.consumer, '—'];
        const w = p.dynamoWritesPerJob;
        const e = p.endedWithinCycle;
        return [
          f.consumer,
          `${w.first} + ${w.second}, ${p.dynamoWritesPerBatch}`,
          ...phases.map(([key]) => num(p.meanMs[key] ?? 0)),
          `${e.firstWrites} / ${e.secondWrites} / ${e.delete}`,
          `${p.roundTripsOnCycle.sqs} / ${p.roundTripsOnCycle.dynamo}`,
          num(p.dynamoInFlight),
        ];
      }),
    ),
    '',
    `AWS model: ${peer.awsModel.formula}. Main-thread ms per batch: ${models.map((m, i) => `${rows[i]?.consumer} ${m.mainThreadMsPerBatch}`).join(', ')}.`,
  ].join('\n');
}

function e2eIoConcurrency(r: Results): string {
  const doc = r.e2e;
  return [
    source('e2e', r, `tasks of ${doc.ioConcurrency.taskMs} ms I/O each`),
    '',
    table(
      ['concurrency', 'tasks/s', 'SQS requests per task'],
      doc.ioConcurrency.runs.map((f) => [
        /concurrency (\d+)/.exec(f.consumer)?.[1] ?? f.consumer,
        num(f.tasksPerSecond),
        num(f.sqsRequestsPerTask),
      ]),
    ),
  ].join('\n');
}

function e2eCost(r: Results): string {
  const doc = r.e2e;
  const trigger = doc.costPerMillionTasks.find((c) => c.design.startsWith('Lambda SQS trigger'));
  const lines = [
    source('e2e', r),
    '',
    table(
      ['design', 'SQS', 'DynamoDB', 'Lambda', 'total (USD)'],
      doc.costPerMillionTasks.map((c) => {
        const u = c.usdPerMillionTasks;
        return [c.design, num(u.sqs), num(u.dynamo), num(u.lambda), `**${u.total}**`];
      }),
    ),
  ];
  if (trigger) {
    const others = doc.costPerMillionTasks.filter((c) => c !== trigger);
    lines.push(
      '',
      `Against the trigger design: ${others.map((c) => `${c.design.replace(/^taskworker /, '')} ×${ratio(c.usdPerMillionTasks.total, trigger.usdPerMillionTasks.total)}`).join(', ')}.`,
    );
  }
  return lines.join('\n');
}

/** Within how much the attributed parts must add up to the metered whole. */
const ATTRIBUTION_TOLERANCE = 0.05;

function e2eCostAttribution(r: Results): string {
  const rows = r.e2e.costAttribution;
  if (!rows || rows.length === 0)
    return [source('e2e', r), '', 'Not measured in this file: it predates the attribution (re-run `npm run bench:e2e -- --json`).'].join(
      '\n',
    );
  return [
    source('e2e', r),
    '',
    table(
      [
        'run',
        'SQS attributed / metered',
        'WCU attributed / metered',
        'parts ÷ whole',
        `within ${percent(ATTRIBUTION_TOLERANCE)}`,
        'GB-s',
        'USD per million tasks',
      ],
      rows.map((c) => [
        c.consumer,
        `${c.attributedSqs} / ${c.meteredSqs}`,
        `${c.attributedWcu} / ${c.meteredWcu}`,
        num(c.ratio),
        met(Math.abs(1 - c.ratio) <= ATTRIBUTION_TOLERANCE),
        num(c.attributedGbSeconds),
        num(c.usdPerMillionTasks),
      ]),
    ),
  ].join('\n');
}

function e2eIdleCost(r: Results): string {
  return [
    source('e2e', r),
    '',
    table(
      ['design', 'average dispatchers', 'SQS requests / hour', 'Lambda GB-s / hour', 'USD / hour'],
      r.e2e.idleCostPerHour.map((c) => [
        c.design,
        num(c.averageDispatchers),
        num(c.sqsRequestsPerHour),
        num(c.lambdaGbSecondsPerHour),
        num(c.usdPerHour),
      ]),
    ),
  ].join('\n');
}

// ---------------------------------------------------------------------------------------------
// Scale to zero (bench:idle).

const HOURS_PER_MONTH = 730;
const monthly = (usdPerHour: number) => Math.round(usdPerHour * HOURS_PER_MONTH * 100) / 100;

function idleIdle(r: Results): string {
  const { taskworker: tw, lambdaTrigger: trigger, idleRatio, goals } = r.idle;
  return [
    source('idle', r),
    '',
    table(
      ['idle version, per hour', 'SQS requests', 'DynamoDB read units', 'Lambda GB-s', 'USD / hour', 'USD / month'],
      [
        [
          "taskworker (idle ticks with the sweep of parked jobs, the doorbells' pollers)",
          num(tw.idleRequestsPerHour),
          num(tw.idleSweepReadUnitsPerHour),
          num(tw.idleGbSecondsPerHour),
          num(tw.idleUsdPerHour),
          num(monthly(tw.idleUsdPerHour)),
        ],
        [
          `Lambda SQS trigger on the same queues (modelled: ${trigger.pollersPerQueue} pollers a queue)`,
          num(trigger.idleRequestsPerHour),
          '0',
          '0',
          num(trigger.idleUsdPerHour),
          num(monthly(trigger.idleUsdPerHour)),
        ],
      ],
    ),
    '',
    `Idle: **${times(idleRatio)} the trigger** (goal ≤ 1.5×: ${met(goals.idleAtMost1_5xTrigger)}). The idle tick: median ${tw.idleTickMs.p50} ms, ` +
      `max ${tw.idleTickMs.max} ms (${tw.idleTickMs.samples} ticks).`,
  ].join('\n');
}

function idleWake(r: Results): string {
  const { taskworker: tw, goals } = r.idle;
  const w = tw.wakeLatencySeconds;
  const by = Object.entries(w.invokedBy)
    .map(([who, n]) => `${who} ${n}`)
    .join(', ');
  return [
    source('idle', r),
    '',
    `Wake-up, publish → task start into an idle version: locally p50 **${w.p50} s**, p99 **${w.p99} s**, max ${w.max} s ` +
      `(${w.samples} samples; batches reported by: ${by}). Modelled for AWS after an idle hour (a cold start): ` +
      `**${tw.awsWakeLatencySecondsModelled.coldStart} s**; warm ${tw.awsWakeLatencySecondsModelled.warm} s. ` +
      `Goals p50 ≤ 1 s: ${met(goals.wakeP50AtMost1s)}; p99 ≤ 2 s: ${met(goals.wakeP99AtMost2s)}.`,
  ].join('\n');
}

function idleMonthly(r: Results): string {
  const { monthly: rows, goals } = r.idle;
  return [
    source('idle', r),
    '',
    table(
      ['workload', 'design', 'USD / month', 'vs trigger'],
      rows.map((m) => [m.workload, m.design, num(m.usd), times(m.vsTrigger)]),
    ),
    '',
    `Goal, \`full\` tracking ≤ 1× the trigger: ${goals.fullTrackingAtMostTrigger.map((g) => `${g.workload}: ${met(g.met)}`).join('; ')}.`,
  ].join('\n');
}

function idleUnderLoad(r: Results): string {
  const cell = (f: UnderLoadFigures) => `${f.highP99} / ${f.lowMax} / ${f.requestsPerTask}`;
  const rows = r.idle.underLoad;
  const against = (pick: (u: (typeof rows)[number]) => UnderLoadFigures, field: keyof UnderLoadFigures) =>
    rows.map((u) => `${times(ratio(pick(u)[field], u.reducedLottery[field]))} ${u.workload}`).join(', ');
  return [
    source('idle', r, 'simulation, seeds 1 and 2'),
    '',
    table(
      ['workload', 'ReducedLottery', 'SLA-aware', 'SLA-aware + doorbells', 'doorbell invocations'],
      rows.map((u) => [
        u.workload,
        cell(u.reducedLottery),
        cell(u.slaAware),
        cell(u.slaAwareWithDoorbells),
        num(u.slaAwareWithDoorbells.doorbellInvocations),
      ]),
    ),
    '',
    `SLA-aware + doorbells against ReducedLottery on the same fleet: high-priority p99 ${against((u) => u.slaAwareWithDoorbells, 'highP99')} ` +
      `(target ≤ 0.5×: ${rows.map((u) => met(u.targets.highP99AtMostHalf)).join(', ')}); ` +
      `requests per task ${against((u) => u.slaAwareWithDoorbells, 'requestsPerTask')} (target ≤ 1×: ${rows.map((u) => met(u.targets.requestsNoMore)).join(', ')}); ` +
      `low-priority max ${against((u) => u.slaAwareWithDoorbells, 'lowMax')} (target ≤ 1×: ${rows.map((u) => met(u.targets.lowMaxNoWorse)).join(', ')}). ` +
      `The SLA-aware selector alone on this fleet, low-priority max: ${against((u) => u.slaAware, 'lowMax')}.`,
  ].join('\n');
}

// ---------------------------------------------------------------------------------------------
// The rest of the emulator benchmarks.

function trackingTable(r: Results): string {
  const t = r.tracking;
  const listed = t.results.find(
    (x) => x.mode === 'full' && x.task === 'noop' && x.listSucceeded && x.delaySeconds === 0 && x.payloadBytes === 0,
  );
  const unlisted = t.results.find((x) => x.mode === 'full' && x.task === 'noop' && !x.listSucceeded);
  const listing =
    listed && unlisted
      ? ` Listing succeeded jobs newest first (\`listSucceeded\`, on by default on a \`full\` queue) costs the index's ` +
        `${round(listed.indexWriteUnitsPerTask - unlisted.indexWriteUnitsPerTask, 3)} WCU per succeeded job ` +
        `(total ${unlisted.totalWriteUnitsPerTask} → ${listed.totalWriteUnitsPerTask} WCU per job with the stats' share), ` +
        `$${round((listed.indexWriteUnitsPerTask - unlisted.indexWriteUnitsPerTask) * PRICES.dynamoPerMillionWriteUnits, 3)} per million jobs at on-demand prices.`
      : '';
  return [
    source('tracking', r, `${t.tasksPerRun} tasks per run, batches of 10`),
    '',
    table(TRACKING_HEADER, t.results.map(trackingRow)),
    '',
    `dynalite meters the table's writes, not its indexes': the index column is each item still in the state index at the end ` +
      `(a listed success, an archived job), at its size plus 100 bytes by the KB, as DynamoDB bills an index write; a job that ` +
      `passed through \`retrying\` also wrote and removed an entry there (2 more units, not counted).${listing}`,
  ].join('\n');
}

function stepsTable(r: Results): string {
  const doc = r.steps;
  if (!doc) return source('steps', r);
  const items: Array<[string, string]> = [
    ['step', 'a `ctx.step.run` (over a job without steps)'],
    ['sleep', 'a `ctx.step.sleep` of a day: park, sweep, resume'],
    ['tokenWait', 'a `ctx.step.waitForToken`: park, completion, resume'],
    ['eventWait', 'a `ctx.step.waitForEvent`: park, the event (its SNS publish priced), resume'],
  ];
  const peerNames: Record<string, string> = {
    taskworker: 'taskworker (measured on the emulators)',
    stepFunctionsStandard: 'Step Functions Standard (list prices: 11 transitions, 10 Lambda invocations)',
    lambdaDurableFunctions: 'Lambda durable functions (list prices: 11 durable operations, 2 invocations; data charges not modelled)',
  };
  const latencyNames: Record<string, string> = {
    afterSleepDue: 'a 2 s sleep, from its due time',
    afterTokenCompleted: 'a token wait, from its completion',
    afterEventSent: 'an event wait, from its event reaching the queue',
  };
  return [
    source('steps', r, `${doc.jobsPerWorkload} jobs per workload`),
    '',
    table(
      ['each', 'SQS requests', 'DynamoDB requests', 'WCU', 'RCU', '$ per million'],
      items.map(([key, name]) => {
        const u = doc.perItem[key as keyof StepsDoc['perItem']];
        return [name, num(u.sqsRequests), num(u.dynamoRequests), num(u.writeUnits), num(u.readUnits), num(u.dollarsPerMillion)];
      }),
    ),
    '',
    table(
      ['10 steps and a day’s sleep', '$ per million workflows'],
      Object.entries(doc.workflow.peers).map(([k, p]) => [peerNames[k] ?? k, num(p.perMillionWorkflows)]),
    ),
    '',
    table(
      ['resumed after', 'p50 ms', 'p99 ms', 'max ms'],
      (['afterSleepDue', 'afterTokenCompleted', 'afterEventSent'] as const).map((k) => {
        const l = doc.latency[k];
        return [`${latencyNames[k]} (${doc.latency.samples} jobs)`, num(l.p50Ms), num(l.p99Ms), num(l.maxMs)];
      }),
    ),
  ].join('\n');
}

function keysTable(r: Results): string {
  const doc = r.keys;
  const rules: Array<[keyof KeysDoc['perRule'], string]> = [
    ['keyed', "a job under `limits: { concurrency, per: 'key' }` that finds room"],
    ['parked', 'a job over its key’s concurrency: parked in its key’s line, sent when the one before it ends'],
    ['unique', 'a job of a `unique` task (the hold taken at publish)'],
    ['in-turn', 'a job of an `ordered` task that arrives at its key’s turn (numbered, tagged, the turn moved at its end)'],
    ['ordered', 'a job of an `ordered` task published behind its key’s turn: parked by the publisher, sent when the one before it ends'],
  ];
  const f = doc.fairness;
  const row = (name: string, run: FairnessRun) => [
    name,
    num(run.smallWaitMs.p50),
    num(run.smallWaitMs.p95),
    `${run.mostRunning.perKey} / ${run.mostRunning.all}`,
    run.floodJobs === 0 ? '' : num(run.floodParkedPerJob),
  ];
  return [
    source('keys', r, `${doc.jobsPerWorkload} jobs per workload`),
    '',
    table(
      ['each, over a job with no key', 'SQS requests', 'DynamoDB requests', 'WCU', 'RCU', '$ per million', 'parks per job'],
      rules.map(([key, name]) => {
        const u = doc.perRule[key];
        return [
          name,
          num(u.sqsRequests),
          num(u.dynamoRequests),
          num(u.writeUnits),
          num(u.readUnits),
          num(u.dollarsPerMillion),
          num(u.parksPerJob),
        ];
      }),
    ),
    '',
    table(
      [
        `tenants B–J, ${f.quiet.smallJobs} one-second jobs (per key ${f.limits.perKey}, total ${f.limits.total}, ${f.slots} slots; simulated)`,
        'p50 wait ms',
        'p95 wait ms',
        'most running (a key / all)',
        'flood parks per job',
      ],
      [row('alone', f.quiet), row(`behind ${num(f.flooded.floodJobs)} jobs of tenant A`, f.flooded)],
    ),
    '',
    `B–J's p95 wait behind the flood: ${num(f.p95Ratio)}× their p95 alone.`,
  ].join('\n');
}

function scheduledTable(r: Results): string {
  const rows: string[][] = [];
  for (const x of r.scheduled.results) {
    const phases: Array<[string, Units | undefined]> = [
      ['park', x.park],
      ['sweep', x.sweep],
      ['run', x.run],
    ];
    for (const [phase, u] of phases) {
      if (!u) continue;
      rows.push([
        x.mode,
        x.later ? 'in 1 hour' : 'now',
        phase,
        num(u.sqsRequests),
        num(u.dynamoRequests),
        num(u.writeUnits),
        num(u.readUnits),
      ]);
    }
  }
  return [
    source('scheduled', r, 'per job'),
    '',
    table(['tracking', 'published', 'phase', 'SQS requests', 'DynamoDB requests', 'WCU', 'RCU'], rows),
  ].join('\n');
}

function flowsTable(r: Results): string {
  const f = r.flows;
  const row = (what: string, u: Units) => [what, num(u.sqsRequests), num(u.dynamoRequests), num(u.writeUnits), num(u.readUnits)];
  const m = f.monthly;
  return [
    source('flows', r, `${f.chords} fan-ins of ${grouped(f.members)} members, a chain of ${f.chainSteps}`),
    '',
    table(
      ['what', 'SQS requests', 'DynamoDB requests', 'WCU', 'RCU'],
      [
        row('a job of no flow (the baseline)', f.perJob),
        row(`a fan-in of ${grouped(f.members)}, whole`, f.chord.whole),
        row('a fan-in, added per member', f.chord.addedPerMember),
        row('a chain, added per edge', f.chain.addedPerEdge),
      ],
    ),
    '',
    `Write units a fan-in adds per member: ${f.chord.addedPerMember.writeUnits} (target ≤ 2: ${met(f.chord.addedPerMember.writeUnits <= 2)}). ` +
      `From the last member's end to the callback's start: p50 ${f.close.p50Ms} ms, p99 ${f.close.p99Ms} ms (${f.close.samples.join(', ')} ms).`,
    '',
    `${grouped(m.flowsADay)} such fan-ins a day for 30 days: taskworker's flow bookkeeping $${grouped(m.taskworkerFlowOnly)} a month ` +
      `($${grouped(m.taskworkerWhole)} with the jobs' own records and SQS requests); Step Functions, at $0.025 per 1,000 state ` +
      `transitions and ${grouped(m.stepFunctionsTransitionsPerFlow)} transitions a flow, $${grouped(m.stepFunctions)} (×${ratio(m.taskworkerFlowOnly, m.stepFunctions)}).`,
  ].join('\n');
}

function eventsTable(r: Results): string {
  const e = r.events;
  const row = (what: string, u: EventUnits) => [
    what,
    num(u.snsPublishes),
    num(u.sqsRequests),
    num(u.dynamoRequests),
    num(u.writeUnits),
    num(u.readUnits),
  ];
  const one = e.onePerQueue;
  const split = e.splitOnOneQueue;
  return [
    source('events', r, `${grouped(e.events)} events of each kind, one dispatcher`),
    '',
    table(
      ['per job', 'SNS publishes', 'SQS requests', 'DynamoDB requests', 'WCU', 'RCU'],
      [
        row('a job published to its queue (the baseline)', e.perJob),
        row('a subscriber’s job, one subscriber per queue', one.perSubscriberJob),
        row('  what the event adds', one.addedPerSubscriberJob),
        row('a subscriber’s job, 3 subscribers on one queue (split)', split.perSubscriberJob),
        row('  what the event adds', split.addedPerSubscriberJob),
      ],
    ),
    '',
    `From the emit to each subscriber's start: p50 ${one.emitToStartMs.p50} ms, p99 ${num(one.emitToStartMs.p99)} ms (one per queue); ` +
      `p50 ${split.emitToStartMs.p50} ms, p99 ${split.emitToStartMs.p99} ms (split). ` +
      `A million events: $${one.dollarsPerMillionEvents} with two subscribers on two queues, $${split.dollarsPerMillionEvents} with three on one ` +
      `(SQS, DynamoDB and SNS at list prices, SNS publishes at $${e.snsPerMillionPublishes} per million; SNS's deliveries to SQS cost nothing).`,
  ].join('\n');
}

function payloadsTable(r: Results): string {
  const p = r.payloads;
  const [base] = p.results;
  return [
    source('payloads', r, `${grouped(p.jobsPerSize)} jobs of each size, one at a time, one dispatcher`),
    '',
    table(
      [
        'payload',
        'publish call p50 (ms)',
        'publish → start p50 (ms)',
        'p99 (ms)',
        'SQS requests',
        'WCU',
        'S3 put / get / delete',
        '$ per million jobs',
        'of which S3',
      ],
      p.results.map((x) => [
        x.label,
        num(x.publishMs.p50),
        num(x.publishToStartMs.p50),
        num(x.publishToStartMs.p99),
        num(x.perJob.sqsRequests),
        num(x.perJob.writeUnits),
        `${num(x.perJob.s3Puts)} / ${num(x.perJob.s3Gets)} / ${num(x.perJob.s3Deletes)}`,
        `$${num(x.dollarsPerMillionJobs)}${base && x !== base ? ` (×${ratio(x.dollarsPerMillionJobs, base.dollarsPerMillionJobs)})` : ''}`,
        `$${num(x.s3DollarsPerMillionJobs)}`,
      ]),
    ),
    '',
    `Objects left under payloads/ once every job had succeeded: ${p.objectsLeftAfterwards}. S3 at list prices: PUT $${p.s3Prices.putPerThousand} ` +
      `and GET $${p.s3Prices.getPerThousand} per 1,000, storage $${p.s3Prices.storagePerGbMonth} per GB-month for the seconds an object lived; ` +
      'DeleteObject and transfer within the region cost nothing.',
  ].join('\n');
}

function limitsTable(r: Results): string {
  return [
    source('limits', r, 'per task'),
    '',
    table(
      ['case', 'seconds (each run)', 'deferrals', 'receives per held job', 'SQS requests', 'DynamoDB requests', 'WCU', 'RCU'],
      r.limits.results.map((x) => [
        x.case,
        x.runs ? `${num(x.seconds)} (${x.runs.map(num).join(', ')})` : num(x.seconds),
        num(x.deferralsPerTask),
        x.receivesPerHeldJob === undefined ? '—' : num(x.receivesPerHeldJob),
        num(x.sqsRequestsPerTask),
        num(x.dynamoRequestsPerTask),
        num(x.writeUnitsPerTask),
        num(x.readUnitsPerTask),
      ]),
    ),
  ].join('\n');
}

function realityTable(r: Results): string {
  const doc = r.reality;
  const q = (x: RealityQuantile) =>
    `${x.simulatedMedian} [${x.simulatedRange[0]}–${x.simulatedRange[1]}] / ${x.real} / ${signed(x.difference)}`;
  const s = doc.sqsRequestsPerTask;
  return [
    source('reality', r),
    '',
    table(
      ['queue', 'p50: sim median [range] / real / diff', 'p90', 'p99', 'predicted for AWS (p50 / p90 / p99)'],
      doc.queues.map((x) => [
        `${x.queue} (${x.started} tasks)`,
        q(x.p50),
        q(x.p90),
        q(x.p99),
        `${x.predictedForAws.p50} / ${x.predictedForAws.p90} / ${x.predictedForAws.p99}`,
      ]),
    ),
    '',
    `SQS requests per task: simulated ${s.simulatedMedian} [${s.simulatedRange[0]}–${s.simulatedRange[1]}], real ${s.real} (${signed(s.difference)}); ` +
      `predicted for AWS ${s.predictedForAws}. Receives ${doc.simulatedRequests.receive} simulated against ${doc.realRequests.ReceiveMessageCommand} real, ` +
      `batch deletes ${doc.simulatedRequests.deleteBatch} against ${doc.realRequests.DeleteMessageBatchCommand}.`,
  ].join('\n');
}

function loadTable(r: Results): string {
  const doc = r.load;
  const reasons = Object.entries(doc.archivedByReason)
    .map(([reason, n]) => `\`${reason}\` ${grouped(n)}`)
    .join(', ');
  const asExpected = Object.entries(doc.archivedByReason).every(([reason, n]) => doc.expected[reason] === n);
  return [
    source('load', r),
    '',
    table(
      ['figure', 'value'],
      [
        ['published', `${grouped(doc.published)} in ${doc.publishSeconds} s`],
        ['run', `${doc.runSeconds} s, ${grouped(doc.tasksPerSecond)} tasks/s (${doc.dispatchers} dispatchers × ${doc.concurrency} slots)`],
        [
          'succeeded + archived',
          `${grouped(doc.succeeded)} + ${grouped(doc.archived)} = ${grouped(doc.succeeded + doc.archived)}` +
            `${doc.publishedEqualsSucceededPlusArchived ? '' : ` (**published ${grouped(doc.published)}**)`} ` +
            `(${reasons}: ${asExpected ? 'exactly what was published to fail' : '**not what was published to fail**'})`,
        ],
        ['archive messages, dead letters', `${grouped(doc.archiveMessages)}, ${grouped(doc.deadLetters)}`],
        ['stats table', doc.statsAgree ? 'agrees with the jobs table on every counter' : '**disagrees with the jobs table**'],
        ['settled per dispatcher', doc.settledPerDispatcher.map(grouped).join(' / ')],
        ['peak RSS per dispatcher (VmHWM)', `${doc.peakRssMb.join(' / ')} MB`],
        ['RSS by quarter of the run, MB', doc.rssMbByQuarter.map(range).join(', ')],
      ],
    ),
  ].join('\n');
}

// ---------------------------------------------------------------------------------------------
// Priority under a backlog (bench:mixed).

function mixedTable(r: Results): string {
  const doc = r.mixed;
  if (!doc) return [source('mixed', r), '', `Measure it: \`${remeasure('mixed')}\`.`].join('\n');
  const t = doc.targets;
  return [
    source('mixed', r, `${doc.rounds} rounds on warm containers after a first one; waits in seconds`),
    '',
    mixedCases(doc.cases, t, doc.setup, 'case', ['first round (containers starting): p50 / p99 / max', (c) => mixedWaits(c.coldRound)]),
    ...(doc.simulation
      ? [
          '',
          mixedCases(doc.simulation.cases, t, doc.simulation.setup, 'case (simulated)', [
            'low-priority max wait',
            (c) => `${c.lowMaxSeconds} s`,
          ]),
        ]
      : []),
  ].join('\n');
}

const mixedWaits = (w: MixedWaits) => `${w.p50} / ${w.p99} / ${w.max}`;

/** One table of bench:mixed's cases (the emulators' or the simulation's), its last column its own, and the line under it. */
function mixedCases<C extends MixedWaits & { readonly case: string; readonly description?: string }>(
  cases: readonly C[],
  t: MixedDoc['targets'],
  setup: string,
  first: string,
  [lastHeading, lastCell]: readonly [string, (c: C) => string],
): string {
  const metCases = cases.filter((c) => c.met).length;
  return [
    table(
      [
        first,
        'high-priority wait, publish → start: p50 / p99 / max',
        'samples',
        `target (p50 ≤ ${t.p50Seconds} s, p99 ≤ ${t.p99Seconds} s)`,
        lastHeading,
      ],
      cases.map((c) => [c.description ? `${c.case}: ${c.description}` : c.case, mixedWaits(c), num(c.samples), met(c.met), lastCell(c)]),
    ),
    '',
    `${setup}. ${metCases === cases.length ? 'Targets met in every case.' : `**Targets met in ${metCases} of ${cases.length} cases.**`}`,
  ].join('\n');
}

// ---------------------------------------------------------------------------------------------
// The headlines of docs/performance.md (README's until the docs moved there: hence the names).

function readmeAutoscaling(r: Results): string {
  const surge = r.selectors.autoscaling.filter((a) => a.backlogDrainedMinutesAfterSurge !== null);
  const fixed = surge.find((a) => !a.autoscale);
  const scaled = surge.find((a) => a.autoscale);
  if (!fixed || !scaled) throw new Error(`${RESULT_FILES.selectors}: no surge with and without autoscaling`);
  return [
    source('selectors', r),
    '',
    `Autoscaling drains a surge's backlog ${scaled.backlogDrainedMinutesAfterSurge} minutes after it instead of ` +
      `${fixed.backlogDrainedMinutesAfterSurge}, at ×${ratio(scaled.lambdaUsdPerHour, fixed.lambdaUsdPerHour)} the Lambda cost of a fixed fleet.`,
  ].join('\n');
}

function readmeE2e(r: Results): string {
  const doc = r.e2e;
  const row = (consumer: string) => doc.saturation.find((f) => f.consumer === consumer);
  const full = row('taskworker (tracking full)');
  const off = row('taskworker (tracking off)');
  const cost = (prefix: string) => doc.costPerMillionTasks.find((c) => c.design.startsWith(prefix))?.usdPerMillionTasks.total;
  const requests = [...new Set(doc.saturation.filter((f) => f.consumer.startsWith('taskworker')).map((f) => f.sqsRequestsPerTask))];
  return [
    source('e2e', r),
    '',
    `- **End to end** (\`npm run bench:e2e -- --json\`, on the emulators): **${requests.join(' / ')} SQS requests per task** at ` +
      `saturation in every tracking mode; DynamoDB ${full?.dynamoWriteUnitsPerTask} WCU per task with \`full\` tracking ` +
      `(and one more with the succeeded list, \`listSucceeded\`: [bench:tracking](guarantees.md#job-tracking)), ` +
      `${off?.dynamoWriteUnitsPerTask} with it off. No-op throughput with tracking off: ${times(doc.ratios.taskworkerOffVsSqsConsumer)} ` +
      `sqs-consumer and ${times(doc.ratios.taskworkerOffVsRaw)} a bare receive/delete loop` +
      `${doc.instances ? ` (${doc.instances.count} instances and ${doc.instances.count} loops)` : ' (one instance, one loop)'} with tasks in killable threads (the default); ` +
      `${times(doc.ratios.inlineOffVsSqsConsumer)} and ${times(doc.ratios.inlineOffVsRaw)} with \`dispatcher.isolation: 'inline'\`.`,
    ...(doc.peer ? [readmePeer(doc.peer)] : []),
    `- **Cost per million tasks** from counted requests at list prices: $${cost('taskworker (tracking full)')} with \`full\` tracking ` +
      `(a Lambda SQS trigger with Powertools idempotency, modelled: $${cost('Lambda SQS trigger')}), $${cost('taskworker (tracking failures)')} ` +
      `with \`failures\`, $${cost('taskworker (tracking off)')} with \`off\`.`,
  ].join('\n');
}

/** README's line on `full` against the Lambda trigger with Powertools idempotency. */
function readmePeer(peer: NonNullable<E2eDoc['peer']>): string {
  const ms = peer.awsModel.dynamoWriteMs;
  const v = peer.fullVsPeer;
  const at = (figures: Readonly<Record<string, number>> | undefined) => ms.map((w) => `×${figures?.[`dynamoWrite${w}ms`]}`).join(' and ');
  const head =
    `- **Against the peer that pays the same price** (Lambda's SQS trigger with Powertools idempotency, the real package, measured in ` +
    `the same run${peer.scaling ? `, its pollers starting at ${peer.scaling.initial} and growing as the mapping's do` : ', one poller'}): ` +
    `\`full\` ×${v.tasksPerSecond} its throughput on the emulators and ×${v.dynamoWriteUnitsPerTask} its write units per task; `;
  return peer.scaling && v.awsModelPerInvocation
    ? `${head}with ${ms.join(' or ')} ms DynamoDB writes (AWS model) one dispatcher does ${at(v.awsModel)} what the mapping's first ` +
        `${peer.scaling.initial} invocations do, and ${at(v.awsModelPerInvocation)} what one invocation does.`
    : `${head}with ${ms.join(' or ')} ms DynamoDB writes (AWS model) ${at(v.awsModel)} one poller, where the mapping starts with five.`;
}

function readmeIdle(r: Results): string {
  const { taskworker: tw, idleRatio, monthly: rows, underLoad } = r.idle;
  const full = rows.filter((m) => m.design === 'taskworker (tracking full)');
  const lighter = rows.filter((m) => m.design === 'taskworker (tracking failures)' || m.design === 'taskworker (tracking off)');
  const span = (pick: (u: (typeof underLoad)[number]) => number) => {
    const values = underLoad.map(pick);
    return `${Math.min(...values)}–${Math.max(...values)}×`;
  };
  return [
    source('idle', r),
    '',
    `- **Scale to zero** (\`npm run bench:idle -- --json\`): an idle version costs $${tw.idleUsdPerHour} an hour (about ` +
      `$${monthly(tw.idleUsdPerHour)} a month, the sweep of parked jobs included; **${times(idleRatio)} Lambda's SQS trigger** on the same ` +
      `queues). A task published into an idle version starts in **${tw.wakeLatencySeconds.p50} s p50, ${tw.wakeLatencySeconds.p99} s p99** ` +
      `locally (${tw.awsWakeLatencySecondsModelled.coldStart} s modelled for an AWS cold start). The monthly bill with \`full\` tracking ` +
      `against the trigger with Powertools idempotency: ${full.map((m) => `**${times(m.vsTrigger)}** (${m.workload})`).join(', ')}; ` +
      `\`failures\`/\`off\` ${range(lighter.map((m) => m.vsTrigger))}×. ` +
      `Under load, with the doorbells and scale-out in the loop (simulation), against ReducedLottery: high-priority p99 ` +
      `${span((u) => ratio(u.slaAwareWithDoorbells.highP99, u.reducedLottery.highP99))}, requests per task ` +
      `${span((u) => ratio(u.slaAwareWithDoorbells.requestsPerTask, u.reducedLottery.requestsPerTask))}, low-priority max ` +
      `${span((u) => ratio(u.slaAwareWithDoorbells.lowMax, u.reducedLottery.lowMax))} (target ≤ 1×: met on ` +
      `${underLoad.filter((u) => u.targets.lowMaxNoWorse).length} of ${underLoad.length} workloads).`,
  ].join('\n');
}

// ---------------------------------------------------------------------------------------------

export const BLOCKS: Readonly<Record<string, (results: Results) => string>> = {
  'selectors:steady-0.7': (r) => selectorWorkload(r, 'steady-0.7'),
  'selectors:steady-0.9': (r) => selectorWorkload(r, 'steady-0.9'),
  'selectors:steady-1.05': (r) => selectorWorkload(r, 'steady-1.05'),
  'selectors:busy-hour': (r) => selectorWorkload(r, 'busy-hour'),
  'selectors:burst': (r) => selectorWorkload(r, 'burst'),
  'selectors:idle-hour': (r) => selectorWorkload(r, 'idle-hour'),
  'selectors:targets': selectorTargets,
  'selectors:seeds': selectorSeeds,
  'selectors:design': selectorDesign,
  'selectors:idle-tradeoff': selectorIdleTradeoff,
  'selectors:loop': selectorLoop,
  'selectors:autoscaling': selectorAutoscaling,
  'e2e:saturation': e2eSaturation,
  'e2e:peer': e2ePeer,
  'e2e:io-concurrency': e2eIoConcurrency,
  'e2e:cost': e2eCost,
  'e2e:cost-attribution': e2eCostAttribution,
  'e2e:idle-cost': e2eIdleCost,
  'idle:idle': idleIdle,
  'idle:wake': idleWake,
  'idle:monthly': idleMonthly,
  'idle:under-load': idleUnderLoad,
  scheduled: scheduledTable,
  steps: stepsTable,
  keys: keysTable,
  tracking: trackingTable,
  flows: flowsTable,
  events: eventsTable,
  payloads: payloadsTable,
  limits: limitsTable,
  reality: realityTable,
  load: loadTable,
  mixed: mixedTable,
  'readme:autoscaling': readmeAutoscaling,
  'readme:e2e': readmeE2e,
  'readme:idle': readmeIdle,
};

const OPEN = /^<!-- bench:(\S+) -->$/;
const CLOSE = '<!-- /bench -->';

/** A block's links to the results (written from the repository's root) as the document at `file` reaches them. */
function linkedFrom(file: string, block: string): string {
  const up = posix.relative(posix.dirname(file), '.');
  return up === '' ? block : block.replaceAll('](bench/results/', `](${up}/bench/results/`);
}

/**
 * A document's text with every block's content replaced by what its JSON gives. Throws on a
 * malformed or unknown block. A block its JSON cannot give (a JSON of an older shape) is left as it
 * is and named in `failed`; the others are still written.
 */
export function renderDocument(file: string, text: string, results: Results): { text: string; blocks: string[]; failed: Difference[] } {
  const lines = text.split('\n');
  const out: string[] = [];
  const blocks: string[] = [];
  const failed: Difference[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    if (line === CLOSE) throw new Error(`${file}:${i + 1}: ${CLOSE} without an opening marker`);
    const open = OPEN.exec(line);
    if (!open) {
      out.push(line);
      continue;
    }
    const name = open[1] as string;
    const render = BLOCKS[name];
    if (!render) throw new Error(`${file}:${i + 1}: no generated block named bench:${name}`);
    const end = lines.indexOf(CLOSE, i + 1);
    const next = lines.findIndex((l, j) => j > i && OPEN.test(l));
    if (end < 0 || (next >= 0 && next < end)) throw new Error(`${file}:${i + 1}: bench:${name} has no ${CLOSE}`);
    blocks.push(name);
    try {
      out.push(line, '', linkedFrom(file, render(results)), '', CLOSE);
    } catch (error) {
      const why = error instanceof Error ? error.message : String(error);
      failed.push({
        file,
        block: name,
        line: i + 1,
        message: `${file}:${i + 1}: block bench:${name} cannot be written from its JSON: ${why}`,
      });
      out.push(...lines.slice(i, end + 1));
    }
    i = end;
  }
  return { text: out.join('\n'), blocks, failed };
}

/** One block whose text differs from what its JSON gives. */
export interface Difference {
  readonly file: string;
  readonly block: string;
  /** 1-based line of its opening marker. */
  readonly line: number;
  readonly message: string;
}

/** The document's blocks compared with what the JSON gives: the differences, first first (empty when it is up to date). */
export function compareDocument(file: string, documentText: string, results: Results): Difference[] {
  const rendered = renderDocument(file, documentText, results);
  const { blocks, failed } = rendered;
  // Without the history to judge staleness by, a block's Stale line can be neither asked for nor refused.
  const unjudged = Object.values(results.freshness).some((f) => f.state === 'unjudged');
  const withoutStaleLines = (t: string) => t.replace(/\n\n\*\*Stale:\*\* [^\n]*/g, '');
  const expected = unjudged ? withoutStaleLines(rendered.text) : rendered.text;
  const text = unjudged ? withoutStaleLines(documentText) : documentText;
  const differences: Difference[] = [...failed];
  for (const block of DOCUMENTS[file] ?? []) {
    if (!blocks.includes(block)) {
      differences.push({ file, block, line: 0, message: `${file} has no block bench:${block}` });
    }
  }
  if (expected === text) return differences;
  const blockAt = (lines: readonly string[], n: number) => {
    for (let i = n; i >= 0; i--) {
      const open = OPEN.exec(lines[i] ?? '');
      if (open) return { name: open[1] as string, line: i + 1 };
    }
    return { name: '?', line: 0 };
  };
  const have = text.split('\n');
  const want = expected.split('\n');
  const at = have.findIndex((l, i) => l !== want[i]);
  const where = blockAt(have, at < 0 ? have.length - 1 : at);
  differences.push({
    file,
    block: where.name,
    line: where.line,
    message:
      `${file}:${at + 1}: block bench:${where.name} (opened at line ${where.line}) differs from what its JSON gives\n` +
      `  have: ${have[at] ?? '(end of file)'}\n  want: ${want[at] ?? '(end of file)'}`,
  });
  // First first; a block the document lacks (line 0) last.
  const order = (d: Difference) => (d.line === 0 ? Number.POSITIVE_INFINITY : d.line);
  return differences.sort((a, b) => order(a) - order(b));
}

/**
 * Every document's differences from its JSON. A block its JSON cannot give (a JSON of an older
 * shape) is one difference saying why, and a document whose markers are malformed is one; the
 * others are still compared.
 */
export function checkTables(root: string, results = readResults(root)): Difference[] {
  return Object.keys(DOCUMENTS).flatMap((file) => {
    try {
      return compareDocument(file, readFileSync(join(root, file), 'utf8'), results);
    } catch (error) {
      return [
        {
          file,
          block: '?',
          line: 0,
          message: `${file}: its blocks cannot be written: ${error instanceof Error ? error.message : String(error)}`,
        },
      ];
    }
  });
}

/**
 * Rewrites every document's blocks from the JSON; returns the files that changed. A block its JSON
 * cannot give (or a document whose markers are malformed) is left as it is, the others are written,
 * then it throws naming it.
 */
export function writeTables(root: string, results = readResults(root)): string[] {
  const changed: string[] = [];
  const failed: string[] = [];
  for (const file of Object.keys(DOCUMENTS)) {
    const path = join(root, file);
    const text = readFileSync(path, 'utf8');
    let next: string;
    try {
      const rendered = renderDocument(file, text, results);
      next = rendered.text;
      failed.push(...rendered.failed.map((f) => f.message));
    } catch (error) {
      failed.push(`${file}: its blocks cannot be written: ${error instanceof Error ? error.message : String(error)}`);
      continue;
    }
    if (next !== text) {
      writeFileSync(path, next);
      changed.push(file);
    }
  }
  if (failed.length > 0) throw new Error(`${changed.length > 0 ? `rewrote ${changed.join(', ')}; ` : ''}${failed.join('; ')}`);
  return changed;
}
