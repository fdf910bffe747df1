import { VirtualClock } from '../../lib/clock';
import type { QueueConfig } from '../../lib/config/app-config';
import { seededRandom } from '../../lib/random';
import { createSelector } from '../../lib/select/create-selector';
import type { Probe, SelectorEnv } from '../../lib/select/selector-types';
import { kaleQueues } from '../helpers/factories';

/** Probes that answer from a fixed set of non-empty queues, counting calls. */
function envWith(nonEmpty: Set<string>, seed = 1) {
  const calls = { receive: [] as string[], attributes: [] as string[] };
  const answer = (q: QueueConfig): Probe<string> =>
    nonEmpty.has(q.name) ? { empty: false, messages: [`${q.name}-msg`] } : { empty: true, messages: [] };
  const env: SelectorEnv<string> = {
    queues: kaleQueues(),
    random: seededRandom(seed),
    clock: new VirtualClock(),
    probes: {
      receive: async (q) => {
        calls.receive.push(q.name);
        return answer(q);
      },
      attributes: async (q) => {
        calls.attributes.push(q.name);
        return { empty: answer(q).empty, messages: [] };
      },
    },
  };
  return { env, calls };
}

async function pickCounts(name: Parameters<typeof createSelector>[0], nonEmpty: Set<string>, draws: number) {
  const { env } = envWith(nonEmpty, 42);
  const selector = createSelector(name, env);
  const counts: Record<string, number> = {};
  for (let i = 0; i < draws; i++) {
    const { queue } = await selector.select(env.queues);
    counts[queue.name] = (counts[queue.name] ?? 0) + 1;
  }
  return counts;
}

const all = new Set(['high_priority', 'default', 'low_priority']);

describe('lottery selectors', () => {
  it.each(['lottery', 'reduced-lottery', 'reduced-lottery-gqa'] as const)(
    '%s: share of picks follows priority when every queue has work',
    async (name) => {
      const counts = await pickCounts(name, all, 14_500);
      // Expected shares 100/145, 40/145, 5/145.
      expect((counts.high_priority ?? 0) / 14_500).toBeCloseTo(100 / 145, 1);
      expect((counts.default ?? 0) / 14_500).toBeCloseTo(40 / 145, 1);
      expect(counts.low_priority ?? 0).toBeGreaterThan(250);
      expect(counts.low_priority ?? 0).toBeLessThan(750);
    },
  );

  it('reduced lottery never starves the lowest queue over many draws', async () => {
    const counts = await pickCounts('reduced-lottery', all, 10_000);
    expect(counts.low_priority ?? 0).toBeGreaterThan(0);
    // Any window of draws contains the lowest queue: it wins about 1 in 29.
    const { env } = envWith(all, 9);
    const selector = createSelector('reduced-lottery', env);
    let sinceLow = 0;
    let longestGap = 0;
    for (let i = 0; i < 10_000; i++) {
      const { queue } = await selector.select(env.queues);
      sinceLow = queue.name === 'low_priority' ? 0 : sinceLow + 1;
      longestGap = Math.max(longestGap, sinceLow);
    }
    expect(longestGap).toBeLessThan(400);
  });

  it('empty queues leave the pool: the only non-empty queue is chosen every time', async () => {
    const counts = await pickCounts('reduced-lottery', new Set(['low_priority']), 500);
    expect(counts).toEqual({ low_priority: 500 });
  });

  it('receive-as-check hands over the probe messages as the batch', async () => {
    const { env, calls } = envWith(new Set(['default']));
    const selection = await createSelector('reduced-lottery', env).select(env.queues);
    expect(selection.queue.name).toBe('default');
    expect(selection.messages).toEqual(['default-msg']);
    expect(calls.attributes).toEqual([]);
  });

  it('the GetQueueAttributes variant checks by attributes and leaves the receive to the dispatcher', async () => {
    const { env, calls } = envWith(new Set(['default']));
    const selection = await createSelector('reduced-lottery-gqa', env).select(env.queues);
    expect(selection.queue.name).toBe('default');
    expect(selection.messages).toEqual([]);
    expect(calls.receive).toEqual([]);
    expect(calls.attributes.length).toBeGreaterThanOrEqual(1);
  });

  it('all queues empty: each is checked once, then a lottery winner is long-polled', async () => {
    const { env, calls } = envWith(new Set());
    const selection = await createSelector('reduced-lottery', env).select(env.queues);
    expect([...calls.receive].sort()).toEqual(['default', 'high_priority', 'low_priority']);
    expect(selection.messages).toEqual([]);
    expect(selection.waitSeconds).toBe(selection.queue.longPollSeconds);
  });

  it('only draws from the candidates it is given', async () => {
    const { env } = envWith(all);
    const selector = createSelector('reduced-lottery', env);
    const lowOnly = env.queues.filter((q) => q.name === 'low_priority');
    for (let i = 0; i < 50; i++) expect((await selector.select(lowOnly)).queue.name).toBe('low_priority');
  });
});

describe('strict priority', () => {
  it('always takes the highest non-empty queue', async () => {
    expect(await pickCounts('strict', all, 100)).toEqual({ high_priority: 100 });
    expect(await pickCounts('strict', new Set(['default', 'low_priority']), 100)).toEqual({ default: 100 });
  });

  it('long-polls the highest queue when all are empty', async () => {
    const { env } = envWith(new Set());
    const selection = await createSelector('strict', env).select(env.queues);
    expect(selection.queue.name).toBe('high_priority');
    expect(selection.waitSeconds).toBe(1);
  });
});

describe('round-robin', () => {
  it('cycles through the queues regardless of priority', async () => {
    const { env, calls } = envWith(all);
    const selector = createSelector('round-robin', env);
    const names: string[] = [];
    for (let i = 0; i < 6; i++) names.push((await selector.select(env.queues)).queue.name);
    expect(names).toEqual(['high_priority', 'default', 'low_priority', 'high_priority', 'default', 'low_priority']);
    expect(calls.receive).toEqual([]);
  });
});
