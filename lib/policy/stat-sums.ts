import type { DurationStats, QueueDayStats } from '../track/stats-store';
import { addCost, NO_COST } from './cost-attribution';

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const MAX_DAY_BUCKET = 30;

/** qless's histogram buckets: seconds 0–59, minutes 1–59, hours 1–23, days 1–30 (and beyond in d30). */
/**
 * The stats key of a task's day beside its queue's: `task:<name>` (no queue name holds a colon),
 * stored and read like a queue's (`<key>#<day>`).
 */
export function taskStatsKey(task: string): string {
  return `task:${task}`;
}

export function qlessBucket(ms: number): string {
  const v = Math.max(0, ms);
  if (v < MINUTE) return `s${Math.floor(v / SECOND)}`;
  if (v < HOUR) return `m${Math.floor(v / MINUTE)}`;
  if (v < DAY) return `h${Math.floor(v / HOUR)}`;
  return `d${Math.min(Math.floor(v / DAY), MAX_DAY_BUCKET)}`;
}

/** Every bucket name in order, shortest durations first. */
export const QLESS_BUCKETS: readonly string[] = [
  ...Array.from({ length: 60 }, (_, i) => `s${i}`),
  ...Array.from({ length: 59 }, (_, i) => `m${i + 1}`),
  ...Array.from({ length: 23 }, (_, i) => `h${i + 1}`),
  ...Array.from({ length: MAX_DAY_BUCKET }, (_, i) => `d${i + 1}`),
];

/** The upper edge of a bucket, in ms. */
export function bucketUpperMs(bucket: string): number {
  const n = Number(bucket.slice(1));
  const unit = { s: SECOND, m: MINUTE, h: HOUR, d: DAY }[bucket[0] as 's' | 'm' | 'h' | 'd'];
  return (n + 1) * unit;
}

export function emptyDuration(): DurationStats {
  return { count: 0, sum: 0, sumSquares: 0, buckets: {} };
}

export function withSample(d: DurationStats, ms: number): DurationStats {
  const v = Math.max(0, Math.round(ms));
  const bucket = qlessBucket(v);
  return {
    count: d.count + 1,
    sum: d.sum + v,
    sumSquares: d.sumSquares + v * v,
    buckets: { ...d.buckets, [bucket]: (d.buckets[bucket] ?? 0) + 1 },
  };
}

export function mergeDuration(a: DurationStats, b: DurationStats): DurationStats {
  const buckets: Record<string, number> = { ...a.buckets };
  for (const [k, n] of Object.entries(b.buckets)) buckets[k] = (buckets[k] ?? 0) + n;
  return { count: a.count + b.count, sum: a.sum + b.sum, sumSquares: a.sumSquares + b.sumSquares, buckets };
}

export function mean(d: DurationStats): number {
  return d.count === 0 ? Number.NaN : d.sum / d.count;
}

/** Population variance from the streaming sums, ms². */
export function variance(d: DurationStats): number {
  if (d.count === 0) return Number.NaN;
  const m = d.sum / d.count;
  return Math.max(0, d.sumSquares / d.count - m * m);
}

/** The quantile q (0..1) as the upper edge of the bucket it falls in (ms); NaN when empty. */
export function bucketQuantile(d: DurationStats, q: number): number {
  if (d.count === 0) return Number.NaN;
  const rank = Math.max(1, Math.ceil(q * d.count));
  let seen = 0;
  for (const bucket of QLESS_BUCKETS) {
    seen += d.buckets[bucket] ?? 0;
    if (seen >= rank) return bucketUpperMs(bucket);
  }
  return Number.NaN;
}

/** UTC day of an epoch-ms instant, as the stats table keys it. */
export function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

export function mergeQueueDay(a: QueueDayStats, b: QueueDayStats): QueueDayStats {
  const add = <K extends string>(x: Partial<Record<K, number>>, y: Partial<Record<K, number>>) => {
    const out: Partial<Record<K, number>> = { ...x };
    for (const [k, n] of Object.entries(y) as Array<[K, number]>) out[k] = (out[k] ?? 0) + n;
    return out;
  };
  return {
    queue: a.queue,
    day: a.day,
    counters: add(a.counters, b.counters),
    archived: add(a.archived, b.archived),
    wait: mergeDuration(a.wait, b.wait),
    run: mergeDuration(a.run, b.run),
    ...(a.cost || b.cost ? { cost: addCost(a.cost ?? NO_COST, b.cost ?? NO_COST) } : {}),
  };
}

/** True when a delta adds nothing (an empty batch writes nothing). */
export function isEmptyDelta(d: QueueDayStats): boolean {
  return (
    Object.keys(d.counters).length === 0 &&
    Object.keys(d.archived).length === 0 &&
    d.wait.count === 0 &&
    d.run.count === 0 &&
    d.cost === undefined
  );
}
