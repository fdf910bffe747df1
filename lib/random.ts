/** A source of uniform numbers in [0, 1). Policies take one so tests and simulations can seed it. */
export type Random = () => number;

/** Small, fast seeded generator (mulberry32): the same seed gives the same sequence on every platform. */
export function seededRandom(seed: number): Random {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** Picks an item with probability proportional to its weight. Weights must be > 0. */
export function weightedPick<T>(items: readonly T[], weight: (item: T) => number, random: Random): T {
  if (items.length === 0) throw new RangeError('weightedPick needs at least one item');
  let total = 0;
  for (const item of items) total += weight(item);
  let ticket = random() * total;
  for (const item of items) {
    ticket -= weight(item);
    if (ticket < 0) return item;
  }
  return items[items.length - 1] as T;
}
