import type { QueueConfig } from '../config/app-config';
import {
  type Probe,
  type QueueSelector,
  type ReceiveObservation,
  type Room,
  receiveSizeIn,
  type Selection,
  type SelectorEnv,
  type SelectorWeights,
} from './selector-types';

/**
 * Tuning of the SLA-aware selector. The defaults are what `npm run bench:selectors` measured
 * (BENCHMARKS.md shows the trade-offs); pauses are fractions of each queue's `slaSeconds`, so the
 * SLA is the knob users turn.
 */
export interface SlaAwareOptions {
  /**
   * How fast a queue's weight grows as its oldest message ages: weight = priority × iterations ×
   * e^(growth × age / SLA). At 1.5, a queue at its SLA weighs 4.5× what it weighs when fresh (and
   * 90× at three times its SLA): priority decides while queues are near their SLAs, age once one
   * is far behind. Higher values serve a lagging lower queue sooner at the top queue's expense.
   * @defaultValue 1.5
   */
  readonly growth?: number;
  /** Pause before looking again at a queue that gave less than a full batch: this fraction of its SLA… @defaultValue 0.02 */
  readonly lookFraction?: number;
  /**
   * …but at most this, ms: the low queue's 2 % of a 300 s SLA would be 6 s, and in those seconds a
   * moment of full slots leaves its messages waiting where ReducedLottery's draw would have taken some.
   * @defaultValue 1000
   */
  readonly firstLookMaxMs?: number;
  /** Each further empty look in a row doubles the pause, up to this fraction of the SLA. @defaultValue 0.05 */
  readonly maxLookFraction?: number;
  /** Shortest and longest pause, ms. @defaultValue [100, 30000] */
  readonly lookBoundsMs?: readonly [number, number];
  /** Pauses vary by ± this fraction, so dispatchers do not look in step. @defaultValue 0.25 */
  readonly jitter?: number;
  /**
   * A queue overdue for a look by more than this many of its pauses is looked at before the draw
   * (one whose last look filled, by this many of its first pause, while it is fresh: {@link recheckUnderAge}).
   * @defaultValue 3
   */
  readonly overdueAfter?: number;
  /**
   * A lower queue whose last look filled (pause 0) still counts as overdue, as above, while its oldest
   * message is younger than this fraction of its SLA and the top queue's is younger than
   * {@link recheckWhileTopUnderAge} of its. Without it, a moment of full slots at moderate load gives every
   * free slot to the higher queues (the top queue's backlog goes first, the draw gives the low queue
   * 2 %), and the low queue's messages waited 10 s where ReducedLottery's waited 7. Once the queue is
   * older than this, or the top queue is behind, the weights decide: in overload the looks would
   * hand slots to long low tasks (the high queue's p99 was 184 s at 1.05 of capacity without the bounds).
   * @defaultValue 0.03
   */
  readonly recheckUnderAge?: number;
  /** See {@link recheckUnderAge}. @defaultValue 0.1 */
  readonly recheckWhileTopUnderAge?: number;
}

export const SLA_AWARE_DEFAULTS: Required<SlaAwareOptions> = {
  growth: 1.5,
  lookFraction: 0.02,
  firstLookMaxMs: 1000,
  maxLookFraction: 0.05,
  lookBoundsMs: [100, 30_000],
  jitter: 0.25,
  overdueAfter: 3,
  recheckUnderAge: 0.03,
  recheckWhileTopUnderAge: 0.1,
};

/** The longest long poll SQS allows. */
const MAX_WAIT_SECONDS = 20;

/** What the selector remembers of one queue, from its own looks and the receives the dispatcher reports. */
interface QueueState {
  /** When it was last looked at. */
  seenAt: number;
  /** Age of its oldest message at that look, when the look filled what it asked for (more are likely waiting); else 0. */
  backlogAgeMs: number;
  /** Not looked at again before this time. */
  nextLookAt: number;
  /** The pause that set `nextLookAt` (0 after a full look). */
  pauseMs: number;
  /** Empty looks in a row. */
  emptyLooks: number;
  /** Messages the current look asked for (a look sized to the free slots asks for less than a batch). */
  asked: number;
  /** A depth reading said it holds messages, and it has not been looked at since. */
  expected: boolean;
  /** Its last look took all it asked for: more are likely waiting. */
  filled: boolean;
}

