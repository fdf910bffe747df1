import type { QueueConfig } from '../config/app-config';
import { weightedPick } from '../random';
import { type Probe, type QueueSelector, receiveSizeIn, type Selection, type SelectorEnv } from './selector-types';

const byPriority = (q: QueueConfig) => q.priority;

/** Draws a queue with probability proportional to its priority. */
export function lotteryDraw<M>(pool: readonly QueueConfig[], env: SelectorEnv<M>): QueueConfig {
  return weightedPick(pool, byPriority, env.random);
}

function longPoll<M>(queue: QueueConfig): Selection<M> {
  return { queue, messages: [], waitSeconds: queue.longPollSeconds };
}

function taken<M>(queue: QueueConfig, probe: Probe<M>): Selection<M> {
  return { queue, messages: probe.messages, waitSeconds: queue.longPollSeconds };
}

/**
 * Kale's ReducedLottery: draw by priority from a pool; a queue found empty leaves the pool;
 * when every queue is empty, draw from all queues and long-poll the winner.
 * With `probe: 'receive'` the emptiness check is a short-poll receive whose messages become the
 * batch; with `probe: 'attributes'` it is GetQueueAttributes (Kale's code; one extra request).
 */
export function reducedLottery<M>(env: SelectorEnv<M>, probe: 'receive' | 'attributes'): QueueSelector<M> {
  return {
    name: probe === 'receive' ? 'reduced-lottery' : 'reduced-lottery-gqa',
    async select(candidates, room) {
      const pool = [...candidates];
      while (pool.length > 0) {
        const queue = lotteryDraw(pool, env);
        const found =
          probe === 'receive' ? await env.probes.receive(queue, receiveSizeIn(room, queue)) : await env.probes.attributes(queue);
        if (!found.empty) return taken(queue, found);
        pool.splice(pool.indexOf(queue), 1);
      }
      return longPoll(lotteryDraw(candidates, env));
    },
  };
}

/** Plain lottery by priority, no emptiness check: may long-poll an empty queue while others wait. */
export function lottery<M>(env: SelectorEnv<M>): QueueSelector<M> {
  return { name: 'lottery', select: async (candidates) => longPoll(lotteryDraw(candidates, env)) };
}

/** Strict priority: the highest-priority queue that is not empty; starves lower queues under load. */
export function strictPriority<M>(env: SelectorEnv<M>): QueueSelector<M> {
  return {
    name: 'strict',
    async select(candidates, room) {
      const ordered = [...candidates].sort((a, b) => b.priority - a.priority);
      for (const queue of ordered) {
        const found = await env.probes.receive(queue, receiveSizeIn(room, queue));
        if (!found.empty) return taken(queue, found);
      }
      return longPoll(ordered[0] as QueueConfig);
    },
  };
}

/** Round-robin over all queues, priority ignored: what Celery's Redis/SQS transports do. */
export function roundRobin<M>(_env: SelectorEnv<M>): QueueSelector<M> {
  let next = 0;
  return {
    name: 'round-robin',
    async select(candidates) {
      const queue = candidates[next % candidates.length] as QueueConfig;
      next += 1;
      return longPoll(queue);
    },
  };
}
