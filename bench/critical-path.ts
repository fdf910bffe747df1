/**
 * Where a tracked job's time goes, from the spans of the requests one receive loop made
 * (bench/meter.ts `timeline`): which round trips the loop waits for before it receives again (the
 * critical path of throughput), which overlap with the next batch, and what a dispatcher would
 * do on AWS, where a DynamoDB write takes milliseconds and takes none of the consumer's CPU.
 *
 * Every job writes its record twice: a first write before its task (taskworker's claim,
 * Powertools' in-progress PutItem) and a second after it (the completion, Powertools' UpdateItem),
 * both on the job's key; what is written on other keys (taskworker's coalesced stats) is per batch.
 */
import { AHEAD_PER_SLOT } from '../lib/dispatch/slots';
import type { Span } from './meter';
import { round } from './prices';

/** Assumed, not measured: one SQS request in the same region with messages waiting. */
export const MODEL_SQS_MS = 10;
/** DynamoDB write latencies the model is given (on-demand tables, same region). */
export const MODEL_DYNAMO_WRITE_MS = [5, 10] as const;

export const MODEL_FORMULA =
  "per receive loop (a dispatcher; one of the trigger's concurrent invocations, five while the mapping starts), with RT = sqsRoundTripsOnCycle × SQS ms + dynamoRoundTripsOnCycle × DynamoDB write ms and M = main-thread ms per batch: " +
  'a sequential loop (the trigger: receive, handler, delete) does batchSize / (RT + M) tasks/s; a pipelined one (taskworker: it receives ' +
  "again while its batch's writes are in flight) min(batchSize / RT, batchSize / M, P / (writes made while pending × DynamoDB write ms)), " +
  `P the most messages it keeps pending a slot (${AHEAD_PER_SLOT} a slot: it claims them while the bodies before them run). ` +
  "Round trips on the cycle: a batch's receive, plus the share of its writes and its delete that ended before its loop received again (measured); " +
  `SQS ms = ${MODEL_SQS_MS} (assumed); M = event-loop active time of this process per batch on the emulators (the emulators' CPU excluded). ` +
  "The mapping does its loops' sum (each invocation has a CPU of its own on AWS); a dispatcher is one loop";

export interface CriticalPath {
  readonly batches: number;
  /** Requests per job (its own key) and per batch (other keys), counted. */
  readonly dynamoWritesPerJob: { readonly first: number; readonly second: number; readonly other: number };
  readonly dynamoWritesPerBatch: number;
  /** Mean per batch on the emulators, ms: receive, to the first writes, their wave, to the second writes, their wave, to the delete, the delete; the loop's cycle (receive to next receive); a job's receive to delete. */
  readonly meanMs: {
    readonly receive: number;
    readonly receiveToFirstWrites: number;
    readonly firstWrites: number;
    readonly firstToSecondWrites: number;
    readonly secondWrites: number;
    readonly secondWritesToDelete: number;
    readonly delete: number;
    readonly cycle: number;
    readonly receiveToDeleted: number;
  };
  /** Share of batches whose first writes / second writes / delete ended before the loop received again. */
  readonly endedWithinCycle: { readonly firstWrites: number; readonly secondWrites: number; readonly delete: number };
  /** Sequential round trips the loop's cycle held, from the shares above (receive and first writes count whole when they ended within it). */
  readonly roundTripsOnCycle: { readonly sqs: number; readonly dynamo: number };
  /** Sequential round trips from a job's receive to its delete. */
  readonly roundTripsPerJob: { readonly sqs: number; readonly dynamo: number };
  /** DynamoDB requests in flight on average over the run (sum of their durations / wall time). */
  readonly dynamoInFlight: number;
}

interface Wave {
  start: number;
  end: number;
}

const mean = (values: readonly number[]) => (values.length === 0 ? 0 : values.reduce((a, v) => a + v, 0) / values.length);

function wave(spans: readonly (Span | undefined)[]): Wave | undefined {
  const present = spans.filter((s): s is Span => s !== undefined);
  if (present.length === 0) return undefined;
  return { start: Math.min(...present.map((s) => s.start)), end: Math.max(...present.map((s) => s.end)) };
}