/**
 * The SLA-aware selector, the default. It uses what the queues tell it:
 *
 * - **Recent emptiness.** A queue that gave fewer messages than asked is not looked at again for
 *   2% of its SLA (at most 1 s, at least 100 ms); each further empty look doubles that, up to 5% of
 *   the SLA. No re-check of a queue just seen empty, and few requests when idle. One that gave all
 *   it was asked for is due again at once. Pauses are jittered so dispatchers spread out.
 * - **Priority, and age of the oldest message against the SLA (dynamic priority).** Due queues
 *   are drawn by weight = priority × iterations × e^(growth × age / slaSeconds): the batch shares
 *   of ReducedLottery (which works a drawn queue for `iterations` batches) while every queue is on
 *   time, shifting to whichever falls behind. Age is an upper estimate of the oldest message's:
 *   the age the last full look reported plus the time since, or for a queue last seen drained, the
 *   time since that look. None is ever starved: every queue is due again within 5% of its SLA, a
 *   queue overdue by three pauses is looked at before the draw (a fresh one that was just worked,
 *   by three of its first pauses, while the top queue is on time), and a backlog's weight grows
 *   without bound.
 * - **Short commitments.** A look is a receive whose messages become the batch (as in
 *   ReducedLottery). A queue is worked for that one batch, then the choice is made again, so the
 *   top queue never waits behind a run of batches from a lower one. The top (highest-priority)
 *   queue is long-polled instead of probed: one request however long work takes to arrive, and
 *   one receive per selection too. While its last look filled what it asked (a backlog) and every
 *   other due queue is within its SLA, it goes before the draw (after any overdue queue).
 * - **Room.** A look asks for no more than would start within a moment ({@link Room.startableOf},
 *   as every receive of the loop does): what it takes starts at once, never waiting in the
 *   dispatcher behind long tasks while a higher queue's work waits in SQS.
 * - **Told of work.** Queues a depth reading found messages in ({@link QueueSelector.expect}: the
 *   scheduled invocation's) are looked at first, whatever their pause: the schedule woke the fleet
 *   for that work, and the invocation would otherwise draw the top queue and could end idle first.
 * - When nothing is due or everything due is empty, it long-polls the top queue until the next
 *   look is due (at least that queue's `longPollSeconds`, at most 20 s).
 *
 * Pure: time comes from the injected clock, draws and jitter from the injected random source.
 *
 * @example
 * ```ts
 * const selector = slaAware({ queues: config.queues, random: seededRandom(1), clock: systemClock, probes });
 * const { queue, messages, receives } = await selector.select(config.queues, { freeSlots: 10, slots: 10 });
 * ```
 */
