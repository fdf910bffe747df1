import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { VirtualClock } from '../../lib/clock';
import type { QueueConfig } from '../../lib/config/app-config';
import { seededRandom } from '../../lib/random';
import { createSelector } from '../../lib/select/create-selector';
import type { Probe, QueueSelector, Selection, SelectorEnv } from '../../lib/select/selector-types';
import { SLA_AWARE_DEFAULTS, slaAware } from '../../lib/select/sla-aware';
import { kaleQueues, queueConfig } from '../helpers/factories';

// Kale's queues with SLAs: high 10 s, default 60 s, low 300 s.
const queues = kaleQueues().map((q, i) => ({ ...q, slaSeconds: [10, 60, 300][i] as number }));
const [high, standard, low] = queues as [QueueConfig, QueueConfig, QueueConfig];

/** Probes answering from per-queue message counts, recording each look and how many messages it asked for. */
function world(seed = 1) {
  const clock = new VirtualClock();
  const waiting = new Map<string, number>();
  const looks: Array<{ queue: string; asked: number | undefined; at: number }> = [];
  const env: SelectorEnv<string> = {
    queues,
    random: seededRandom(seed),
    clock,
    probes: {
      receive: async (q, maxMessages) => {
        looks.push({ queue: q.name, asked: maxMessages, at: clock.now() });
        const n = Math.min(waiting.get(q.name) ?? 0, maxMessages ?? q.batchSize, q.batchSize);
        return { empty: n === 0, messages: Array.from({ length: n }, (_, i) => `${q.name}-${i}`) } satisfies Probe<string>;
      },
      attributes: async () => {
        throw new Error('the SLA-aware selector never calls GetQueueAttributes');
      },
    },
  };
  return { clock, waiting, looks, env };
}

/** What the dispatcher does with a selection: report the probe's batch, and an empty receive for a long poll that found nothing. */
async function selectAndReport(selector: QueueSelector<string>, w: ReturnType<typeof world>, oldestAgeMs = 0): Promise<Selection<string>> {
  const selection = await selector.select(queues, { freeSlots: 10, slots: 10 });
  const n = selection.messages.length > 0 ? selection.messages.length : Math.min(w.waiting.get(selection.queue.name) ?? 0, 10);
  selector.observe?.({ queue: selection.queue.name, received: n, oldestAgeMs: n > 0 ? oldestAgeMs : 0 });
  return selection;
}

