/**
 * A mergeable latency histogram with log-spaced buckets (each 10 % wider than the last),
 * so quantiles are within 10 % at any scale. Plain JSON, so it crosses process boundaries.
 */
export interface Histogram {
  count: number;
  sum: number;
  max: number;
  /** Bucket index → count. Bucket i holds values in (GROWTH^(i-1), GROWTH^i]; index 0 holds values ≤ 1. */
  buckets: Record<string, number>;
}

const GROWTH = 1.1;
const LOG_GROWTH = Math.log(GROWTH);

export function emptyHistogram(): Histogram {
  return { count: 0, sum: 0, max: 0, buckets: {} };
}

export function recordValue(h: Histogram, value: number): void {
  const v = Math.max(0, value);
  const index = v <= 1 ? 0 : Math.ceil(Math.log(v) / LOG_GROWTH);
  h.buckets[index] = (h.buckets[index] ?? 0) + 1;
  h.count += 1;
  h.sum += v;
  if (v > h.max) h.max = v;
}

export function mergeHistogram(into: Histogram, from: Histogram): void {
  for (const [index, n] of Object.entries(from.buckets)) into.buckets[index] = (into.buckets[index] ?? 0) + n;
  into.count += from.count;
  into.sum += from.sum;
  if (from.max > into.max) into.max = from.max;
}

/** The value at quantile q (0..1), as its bucket's upper bound capped at the true maximum; NaN when empty. */
export function quantile(h: Histogram, q: number): number {
  if (h.count === 0) return Number.NaN;
  const rank = Math.max(1, Math.ceil(q * h.count));
  const indexes = Object.keys(h.buckets)
    .map(Number)
    .sort((a, b) => a - b);
  let seen = 0;
  for (const index of indexes) {
    seen += h.buckets[index] ?? 0;
    if (seen >= rank) return Math.min(index === 0 ? 1 : GROWTH ** index, h.max);
  }
  return h.max;
}
