import { Simulation } from '../../bench/sim/engine';
import { FAUXQS_MODEL, SimSqs, type SqsModel } from '../../bench/sim/sqs';
import type { QueueClient } from '../../lib/ports';
import { seededRandom } from '../../lib/random';
import { queueClientConformance } from '../conformance/queue-client';

/**
 * Runs one call on the simulation clock: SimSqs's requests sleep their latency (and long polls
 * their wait) on it, and nothing moves it but {@link Simulation.runUntil}, so the clock runs
 * timer by timer until the call has answered.
 */
async function onSimulationClock<T>(sim: Simulation, call: () => Promise<T>): Promise<T> {
  let answered = false;
  const pending = call();
  pending.then(
    () => {
      answered = true;
    },
    () => {
      answered = true;
    },
  );
  await sim.runWhile(() => !answered, Number.POSITIVE_INFINITY);
  if (!answered) throw new Error('a simulated SQS call is waiting on nothing the clock can fire');
  return pending;
}

/** The port, each call driven on the simulation clock (the calls themselves are SimSqs's, unchanged). */
function drivenClient(sim: Simulation, sqs: SimSqs): QueueClient {
  return {
    receive: (url, request, signal) => onSimulationClock(sim, () => sqs.receive(url, request, signal)),
    sendBatch: (url, entries) => onSimulationClock(sim, () => sqs.sendBatch(url, entries)),
    deleteBatch: (url, entries) => onSimulationClock(sim, () => sqs.deleteBatch(url, entries)),
    changeVisibilityBatch: (url, entries) => onSimulationClock(sim, () => sqs.changeVisibilityBatch(url, entries)),
    depth: (url) => onSimulationClock(sim, () => sqs.depth(url)),
  };
}

// Both ways the simulation answers receives: SQS's (short polls sample, a message wakes one long
// poll) and the emulator's. Request latency is the simulation's default.
for (const [label, model] of [
  ['simulated SQS (SQS model)', {}],
  ['simulated SQS (fauxqs model)', FAUXQS_MODEL],
] as ReadonlyArray<readonly [string, SqsModel]>) {
  queueClientConformance(
    label,
    async () => {
      const sim = new Simulation();
      const sqs = new SimSqs({ clock: sim, random: seededRandom(11), ...model });
      return {
        client: drivenClient(sim, sqs),
        // The port's receive always names its visibility timeout, so a queue's default is never used.
        createQueue: async (name, options = {}) =>
          sqs.createQueue(
            name,
            undefined,
            options.deadLetter
              ? { redrive: { deadLetterUrl: `sim://sqs/${options.deadLetter.name}`, maxReceiveCount: options.deadLetter.maxReceiveCount } }
              : {},
          ),
        wait: (ms) => sim.runUntil(sim.now() + ms),
      };
    },
    async () => {},
  );
}