/** The receives that found messages, in the order they were sent. */
const receivesIn = (spans: readonly Span[]) =>
  spans.filter((s) => s.op === 'ReceiveMessage' && (s.jobs?.length ?? 0) > 0).sort((a, b) => a.start - b.start);

/** Each deleted receipt handle's delete (DeleteMessageBatch or DeleteMessage). */
function deletes(spans: readonly Span[]): Map<string, Span> {
  const deleteOf = new Map<string, Span>();
  for (const s of spans) if (s.op === 'DeleteMessageBatch' || s.op === 'DeleteMessage') for (const h of s.handles ?? []) deleteOf.set(h, s);
  return deleteOf;
}

/** Messages a consumer held (received, not yet deleted), mean over the run and most at once. */
export interface InFlight {
  readonly mean: number;
  readonly peak: number;
}

/**
 * From a consumer's SQS spans: how many messages it held at once, each from its receive's start to
 * its delete's end (the concurrency it ran at, whatever it calls its instances, pollers or slots).
 */
export function messagesInFlight(sqs: readonly Span[], seconds: number): InFlight {
  const deleteOf = deletes(sqs);
  const events: Array<[number, number]> = [];
  let held = 0;
  for (const r of receivesIn(sqs)) {
    for (const h of r.handles ?? []) {
      const deleted = deleteOf.get(h);
      if (!deleted) continue;
      events.push([r.start, 1], [deleted.end, -1]);
      held += deleted.end - r.start;
    }
  }
  events.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let now = 0;
  let peak = 0;
  for (const [, d] of events) {
    now += d;
    peak = Math.max(peak, now);
  }
  return { mean: round(held / (seconds * 1000), 2), peak };
}

/**
 * The spans of a consumer's receive loops (taskworker's dispatcher: one; the trigger: one per
 * concurrent invocation, `loops` giving each one's SQS spans). `keyOf` turns a job id into the key
 * its record is written under.
 */