describe('SLA-aware selector', () => {
  it('is the default selector, and is built by its config name', () => {
    expect(createSelector('sla-aware', world().env).name).toBe('sla-aware');
  });

  it('long-polls the top queue rather than probing it, one receive per selection', async () => {
    const w = world();
    const selector = slaAware(w.env);
    const selections: Selection<string>[] = [];
    for (let i = 0; i < 20; i++) selections.push(await selectAndReport(selector, w));
    // Every queue is empty: the top queue is only ever long-polled, never probed…
    expect(selections.every((s) => s.queue === high && s.messages.length === 0 && s.waitSeconds >= high.longPollSeconds)).toBe(true);
    expect(w.looks.filter((l) => l.queue === high.name)).toEqual([]);
    // …the lower queues were looked at once each and are now paused; the top queue is chosen again
    // after each receive, so a lower queue that comes due meanwhile is not left behind a run of them.
    expect(w.looks.map((l) => l.queue).sort()).toEqual(['default', 'low_priority']);
    expect(selections.every((s) => s.receives === 1)).toBe(true);
  });

  it('does not look again at a queue just seen empty; looks again after its pause, which backs off to 5% of its SLA', async () => {
    const w = world();
    const selector = slaAware(w.env);
    const looksAt = (name: string) => w.looks.filter((l) => l.queue === name).map((l) => l.at - (w.looks[0]?.at ?? 0));
    // An idle hour of selections, one per simulated 100 ms.
    for (let t = 0; t < 3_600_000; t += 100) {
      await selectAndReport(selector, w);
      w.clock.advance(100);
    }
    const gaps = (times: number[]) => times.slice(1).map((t, i) => t - (times[i] as number));
    const [, jitterHigh] = [1 - SLA_AWARE_DEFAULTS.jitter, 1 + SLA_AWARE_DEFAULTS.jitter];
    for (const q of [standard, low]) {
      const g = gaps(looksAt(q.name));
      // First pause: 2% of the SLA (at most 1 s), jittered; never sooner.
      expect(Math.min(...g)).toBeGreaterThanOrEqual(Math.min(q.slaSeconds * 1000 * 0.02, 1000) * (1 - SLA_AWARE_DEFAULTS.jitter) - 100);
      // Backed off: never more than 5% of the SLA (plus jitter and one selection step) between looks.
      expect(Math.max(...g)).toBeLessThanOrEqual(q.slaSeconds * 1000 * 0.05 * jitterHigh + 100);
    }
    // Idle, the low queue is looked at about once per 5% of its SLA (15 s): ~240 looks in the hour, not 36,000.
    expect(looksAt(low.name).length).toBeGreaterThan(180);
    expect(looksAt(low.name).length).toBeLessThan(320);
  });

  it('when nothing is due, long-polls the top queue until the next look is due, at most 20 s', async () => {
    const w = world();
    const selector = slaAware(w.env);
    const waits: number[] = [];
    for (let t = 0; t < 120_000; t += 100) {
      const s = await selectAndReport(selector, w);
      if (s.queue === high) waits.push(s.waitSeconds);
      w.clock.advance(100);
    }
    // Backed off, the next look at default is seconds away: the top queue's wait stretches to meet it.
    expect(Math.max(...waits)).toBeGreaterThan(high.longPollSeconds);
    expect(Math.max(...waits)).toBeLessThanOrEqual(Math.ceil(standard.slaSeconds * 0.05 * (1 + SLA_AWARE_DEFAULTS.jitter)));
    expect(Math.min(...waits)).toBe(high.longPollSeconds);
  });

  it('looks first at queues a depth reading found work in, even while paused, once each', async () => {
    const w = world();
    const selector = slaAware(w.env);
    // Idle for a while: the low queue is paused (backed off), the top queue is long-polled.
    for (let t = 0; t < 60_000; t += 100) {
      await selectAndReport(selector, w);
      w.clock.advance(100);
    }
    w.looks.length = 0;
    w.waiting.set(low.name, 1);
    // The scheduled invocation's depth reading says low holds a message: the very next selection takes it.
    selector.expect?.([low.name, 'not-a-queue']);
    const s = await selectAndReport(selector, w);
    expect(s.queue).toBe(low);
    expect(s.messages).toEqual(['low_priority-0']);
    expect(w.looks.map((l) => l.queue)).toEqual([low.name]);
    // Looked at, it goes back to its pauses: the next selections long-poll the top queue.
    w.waiting.set(low.name, 0);
    w.looks.length = 0;
    for (let i = 0; i < 5; i++) expect((await selectAndReport(selector, w)).queue).toBe(high);
    expect(w.looks.filter((l) => l.queue === low.name)).toEqual([]);
  });

  it('works a lower queue for one batch, then chooses again', async () => {
    const w = world();
    w.waiting.set(standard.name, 100);
    const selector = slaAware(w.env);
    let sawDefault: Selection<string> | undefined;
    for (let i = 0; i < 50 && !sawDefault; i++) {
      const s = await selectAndReport(selector, w);
      if (s.queue === standard) sawDefault = s;
    }
    expect(sawDefault?.messages).toHaveLength(10);
    expect(sawDefault?.receives).toBe(1);
  });

  it('works the top queue’s backlog before the draw while every other queue is within its SLA', async () => {
    const w = world(7);
    for (const q of queues) w.waiting.set(q.name, 1_000_000);
    const selector = slaAware(w.env);
    const picked: Record<string, number> = {};
    for (let i = 0; i < 2000; i++) {
      const s = await selectAndReport(selector, w, 0);
      picked[s.queue.name] = (picked[s.queue.name] ?? 0) + 1;
    }
    // Only the selections before the top queue's first full look are drawn.
    expect(picked.high_priority ?? 0).toBeGreaterThanOrEqual(1995);
  });

  it('draws busy queues in ReducedLottery’s batch shares once one is behind its SLA', async () => {
    const w = world(7);
    for (const q of queues) w.waiting.set(q.name, 1_000_000);
    const selector = slaAware(w.env);
    // The dispatcher reports a receive from the low queue whose oldest message is just past its 300 s SLA.
    const lowAgeMs = 301_000;
    selector.observe?.({ queue: low.name, received: 10, oldestAgeMs: lowAgeMs });
    const batches: Record<string, number> = {};
    for (let i = 0; i < 20_000; i++) {
      const s = await selector.select(queues, { freeSlots: 10, slots: 10 });
      selector.observe?.({ queue: s.queue.name, received: 10, oldestAgeMs: s.queue === low ? lowAgeMs : 0 });
      // The top queue's long polls are worked for `receives` batches.
      batches[s.queue.name] = (batches[s.queue.name] ?? 0) + (s.receives ?? 1);
    }
    const total = Object.values(batches).reduce((a, n) => a + n, 0);
    // priority × iterations × e^(1.5 × age / SLA): 1000 : 200 : 25 × e^1.505.
    const lowWeight = 25 * Math.exp((1.5 * lowAgeMs) / 300_000);
    const sum = 1000 + 200 + lowWeight;
    expect((batches.high_priority ?? 0) / total).toBeCloseTo(1000 / sum, 1);
    expect((batches.default ?? 0) / total).toBeCloseTo(200 / sum, 1);
    expect((batches.low_priority ?? 0) / total).toBeCloseTo(lowWeight / sum, 1);
  });

  it('gives weight to a queue falling behind its SLA (dynamic priority)', async () => {
    const share = async (lowAgeMs: number) => {
      const w = world(3);
      for (const q of queues) w.waiting.set(q.name, 1_000_000);
      const selector = slaAware(w.env);
      selector.observe?.({ queue: low.name, received: 10, oldestAgeMs: lowAgeMs });
      let lows = 0;
      for (let i = 0; i < 3000; i++) {
        const s = await selector.select(queues, { freeSlots: 10, slots: 10 });
        // Every look reports a full batch; low's oldest message is `lowAgeMs` old, the others fresh.
        selector.observe?.({ queue: s.queue.name, received: 10, oldestAgeMs: s.queue === low ? lowAgeMs : 0 });
        if (s.queue === low) lows += 1;
      }
      return lows / 3000;
    };
    const behindALittle = await share(330_000); // 1.1× its 300 s SLA
    const behind = await share(600_000); // twice its SLA
    expect(behindALittle).toBeGreaterThan(0.05);
    expect(behind).toBeGreaterThan(behindALittle * 2);
  });

  it('draws again once a lower queue has gone unseen for its SLA, whatever the top queue’s backlog', async () => {
    const w = world(5);
    for (const q of queues) w.waiting.set(q.name, 1_000_000);
    const selector = slaAware(w.env);
    const began = w.clock.now();
    let firstLow: number | undefined;
    for (let i = 0; i < 5000 && firstLow === undefined; i++) {
      const s = await selectAndReport(selector, w, 0);
      if (s.queue === low && i > 10) firstLow = w.clock.now();
      w.clock.advance(100);
    }
    // Unseen, the low queue's estimated age is the time since its last look: past 300 s it is behind.
    expect(firstLow).toBeDefined();
    expect((firstLow as number) - began).toBeLessThan(330_000);
  });

  it('never starves a queue: ageing bounds how long a backlogged low queue waits, whatever the priority gap', async () => {
    // A priority-1 queue beside a priority-100 one, both always full: by the draw alone it is picked
    // about once in 1000 selections, with gaps of thousands; its age (here, time unseen) raises it.
    const busy = queueConfig({ name: 'busy', priority: 100, iterations: 10, slaSeconds: 60 });
    const meek = queueConfig({ name: 'meek', priority: 1, iterations: 1, slaSeconds: 300 });
    const longestGapMs = async (options: { growth?: number; recheckUnderAge?: number }) => {
      const w = world(11);
      w.waiting.set(busy.name, 1_000_000);
      w.waiting.set(meek.name, 1_000_000);
      const selector = slaAware({ ...w.env, queues: [busy, meek] }, options);
      let lastMeek = w.clock.now();
      let longest = 0;
      for (let i = 0; i < 20_000; i++) {
        const s = await selector.select([busy, meek], { freeSlots: 10, slots: 10 });
        selector.observe?.({ queue: s.queue.name, received: 10, oldestAgeMs: 0 });
        if (s.queue === meek) lastMeek = w.clock.now();
        longest = Math.max(longest, w.clock.now() - lastMeek);
        w.clock.advance(1000);
      }
      return longest;
    };
    // Without the re-check of a fresh queue (the next test), so the ageing alone is measured.
    const aged = await longestGapMs({ recheckUnderAge: 0 });
    // Its weight is 1/1000 of its rival's × e^(1.5 × gap / 300 s): the chances of a pick, one a
    // second, add up to one within about 350 s, and the weight passes its rival's at ~1380 s.
    expect(aged).toBeLessThan(900_000);
    expect(await longestGapMs({ growth: 0, recheckUnderAge: 0 })).toBeGreaterThan(2 * aged);
  });

  it('looks again soon at a fresh lower queue it just worked while the top queue has a backlog, not once either is behind', async () => {
    // Both always full, as in a moment of full slots at moderate load: the top queue's backlog goes
    // first, and the low queue (2 % of the draw) would wait for ageing. Each look reports the oldest
    // message's age: `lowAgeMs` on the low queue, `topAgeMs` on the top one.
    const longestLowGapMs = async (lowAgeMs: number, topAgeMs: number) => {
      const w = world(13);
      for (const q of queues) w.waiting.set(q.name, 1_000_000);
      const selector = slaAware(w.env);
      selector.observe?.({ queue: low.name, received: 10, oldestAgeMs: lowAgeMs });
      let lastLow = w.clock.now();
      let longest = 0;
      for (let i = 0; i < 3000; i++) {
        const s = await selector.select(queues, { freeSlots: 10, slots: 10 });
        selector.observe?.({
          queue: s.queue.name,
          received: 10,
          oldestAgeMs: s.queue === low ? lowAgeMs : s.queue === high ? topAgeMs : 0,
        });
        if (s.queue === low) lastLow = w.clock.now();
        longest = Math.max(longest, w.clock.now() - lastLow);
        w.clock.advance(100);
      }
      return longest;
    };
    const firstPauseMs = Math.min(low.slaSeconds * 1000 * SLA_AWARE_DEFAULTS.lookFraction, SLA_AWARE_DEFAULTS.firstLookMaxMs);
    const within = SLA_AWARE_DEFAULTS.overdueAfter * firstPauseMs + 100;
    // Fresh (its oldest 1 s old, under 3 % of 300 s), the top queue on time: looked at within three first pauses.
    expect(await longestLowGapMs(1000, 0)).toBeLessThanOrEqual(within);
    // Its oldest past 3 % of its SLA (10 s), or the top queue past 10 % of its (2 s): the weights decide, and the top queue's backlog goes first.
    expect(await longestLowGapMs(10_000, 0)).toBeGreaterThan(10 * within);
    expect(await longestLowGapMs(1000, 2000)).toBeGreaterThan(10 * within);
  });

  it('never asks for more than the free slots, fresh or behind: what it takes starts at once', async () => {
    const w = world();
    w.waiting.set(low.name, 1_000_000);
    const selector = slaAware(w.env);
    for (let i = 0; i < 200 && !w.looks.some((l) => l.queue === low.name); i++) {
      await selector.select(queues, { freeSlots: 2, slots: 10 });
    }
    expect(w.looks.find((l) => l.queue === low.name)?.asked).toBe(2);
    // A look that reports a 60 s old backlog (20% of the SLA): still no more than the room.
    selector.observe?.({ queue: low.name, received: 2, oldestAgeMs: 60_000 });
    w.looks.length = 0;
    for (let i = 0; i < 200 && !w.looks.some((l) => l.queue === low.name); i++) {
      await selector.select(queues, { freeSlots: 2, slots: 10 });
    }
    expect(w.looks.find((l) => l.queue === low.name)?.asked).toBe(2);
    w.looks.length = 0;
    for (let i = 0; i < 200 && !w.looks.some((l) => l.queue === low.name); i++) {
      await selector.select(queues, { freeSlots: 10, slots: 10 });
    }
    expect(w.looks.find((l) => l.queue === low.name)?.asked).toBe(10);
  });

  it('only chooses among the candidates it is given', async () => {
    const w = world();
    for (const q of queues) w.waiting.set(q.name, 100);
    const selector = slaAware(w.env);
    const lowOnly = [low];
    for (let i = 0; i < 30; i++) expect((await selector.select(lowOnly)).queue).toBe(low);
  });

  it('repeats itself exactly with the same seed and clock', async () => {
    const run = async () => {
      const w = world(42);
      w.waiting.set(standard.name, 5);
      w.waiting.set(low.name, 50);
      const selector = slaAware(w.env);
      const picks: string[] = [];
      for (let i = 0; i < 500; i++) {
        picks.push((await selectAndReport(selector, w, i * 10)).queue.name);
        w.clock.advance(37);
      }
      return picks.join(',');
    };
    expect(await run()).toBe(await run());
  });

  it('is pure policy: no AWS SDK import', () => {
    const source = readFileSync(join(__dirname, '../../lib/select/sla-aware.ts'), 'utf8');
    expect(source).not.toMatch(/@aws-sdk/);
  });

  it('tells the weights of its last selection, and when it was: none before its first, unchanged while it does not select', async () => {
    const w = world();
    const selector = slaAware(w.env);
    expect(selector.weights?.()).toBeUndefined();
    const at = w.clock.now();
    await selectAndReport(selector, w);
    const drawn = selector.weights?.();
    expect(drawn?.at).toBe(at);
    // Priority × iterations while every queue is fresh: 100×10, 40×5, 5×5.
    expect(drawn?.shares).toEqual({
      high_priority: expect.closeTo(1000 / 1225, 3),
      default: expect.closeTo(200 / 1225, 3),
      low_priority: expect.closeTo(25 / 1225, 3),
    });
    // A dispatcher busy for 30 s selects nothing; its weights are still that selection's (they once
    // grew with each queue's estimated age and showed the 10 s SLA queue at 99 %).
    w.clock.advance(30_000);
    expect(selector.weights?.()).toEqual(drawn);
  });

  it('weights a single-queue config without trouble', async () => {
    const only = queueConfig({ name: 'only', priority: 1 });
    const w = world();
    const selector = slaAware({ ...w.env, queues: [only] });
    expect((await selector.select([only])).queue).toBe(only);
  });
});