export function slaAware<M>(env: SelectorEnv<M>, options: SlaAwareOptions = {}): QueueSelector<M> {
  const o = { ...SLA_AWARE_DEFAULTS, ...options };
  const states = new Map<string, QueueState>();
  const stateOf = (queue: string): QueueState => {
    let state = states.get(queue);
    if (!state) {
      state = {
        seenAt: env.clock.now(),
        backlogAgeMs: 0,
        nextLookAt: 0,
        pauseMs: 0,
        emptyLooks: 0,
        asked: Number.POSITIVE_INFINITY,
        expected: false,
        filled: false,
      };
      states.set(queue, state);
    }
    return state;
  };
  const byName = new Map(env.queues.map((q) => [q.name, q]));
  /** How the last selection weighed its candidates (the workers view reads them). */
  let lastWeights: SelectorWeights | undefined;

  /** The pause after a queue's first short look, unjittered. */
  const firstPause = (queue: QueueConfig) =>
    Math.max(o.lookBoundsMs[0], Math.min(queue.slaSeconds * 1000 * o.lookFraction, o.firstLookMaxMs));
  /** Pause before the next look at a queue that gave less than it was asked for. */
  const pauseFor = (queue: QueueConfig, emptyLooks: number) => {
    const sla = queue.slaSeconds * 1000;
    const [min, max] = o.lookBoundsMs;
    const first = firstPause(queue);
    const grown = first * 2 ** Math.min(20, Math.max(0, emptyLooks - 1));
    const pause = Math.max(min, Math.min(max, grown, Math.max(first, sla * o.maxLookFraction)));
    return pause * (1 + o.jitter * (2 * env.random() - 1));
  };

  const record = (queue: QueueConfig, received: number, oldestAgeMs: number) => {
    const state = stateOf(queue.name);
    const now = env.clock.now();
    const full = received >= Math.min(state.asked, queue.batchSize);
    state.seenAt = now;
    state.expected = false;
    state.filled = full && received > 0;
    state.backlogAgeMs = full ? oldestAgeMs : 0;
    state.emptyLooks = received === 0 ? state.emptyLooks + 1 : 0;
    state.pauseMs = full ? 0 : pauseFor(queue, state.emptyLooks);
    state.nextLookAt = now + state.pauseMs;
  };

  /** Estimated age of a queue's oldest message, over its SLA. */
  const urgency = (queue: QueueConfig, now: number) => {
    const state = stateOf(queue.name);
    return (state.backlogAgeMs + Math.max(0, now - state.seenAt)) / (queue.slaSeconds * 1000);
  };
  /** log(weight), so a long-starved queue never overflows. */
  const logWeight = (queue: QueueConfig, now: number) =>
    Math.log(queue.priority) + Math.log(queue.iterations) + o.growth * urgency(queue, now);

  return {
    name: 'sla-aware',
    async select(candidates, room?: Room): Promise<Selection<M>> {
      const now = env.clock.now();
      // The candidates carry the priority and SLA in force (an operator's override): the receives
      // the dispatcher reports are weighed by those too.
      for (const q of candidates) byName.set(q.name, q);
      lastWeights = { at: now, shares: shares(candidates, (q) => logWeight(q, now)) };
      const top = candidates.reduce((best, q) => (q.priority > best.priority ? q : best));
      const due = candidates.filter((q) => stateOf(q.name).nextLookAt <= now || stateOf(q.name).expected);
      const topOnTime = urgency(top, now) < o.recheckWhileTopUnderAge;
      const overdue = (q: QueueConfig) => {
        const state = stateOf(q.name);
        if (q === top) return false;
        if (state.pauseMs > 0) return now - state.nextLookAt > o.overdueAfter * state.pauseMs;
        return topOnTime && urgency(q, now) < o.recheckUnderAge && now - state.nextLookAt > o.overdueAfter * firstPause(q);
      };
      const drawn = drawOrder(due, (q) => logWeight(q, now), env.random);
      // The top queue with a backlog (its last look filled what it asked) goes before the draw while
      // every other due queue is within its SLA: its work then waits only for a slot, not for the
      // draw (a burst's high-priority p99 was 2.4 s, 1.2 s this way), and the others lose nothing
      // they were promised. Once one falls behind its SLA, the draw by weight decides again.
      const topBacklog = (q: QueueConfig) =>
        q === top && stateOf(q.name).filled && due.every((other) => other === top || urgency(other, now) < 1);
      // Overdue queues go first even before the top queue's backlog: that backlog is what kept them waiting.
      const first = (q: QueueConfig) => stateOf(q.name).expected || topBacklog(q);
      const order = [
        ...drawn.filter(overdue),
        ...drawn.filter((q) => !overdue(q) && first(q)),
        ...drawn.filter((q) => !overdue(q) && !first(q)),
      ];
      for (const queue of order) {
        if (queue === top) {
          // Waiting on the top queue costs one request however long work takes to arrive. One receive,
          // then the choice again: a run of `iterations` receives each waited for room, and a lower
          // queue that came due meanwhile waited too (steady 0.7's low-priority max).
          return { queue, messages: [], waitSeconds: queue.longPollSeconds, receives: 1 };
        }
        const state = stateOf(queue.name);
        state.asked = receiveSizeIn(room, queue);
        const found: Probe<M> = await env.probes.receive(queue, state.asked);
        // The batch's age reaches the selector through `observe`, which the dispatcher calls with it.
        record(queue, found.messages.length, 0);
        if (!found.empty) return { queue, messages: found.messages, waitSeconds: queue.longPollSeconds, receives: 1 };
        state.asked = Number.POSITIVE_INFINITY;
      }
      // Nothing to take now: wait on the top queue until another look is due.
      const after = env.clock.now();
      const nextLook = Math.min(...candidates.filter((q) => q !== top).map((q) => stateOf(q.name).nextLookAt - after));
      const waitSeconds = Math.max(top.longPollSeconds, Math.min(MAX_WAIT_SECONDS, Math.floor(nextLook / 1000)));
      return { queue: top, messages: [], waitSeconds, receives: 1 };
    },
    weights: () => lastWeights,
    expect(queues: readonly string[]) {
      for (const name of queues) if (byName.has(name)) stateOf(name).expected = true;
    },
    observe(observation: ReceiveObservation) {
      const queue = byName.get(observation.queue);
      if (!queue) return;
      record(queue, observation.received, observation.oldestAgeMs);
      stateOf(queue.name).asked = Number.POSITIVE_INFINITY;
    },
  };
}

/** Each queue's share of the summed weights, from weights given as logarithms (scaled to the heaviest, so none overflows). */
function shares(queues: readonly QueueConfig[], logWeight: (q: QueueConfig) => number): Record<string, number> {
  const logs = queues.map(logWeight);
  const heaviest = Math.max(...logs);
  const raw = logs.map((l) => Math.exp(l - heaviest));
  const total = raw.reduce((a, w) => a + w, 0);
  return Object.fromEntries(queues.map((q, i) => [q.name, (raw[i] as number) / total]));
}

/**
 * The queues in the order successive weighted draws without replacement pick them. Weights come
 * as logarithms and are scaled to the heaviest, so huge weights neither overflow nor swamp the sum.
 */
function drawOrder(queues: readonly QueueConfig[], logWeight: (q: QueueConfig) => number, random: () => number): QueueConfig[] {
  const logs = queues.map(logWeight);
  const heaviest = Math.max(...logs);
  const pool = queues.map((queue, i) => ({ queue, weight: Math.exp((logs[i] as number) - heaviest) }));
  const order: QueueConfig[] = [];
  while (pool.length > 0) {
    const total = pool.reduce((a, p) => a + p.weight, 0);
    let ticket = random() * total;
    let index = pool.length - 1;
    for (let i = 0; i < pool.length; i++) {
      ticket -= (pool[i] as { weight: number }).weight;
      if (ticket < 0) {
        index = i;
        break;
      }
    }
    order.push((pool.splice(index, 1)[0] as { queue: QueueConfig }).queue);
  }
  return order;
}
