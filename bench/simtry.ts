import { runSimulation } from './sim/run';
import { WORKLOADS } from './sim/workloads';

async function main() {
  for (const name of ['steady-0.7', 'steady-0.9', 'steady-1.05', 'busy-hour']) {
    const w = WORKLOADS.find((x) => x.name === name)!;
    for (const [selector, doorbell] of [
      ['reduced-lottery', false],
      ['sla-aware', false],
      ['sla-aware', true],
    ] as const) {
      const t = Date.now();
      const r = await runSimulation({
        workload: w,
        selector,
        seeds: [1],
        fleet: { dispatchers: 5, concurrency: 10, invocationSeconds: 300, schedule: { maxConcurrency: 12, autoscale: true, doorbell } },
      });
      console.log(
        name,
        selector,
        doorbell,
        Date.now() - t,
        'ms',
        JSON.stringify({
          rpt: r.sqsRequestsPerTask,
          disp: r.dispatcherSeconds,
          inv: r.invocations,
          door: r.doorbellInvocations,
          q: r.queues.map((q) => [q.queue, q.p99, q.max]),
        }),
      );
    }
  }
}
main();
