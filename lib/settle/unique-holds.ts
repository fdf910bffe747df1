/**
 * Holding a task's key under its `unique` rule, for the publisher and the dispatcher alike: one
 * conditional write takes the key; when another job holds it, that job's record decides
 * (lib/policy/unique-rules.ts) whether this one joins it or takes the key over, the takeover
 * conditioned on the very hold that was read, so two takers of one ended hold cannot both win.
 */
import { holdVerdict } from '../policy/unique-rules';
import type { UniqueWindow } from '../tasks/task';
import type { UniqueHold, UniqueTake } from '../track/job-record';
import type { UniqueStore } from '../track/job-stores';

/** `holds`: the job holds the key (or is no duplicate of its holder) and goes on. `joined`: it joins `holder`. */
export type UniqueOutcome = { readonly outcome: 'holds' } | { readonly outcome: 'joined'; readonly holder: string };

/** Rounds of write, read and takeover before a job joins whoever holds the key then. */
const HOLD_TRIES = 5;

/**
 * Takes the key of `job` (published at `publishedAt`) for its window, or names the job it joins.
 * Costs one write when the key is free; one refused write and one read of the holder's record when
 * it is held; one more write to take over an ended holder.
 */
export async function holdUniqueKey(
  store: UniqueStore,
  job: { readonly task: string; readonly key: string; readonly jobId: string; readonly publishedAt: number },
  rule: UniqueWindow,
  now: number,
): Promise<UniqueOutcome> {
  const take: UniqueTake = { ...job, from: job.publishedAt, until: job.publishedAt + rule.forSeconds * 1000, now };
  let over: UniqueHold | undefined;
  let last: UniqueHold | undefined;
  for (let round = 0; round < HOLD_TRIES; round++) {
    const write = await store.holdKey(take, over);
    if (write.landed) return { outcome: 'holds' };
    over = undefined;
    if (!write.hold) continue;
    last = write.hold;
    const verdict = holdVerdict(take, write.hold, await store.get(write.hold.holder), rule.while);
    if (verdict === 'join') return { outcome: 'joined', holder: write.hold.holder };
    if (verdict === 'not-a-duplicate') return { outcome: 'holds' };
    over = write.hold;
  }
  // The key changed hands at every round: join whoever held it last.
  return last ? { outcome: 'joined', holder: last.holder } : { outcome: 'holds' };
}
