/**
 * Debouncing a task's key under its `debounce` rule, for the publisher and the dispatcher alike. A
 * publish is one write to the key's cycle (lib/track/job-stores.ts `DebounceStore`): it opens the
 * cycle with its own job, or joins the open one, whose job then runs with its payload. A dispatcher
 * holding the cycle's job once due keeps the cycle's last body under the job's id, then closes the
 * cycle, in that order: a dispatcher lost between the two finds the body when the message comes
 * back, and a publish landing before the close is the one run, one after it opens the next cycle.
 */
import { KeyContentionError } from '../errors';
import { type Arrival, arrivalOf, cycleDueAt, DEBOUNCE_ABANDONED_MS } from '../policy/debounce-rules';
import type { DebounceWindow } from '../tasks/task';
import type { DebounceCycle } from '../track/job-record';
import type { DebounceStore } from '../track/job-stores';

/** `started`: the publish opened the key's cycle, and its own job (`jobId`) is to be sent. `joined`: `jobId` is the open cycle's job. */
export interface DebounceOutcome {
  readonly outcome: 'started' | 'joined';
  readonly jobId: string;
  /** When the cycle's job is due, as this publish left it. */
  readonly dueAt: number;
}

/** Rounds of write and takeover (publishing), or of read, keep and close (closing), before giving up. */
const CYCLE_TRIES = 5;

/**
 * Publishes `job` (its envelope `body`) into its key's cycle at `now`. One write when no cycle is
 * open or the open one is live; over a cycle abandoned by its publisher (no message came for it, see
 * `DEBOUNCE_ABANDONED_MS`), one refused write and one more to open a fresh cycle over it.
 */
export async function publishDebounced(
  store: DebounceStore,
  job: { readonly task: string; readonly key: string; readonly jobId: string; readonly body: string },
  rule: DebounceWindow,
  now: number,
): Promise<DebounceOutcome> {
  const publish = {
    ...job,
    now,
    dueAt: now + rule.periodSeconds * 1000,
    maxDueAt: now + rule.maxWaitSeconds * 1000,
    abandonedBefore: now - DEBOUNCE_ABANDONED_MS,
  };
  let over: Pick<DebounceCycle, 'pending' | 'seq'> | undefined;
  for (let round = 0; round < CYCLE_TRIES; round++) {
    const write = await store.debounce(publish, over);
    if (write.landed) return { outcome: write.started ? 'started' : 'joined', jobId: write.cycle.pending, dueAt: cycleDueAt(write.cycle) };
    // Abandoned: opened afresh over it next round. Gone or taken over meanwhile: written plainly again.
    over = write.cycle && !over ? { pending: write.cycle.pending, seq: write.cycle.seq } : undefined;
  }
  throw new KeyContentionError(job.task, job.key, CYCLE_TRIES);
}

/** What the dispatcher does with the message of a debounced task's keyed job (lib/policy/debounce-rules.ts {@link Arrival}, once closed). */
export type DueJob = Exclude<Arrival, { readonly kind: 'close' }>;

/**
 * Closes the cycle of job `jobId` when it is due, answering the body it runs with; or says to wait
 * (a publish put it off), to run a cycle closed before, or to count the message as a publish. A
 * publish joining between the read and the close makes the close fail and the cycle is read again.
 * Costs one read when the job waits; two reads when its cycle was closed before; one read and two
 * writes to close it.
 */
export async function dueJob(store: DebounceStore, task: string, key: string, jobId: string, now: number): Promise<DueJob> {
  for (let round = 0; round < CYCLE_TRIES; round++) {
    const cycle = await store.debounceCycle(task, key);
    const kept = cycle?.pending === jobId ? undefined : await store.debouncedBody(jobId);
    const arrival = arrivalOf(jobId, cycle, kept, now);
    if (arrival.kind !== 'close') return arrival;
    // Kept first: should this dispatcher be lost before the close lands, the message comes back to it.
    if ((await store.keepDebouncedBody(arrival.cycle, now)) && (await store.closeDebounce(task, key, arrival.cycle))) {
      return { kind: 'run', body: arrival.cycle.body };
    }
  }
  // Publishes joined at every round: the message looks again in a second.
  return { kind: 'wait', dueAt: now + 1000 };
}
