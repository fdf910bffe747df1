/**
 * How much a dispatcher receives at once (lib/dispatch/loop.ts, slots.ts, run-times.ts): what would
 * start within the prefetch horizon, counted per slot from the run times its tasks have had here.
 * Short tasks come many to a request even on one slot (a request a task would cost ten times what
 * SQS must); long ones one at a time, so nothing received waits in the dispatcher behind them while
 * a higher queue's work waits in SQS. Counted on the simulation's clock: receives, not seconds.
 */
import { Simulation } from '../../bench/sim/engine';
import { AHEAD_PER_SLOT } from '../../lib/dispatch/slots';
import type { TaskOptions } from '../../lib/tasks/task';
import { encodeEnvelope } from '../../lib/wire/envelope';
import { world } from '../helpers/world';

async function oneSlotRun(runMs: number, jobs: number, forMs = jobs * runMs + 120_000) {
  const sim = new Simulation();
  const starts: number[] = [];
  const task: TaskOptions = {
    name: 'work',
    queue: 'urgent',
    timeLimitSeconds: 10,
    run: async () => {
      starts.push(sim.now());
      await sim.sleep(runMs);
    },
  };
  const w = world([task], { dispatcher: { concurrency: 1 } }, { simulation: sim });
  for (let i = 0; i < jobs; i++) await w.send('urgent', encodeEnvelope({ task: 'work', id: `j${i}`, payload: { i } }));
  const asked: Array<{ at: number; maxMessages: number }> = [];
  const receive = w.sqs.receive.bind(w.sqs);
  w.sqs.receive = (url, request, signal) => {
    asked.push({ at: sim.now(), maxMessages: request.maxMessages });
    return receive(url, request, signal);
  };
  const summary = await w.run({ forMs });
  const outcomes = w.reports.flatMap((r) => r.jobs).map((j) => j.outcome);
  const ran = outcomes.filter((o) => o === 'succeeded').length;
  return { summary, starts, ran, outcomes, asked, depth: await w.sqs.depth(w.urls.queues.urgent as string) };
}

describe('prefetch per slot', () => {
  it('one slot with 50 ms tasks receives them ten to a request once it has seen one run', async () => {
    const { summary, ran, depth } = await oneSlotRun(50, 60);
    expect(ran).toBe(60);
    expect(depth.visible + depth.inFlight).toBe(0);
    // The first receive takes one (no run time known yet), then 10 a receive: 1 + 6 (and the empty one at the end).
    expect(summary.receives - summary.emptyReceives).toBe(7);
  });

  it('one slot with 2 s tasks receives one at a time: none waits in the dispatcher for the slot', async () => {
    const { summary, ran, starts } = await oneSlotRun(2_000, 12);
    expect(ran).toBe(12);
    expect(summary.receives - summary.emptyReceives).toBe(12);
    expect(starts).toHaveLength(12);
  });

  it('near the last moment its tasks may start, receives only for the free slots: nothing received is released unrun', async () => {
    // 30 s of invocation for a 10 s time limit, 50 ms tasks: ten to a receive, until the last 5 s
    // before the last start (PREFETCH_CUTOFF_MS), one to a receive.
    const { asked, outcomes, ran, depth } = await oneSlotRun(50, 1000, 30_000);
    const sizes = asked.map((a) => a.maxMessages);
    const firstOnes = sizes.indexOf(1, sizes.indexOf(10));
    expect(sizes.indexOf(10)).toBeGreaterThan(-1);
    expect(firstOnes).toBeGreaterThan(-1);
    // From the cutoff on, every receive asks for one: a run of a hundred 50 ms tasks in 5 s.
    expect(sizes.slice(firstOnes).every((n) => n === 1)).toBe(true);
    expect(sizes.length - firstOnes).toBeGreaterThan(80);
    // Nothing received was released: it ran, or was never received and is still visible.
    expect(outcomes.filter((o) => o !== 'succeeded')).toEqual([]);
    expect(ran + depth.visible).toBe(1000);
  });
});

describe('claims ahead of the slots (tracking full)', () => {
  it('quick tasks: a dispatcher of 10 slots keeps more than 10 claims in flight, never more than AHEAD_PER_SLOT a slot, at one receive per 10 tasks', async () => {
    const sim = new Simulation();
    const task: TaskOptions = { name: 'work', queue: 'urgent', timeLimitSeconds: 10, run: () => sim.sleep(5) };
    const w = world(
      [task],
      { queues: [{ name: 'urgent', priority: 90, visibilityTimeoutSeconds: 30, tracking: 'full' }], dispatcher: { concurrency: 10 } },
      { simulation: sim, tracked: true },
    );
    // Each claim takes 20 ms in the table, four times a body: claims made one slot at a time would hold the slots.
    let inFlight = 0;
    let peak = 0;
    const claim = w.jobs.claim.bind(w.jobs);
    w.jobs.claim = async (request) => {
      inFlight += 1;
      peak = Math.max(peak, inFlight);
      try {
        await sim.sleep(20);
        return await claim(request);
      } finally {
        inFlight -= 1;
      }
    };
    const jobs = 600;
    for (let i = 0; i < jobs; i++) await w.send('urgent', encodeEnvelope({ task: 'work', id: `j${i}`, payload: { i } }));
    const summary = await w.run({ forMs: 60_000 });
    const outcomes = w.reports.flatMap((r) => r.jobs).map((j) => j.outcome);
    expect(outcomes.filter((o) => o === 'succeeded')).toHaveLength(jobs);
    expect(peak).toBeGreaterThan(10);
    expect(peak).toBeLessThanOrEqual(AHEAD_PER_SLOT * 10);
    // Whole batches only: a receive per 10 tasks, bar the first ones (no run time known yet) and the empty last.
    expect(summary.receives - summary.emptyReceives).toBeLessThanOrEqual(jobs / 10 + 2);
  });
});