export function criticalPath(options: {
  readonly sqs: readonly Span[];
  /** Each receive loop's SQS spans, when there are several (a batch's cycle ends at its own loop's next receive). */
  readonly loops?: ReadonlyArray<readonly Span[]>;
  readonly dynamo: readonly Span[];
  readonly keyOf: (jobId: string) => string;
  readonly seconds: number;
}): CriticalPath {
  const loops = (options.loops ?? [options.sqs]).map(receivesIn);
  const receives = loops.flat().sort((a, b) => a.start - b.start);
  /** The same loop's next receive after each receive. */
  const nextOf = new Map<Span, Span>();
  for (const loop of loops) {
    for (let i = 0; i + 1 < loop.length; i++) nextOf.set(loop[i] as Span, loop[i + 1] as Span);
  }
  const deleteOf = deletes(options.sqs);
  const jobKeys = new Set(receives.flatMap((r) => (r.jobs ?? []).map(options.keyOf)));
  const byKey = new Map<string, Span[]>();
  let other = 0;
  for (const s of options.dynamo) {
    if (s.key === undefined || !jobKeys.has(s.key)) {
      other += 1;
      continue;
    }
    byKey.set(s.key, [...(byKey.get(s.key) ?? []), s]);
  }
  for (const spans of byKey.values()) spans.sort((a, b) => a.start - b.start);
  const jobs = jobKeys.size;
  let first = 0;
  let second = 0;
  let extra = 0;
  for (const spans of byKey.values()) {
    first += spans.length > 0 ? 1 : 0;
    second += spans.length > 1 ? 1 : 0;
    extra += Math.max(0, spans.length - 2);
  }
  const phases: Record<keyof CriticalPath['meanMs'], number[]> = {
    receive: [],
    receiveToFirstWrites: [],
    firstWrites: [],
    firstToSecondWrites: [],
    secondWrites: [],
    secondWritesToDelete: [],
    delete: [],
    cycle: [],
    receiveToDeleted: [],
  };
  const within = { firstWrites: [] as number[], secondWrites: [] as number[], delete: [] as number[] };
  for (const r of receives) {
    const keys = (r.jobs ?? []).map(options.keyOf);
    const firsts = wave(keys.map((k) => byKey.get(k)?.[0]));
    const seconds = wave(keys.map((k) => byKey.get(k)?.[1]));
    const deleted = deleteOf.get(r.handles?.[0] ?? '');
    if (!firsts || !seconds || !deleted) continue;
    phases.receive.push(r.end - r.start);
    phases.receiveToFirstWrites.push(firsts.start - r.end);
    phases.firstWrites.push(firsts.end - firsts.start);
    phases.firstToSecondWrites.push(seconds.start - firsts.end);
    phases.secondWrites.push(seconds.end - seconds.start);
    phases.secondWritesToDelete.push(deleted.start - seconds.end);
    phases.delete.push(deleted.end - deleted.start);
    phases.receiveToDeleted.push(deleted.end - r.start);
    const next = nextOf.get(r);
    if (!next) continue;
    phases.cycle.push(next.start - r.start);
    within.firstWrites.push(firsts.end <= next.start ? 1 : 0);
    within.secondWrites.push(seconds.end <= next.start ? 1 : 0);
    within.delete.push(deleted.end <= next.start ? 1 : 0);
  }
  const share = (values: number[]) => round(mean(values), 3);
  const endedWithinCycle = {
    firstWrites: share(within.firstWrites),
    secondWrites: share(within.secondWrites),
    delete: share(within.delete),
  };
  const busy = options.dynamo.reduce((a, s) => a + (s.end - s.start), 0);
  return {
    batches: receives.length,
    dynamoWritesPerJob: { first: round(first / jobs, 4), second: round(second / jobs, 4), other: round(extra / jobs, 4) },
    dynamoWritesPerBatch: round(other / receives.length, 4),
    meanMs: Object.fromEntries(Object.entries(phases).map(([k, v]) => [k, round(mean(v), 2)])) as unknown as CriticalPath['meanMs'],
    endedWithinCycle,
    roundTripsOnCycle: {
      sqs: round(1 + endedWithinCycle.delete, 3),
      dynamo: round(endedWithinCycle.firstWrites + endedWithinCycle.secondWrites, 3),
    },
    // Receive, first write, second write, delete: one after the other for every job.
    roundTripsPerJob: { sqs: 2, dynamo: round((first + second) / jobs, 4) },
    dynamoInFlight: round(busy / (options.seconds * 1000), 2),
  };
}

/**
 * Throughput on AWS of `loops` receive loops (one dispatcher: 1; the trigger's mapping: its
 * concurrent invocations), by {@link MODEL_FORMULA}. `pipelined`: the loop receives again while its
 * batch's writes are in flight (taskworker), so its CPU overlaps its round trips; a sequential loop
 * (the trigger's invocation: receive, handler, delete) adds them.
 */
export function awsModel(
  path: CriticalPath,
  options: {
    readonly batchSize: number;
    readonly mainThreadMsPerBatch: number;
    readonly pipelined: boolean;
    /** Loops running side by side, each on a CPU of its own (default 1). */
    readonly loops?: number;
    /** What bounds the writes in flight (pipelined): the most messages pending a slot at once, and how many of a job's writes each makes meanwhile (the claim). */
    readonly pending?: { readonly most: number; readonly writesWhilePending: number };
  },
) {
  const model = (w: number) => {
    const roundTripsMs = path.roundTripsOnCycle.sqs * MODEL_SQS_MS + path.roundTripsOnCycle.dynamo * w;
    const loops = options.loops ?? 1;
    if (!options.pipelined) return (loops * options.batchSize * 1000) / (roundTripsMs + options.mainThreadMsPerBatch);
    const bounds = [(options.batchSize * 1000) / roundTripsMs, (options.batchSize * 1000) / options.mainThreadMsPerBatch];
    if (options.pending && options.pending.writesWhilePending > 0)
      bounds.push((options.pending.most * 1000) / (options.pending.writesWhilePending * w));
    return loops * Math.min(...bounds);
  };
  return Object.fromEntries(MODEL_DYNAMO_WRITE_MS.map((w) => [`dynamoWrite${w}ms`, round(model(w), 1)])) as Record<
    `dynamoWrite${(typeof MODEL_DYNAMO_WRITE_MS)[number]}ms`,
    number
  >;
}
