/**
 * The in-memory jobs table's dependency count items, with the DynamoDB adapter's sharded counts
 * (lib/adapters/dynamo-job-flows.ts): per dependent, each shard's counted members (and which failed),
 * the shards complete, and the first failure named on the root before its shard counts it. The
 * job-store conformance suite holds both to them.
 */
import { COUNT_SHARD_SIZE, shardCount, shardSize } from '../policy/dependency-rules';
import type { DependencyCount, DependentEdge } from '../track/job-record';

/** One dependent's count: per shard, the indices counted (true: failed); the shards complete; how many there are. */
interface CountState {
  readonly shards: Map<number, Map<number, boolean>>;
  readonly complete: Set<number>;
  readonly size: number;
  firstFailure?: string;
}

export class MemoryDependencyCounts {
  private readonly counts = new Map<string, CountState>();

  /** `wrote` counts each write that lands, as the jobs table's fake counts its own. */
  constructor(private readonly wrote: () => void) {}

  count(edge: DependentEdge, dependencyId: string, failed: boolean): DependencyCount {
    const count: CountState = this.counts.get(edge.id) ?? { shards: new Map(), complete: new Set<number>(), size: shardCount(edge.size) };
    this.counts.set(edge.id, count);
    const shard = Math.floor(edge.index / COUNT_SHARD_SIZE);
    const counted = count.shards.get(shard) ?? new Map<number, boolean>();
    count.shards.set(shard, counted);
    if (!counted.has(edge.index)) {
      this.wrote();
      counted.set(edge.index, failed);
      if (failed && count.firstFailure === undefined) {
        this.wrote();
        count.firstFailure = dependencyId;
      }
    }
    if (counted.size === shardSize(edge.size, shard) && !count.complete.has(shard)) {
      this.wrote();
      count.complete.add(shard);
    }
    return countOf(count);
  }

  read(dependentId: string): DependencyCount {
    const count = this.counts.get(dependentId);
    return count ? countOf(count) : { complete: false };
  }

  /** Takes a replayed dependency's failure off its dependent's count; whether another member's failure is still counted. */
  uncountFailure(edge: DependentEdge, dependencyId: string): { readonly stillFailed: boolean } {
    const count = this.counts.get(edge.id);
    if (!count) return { stillFailed: false };
    const shard = Math.floor(edge.index / COUNT_SHARD_SIZE);
    const counted = count.shards.get(shard);
    if (counted?.get(edge.index) === true) {
      this.wrote();
      counted.delete(edge.index);
      count.complete.delete(shard);
    }
    if (count.firstFailure === dependencyId) delete count.firstFailure;
    const stillFailed = [...count.shards.values()].some((s) => [...s.values()].some(Boolean));
    return { stillFailed };
  }
}

function countOf(count: CountState): DependencyCount {
  return {
    complete: count.complete.size === count.size,
    ...(count.firstFailure !== undefined ? { firstFailure: count.firstFailure } : {}),
  };
}
