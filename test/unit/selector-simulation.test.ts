import { Simulation } from '../../bench/sim/engine';
import { runSimulation } from '../../bench/sim/run';
import { FAUXQS_MODEL, SimSqs, type SqsModel } from '../../bench/sim/sqs';
import type { Workload } from '../../bench/sim/workloads';
import { seededRandom } from '../../lib/random';

const short: Workload = { name: 'short', description: '3 minutes at 0.9', minutes: 3, warmupMinutes: 1, profile: [[0, 0.9]] };

// Hang guards, not speed figures: the simulations are CPU-bound, and a machine busy with other
// suites (or anything else) slows them many times over.
jest.setTimeout(600_000);

describe('selector simulation (bench/sim)', () => {
  it('fires timers in time order, ties in the order they were set, and lets continuations run before time moves', async () => {
    const sim = new Simulation(0);
    const seen: string[] = [];
    const wakeAt = (ms: number, label: string) =>
      sim.sleep(ms).then(async () => {
        seen.push(`${label}@${sim.now()}`);
        if (label === 'a') await sim.sleep(0).then(() => seen.push(`a-next@${sim.now()}`));
      });
    void wakeAt(20, 'c');
    void wakeAt(10, 'a');
    void wakeAt(10, 'b');
    await sim.runUntil(100);
    expect(seen).toEqual(['a@10', 'b@10', 'a-next@10', 'c@20']);
    expect(sim.now()).toBe(100);
  });

  it('wakes an aborted sleep early and never fires it again', async () => {
    const sim = new Simulation(0);
    const stop = new AbortController();
    let woke = -1;
    void sim.sleep(1000, stop.signal).then(() => {
      woke = sim.now();
    });
    void sim.sleep(5).then(() => stop.abort());
    await sim.runUntil(2000);
    expect(woke).toBe(5);
    expect(sim.events).toBe(1);
  });

  it('repeats a run to the digit with the same seeds, and differs with others', async () => {
    const a = await runSimulation({ workload: short, selector: 'sla-aware', seeds: [1] });
    const b = await runSimulation({ workload: short, selector: 'sla-aware', seeds: [1] });
    const c = await runSimulation({ workload: short, selector: 'sla-aware', seeds: [2] });
    expect(b).toEqual(a);
    expect(c.queues).not.toEqual(a.queues);
    expect(a.tasks).toBeGreaterThan(1000);
    expect(a.duplicateRuns).toBe(0);
  });

  it('drives the real dispatcher and selectors: every selector serves the work, counting its requests', async () => {
    for (const selector of ['sla-aware', 'reduced-lottery', 'strict'] as const) {
      const r = await runSimulation({ workload: short, selector, seeds: [3] });
      expect(r.queues.map((q) => q.published > 0 && q.started / q.published > 0.9)).toEqual([true, true, true]);
      expect(r.requests.receive).toBeGreaterThan(0);
      expect(r.requests.deleteBatch).toBeGreaterThan(0);
      // At 0.9 of capacity nothing waits anywhere near a minute.
      expect(Math.max(...r.queues.map((q) => q.p50))).toBeLessThan(60);
    }
  });

  /** Two long polls of 5 s on an empty queue, and one message sent at 1 s: when each poll returns, and with what. */
  async function twoPollers(model: SqsModel) {
    const sim = new Simulation(0);
    const sqs = new SimSqs({ clock: sim, random: seededRandom(1), latency: { baseMs: 0, jitterMeanMs: 0 }, ...model });
    const url = sqs.createQueue('q');
    const request = { maxMessages: 10, waitSeconds: 5, visibilityTimeoutSeconds: 30 };
    const answers: Array<{ at: number; got: number }> = [];
    for (let i = 0; i < 2; i++) void sqs.receive(url, request).then((m) => answers.push({ at: sim.now(), got: m.length }));
    void sim.sleep(1000).then(() => sqs.sendBatch(url, [{ id: '1', body: 'x' }]));
    await sim.runUntil(10_000);
    return answers;
  }

  it("models SQS's long poll (the loser keeps waiting) and fauxqs's (every poller wakes, the loser empty)", async () => {
    expect(await twoPollers({})).toEqual([
      { at: 1000, got: 1 },
      { at: 5000, got: 0 },
    ]);
    expect(await twoPollers(FAUXQS_MODEL)).toEqual([
      { at: 1000, got: 1 },
      { at: 1000, got: 0 },
    ]);
  });

  it("does not end the emulator's long poll for a message that was deleted before its visibility lapsed", async () => {
    const sim = new Simulation(0);
    const sqs = new SimSqs({ clock: sim, random: seededRandom(1), latency: { baseMs: 0, jitterMeanMs: 0 }, ...FAUXQS_MODEL });
    const url = sqs.createQueue('q');
    let answered = -1;
    void (async () => {
      await sqs.sendBatch(url, [{ id: '1', body: 'x' }]);
      const [m] = await sqs.receive(url, { maxMessages: 1, waitSeconds: 0, visibilityTimeoutSeconds: 2 });
      await sqs.deleteBatch(url, [{ id: '1', receiptHandle: m?.receiptHandle as string }]);
      await sqs.receive(url, { maxMessages: 1, waitSeconds: 5, visibilityTimeoutSeconds: 2 });
      answered = sim.now();
    })();
    await sim.runUntil(10_000);
    // The deleted message's old visibility end (2 s) is no wake-up: the poll waits its 5 s.
    expect(answered).toBe(5000);
  });

  it('repeats one arrival sequence under other draws with arrivalSeed', async () => {
    const a = await runSimulation({ workload: short, selector: 'sla-aware', seeds: [1], arrivalSeed: 7 });
    const b = await runSimulation({ workload: short, selector: 'sla-aware', seeds: [2], arrivalSeed: 7 });
    expect(b.queues.map((q) => q.published)).toEqual(a.queues.map((q) => q.published));
    expect(b.requests).not.toEqual(a.requests);
  });
});
