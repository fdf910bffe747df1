/**
 * Fleet-wide limits at a batch's start: the queue's and each task's `limits` (concurrency slots and
 * rate tokens, lib/track/fleet-limits.ts), and a task's limits per key (lib/dispatch/key-lines.ts).
 */
import { randomBytes } from 'node:crypto';
import type { QueueConfig } from '../config/app-config';
import { isPerKey } from '../config/limit-config';
import { taskNeedMs } from '../deadlines';
import { describe } from '../errors';
import { MAX_VISIBILITY_SECONDS } from '../layout/sqs-limits';
import { decideHandBack } from '../settle/decisions';
import type { BatchState } from '../settle/settle';
import type { TaskDefinition } from '../tasks/task';
import { burstOf, keyLimitKey, type LimitKey, queueLimitKey, taskLimitKey } from '../track/fleet-limits';
import type { DecodedJob } from '../wire/envelope';
import type { DispatcherDeps, Planned, RunOptions } from './dispatcher-deps';
import { type KeyLine, parkInLine, releaseKeySlots } from './key-lines';

/**
 * How far ahead a batch books rate tokens (lib/track/fleet-limits.ts `aheadMs`): its jobs hold their slots
 * until their tokens are earned, at most this long. Without it a batch takes only what the bucket
 * holds (`burst`), so a fleet starts `burst` jobs per receive, not `perSecond` a second, and a busy
 * machine's slower receive loop lowered the rate its limit allows.
 */
const RATE_BOOKING_MS = 1_000;

/**
 * Fleet-wide limits (the queue's and each task's `limits`): reserves concurrency slots and rate
 * tokens for the batch's jobs, one reservation per key per batch; the jobs that did not get them
 * are deferred — handed back with jitter sized to when room is expected, no claim, no attempt
 * used (at their last receives a fresh copy replaces them, so waiting never sends a job to the
 * DLQ). A job over its key's concurrency (`limits.per: 'key'`) is parked in its key's line instead
 * (lib/dispatch/key-lines.ts). `release` gives the slots back once the batch's tasks have ended, and
 * moves the lines of the keys it held by as many.
 */
export async function admit(
  deps: DispatcherDeps,
  queue: QueueConfig,
  due: readonly Planned[],
  state: BatchState,
  options: RunOptions,
): Promise<{ runnable: Planned[]; release: () => Promise<void> }> {
  const store = deps.tracking?.limits;
  const keyed = due.map((p) => ({ p, keys: limitKeys(queue, p.def, p.job) }));
  if (!store || keyed.every((k) => k.keys.length === 0)) return { runnable: [...due], release: async () => {} };
  const now = deps.clock.now();
  const holder = `${deps.workerId}:${randomBytes(6).toString('base64url')}`;
  const longest = Math.max(...due.map((p) => taskNeedMs(p.def.timeLimitSeconds, deps.config.dispatcher.killGraceMs)));
  // A rate token booked ahead starts its job up to that much later.
  const latestStartMs = keyed.some((k) => k.keys.some((x) => x.limits.perSecond !== undefined)) ? RATE_BOOKING_MS : 0;
  // The slots are held until here, by a holder that dies too: its tasks could not have run longer
  // (one that would start too late to end by then does not start: lib/dispatch/job.ts).
  const until = Math.min(options.deadline, now + latestStartMs + longest) + deps.config.dispatcher.settleMarginMs;
  /** Slots this batch holds, per limit key. */
  const held = new Map<string, number>();
  /** Jobs over a per-key concurrency: parked in their key's line rather than handed back. */
  const overLines = new Map<string, { line: KeyLine; over: Planned[] }>();
  const waitMs = new Map<Planned, number>();
  /** Runnable jobs whose rate token was booked ahead: they start when it is earned. */
  const startAt = new Map<Planned, number>();
  let admitted = keyed;
  const keys = [...new Map(keyed.flatMap((k) => k.keys).map((k) => [k.key, k])).values()];
  try {
    for (const { key, limits, line } of keys) {
      const members = admitted.filter((k) => k.keys.some((x) => x.key === key));
      let room = members.length;
      let retryAfterMs = 0;
      if (limits.concurrency !== undefined) {
        room = await store.acquire({ key, limit: limits.concurrency, holder, want: members.length, now, until });
        if (room > 0) held.set(key, room);
        if (line && room < members.length) overLines.set(key, { line, over: members.slice(room).map((k) => k.p) });
      }
      if (limits.perSecond !== undefined && room > 0) {
        const taken = await store.take({
          key,
          perSecond: limits.perSecond,
          burst: burstOf(limits),
          want: room,
          now,
          aheadMs: RATE_BOOKING_MS,
        });
        room = taken.granted;
        retryAfterMs = taken.retryAfterMs;
        taken.startAfterMs.forEach((ms, i) => {
          const p = (members[i] as (typeof members)[number]).p;
          startAt.set(p, Math.max(startAt.get(p) ?? now, now + ms));
        });
      }
      // Over a per-key concurrency: parked below, not handed back (nor counted in the rate's line).
      const lined = overLines.get(key)?.over ?? [];
      const over = members.slice(room).filter((k) => !lined.includes(k.p));
      // Out of tokens: each waiting job comes back at its turn in the key's line, behind the jobs
      // of every dispatcher already waiting. Out of slots: room comes when a running job of the key
      // ends, within its time limit, spread over up to 3 s so they do not all come back at once.
      const turns =
        limits.perSecond !== undefined && retryAfterMs > 0 && over.length > 0
          ? await store.waitInLine({
              key,
              perSecond: limits.perSecond,
              burst: burstOf(limits),
              want: over.length,
              now,
              aheadMs: RATE_BOOKING_MS,
            })
          : undefined;
      over.forEach((k, i) => {
        const expected = turns?.[i] ?? outOfSlotsMs(deps, k.p);
        waitMs.set(k.p, Math.max(waitMs.get(k.p) ?? 0, expected));
      });
      admitted = admitted.filter((k) => !over.includes(k) && !lined.includes(k.p));
    }
  } catch (error) {
    // The limits could not be read: hold the work back rather than run it past them.
    deps.logger.error('limits could not be reserved; the batch waits', { queue: queue.name, error: describe(error) });
    for (const k of keyed) if (k.keys.length > 0 && !waitMs.has(k.p)) waitMs.set(k.p, 10_000);
    admitted = keyed.filter((k) => k.keys.length === 0);
    overLines.clear();
  }
  // Parked in their key's line; the ones that could not be are handed back as any limited job.
  for (const { line, over } of overLines.values()) {
    for (const back of await parkInLine(deps, queue, line, over, state)) waitMs.set(back.p, back.waitMs ?? outOfSlotsMs(deps, back.p));
  }
  for (const { p } of keyed) {
    const wait = waitMs.get(p);
    if (wait === undefined || admitted.some((k) => k.p === p)) continue;
    const seconds = Math.min(MAX_VISIBILITY_SECONDS, Math.max(1, Math.ceil((wait + deps.random() * 500) / 1000)));
    decideHandBack(
      deps,
      { queue, mode: 'full', state, message: p.message, job: p.job },
      { kind: 'visibility', seconds },
      {
        messageId: p.message.messageId,
        jobId: p.job.id,
        task: p.def.name,
        outcome: 'deferred',
        limited: true,
        attempt: 0,
      },
    );
  }
  const lines = new Map(keys.flatMap((k) => (k.line ? [[k.key, k.line] as const] : [])));
  const release = async () => {
    await Promise.all(
      [...held].map(([key, slots]) => {
        const line = lines.get(key);
        if (line) return releaseKeySlots(deps, store, line, holder, slots);
        return store.release(key, holder, deps.clock.now()).then(
          () => undefined,
          (error: unknown) => {
            deps.logger.warn('limit slots not released; they come back when their lease ends', { key, error: describe(error) });
          },
        );
      }),
    );
  };
  const slotted = new Set(keys.filter((k) => held.has(k.key)).map((k) => k.key));
  const runnable = admitted.map(({ p, keys: of }) => {
    const at = startAt.get(p);
    const booked = at !== undefined && at > now;
    const slots = of.some((k) => slotted.has(k.key));
    if (!booked && !slots) return p;
    return { ...p, ...(booked ? { startAt: at } : {}), ...(slots ? { slotsUntil: until } : {}) };
  });
  return { runnable, release };
}

/** Out of slots: room comes when a running job of the key ends, within its time limit, spread over up to 3 s. */
function outOfSlotsMs(deps: Pick<DispatcherDeps, 'random'>, p: Planned): number {
  return 1000 + deps.random() * Math.min(3_000, p.def.timeLimitSeconds * 1000);
}

/** A limit key of the batch, and the key line it parks jobs in when it is a per-key concurrency. */
type BatchLimitKey = LimitKey & { readonly line?: KeyLine };

/** The limits a job is under: its queue's, then its key's (`per: 'key'`) and its task's total, or its task's. */
function limitKeys(queue: QueueConfig, def: TaskDefinition, job: DecodedJob): BatchLimitKey[] {
  const keys: BatchLimitKey[] = queue.limits ? [{ key: queueLimitKey(queue.name), limits: queue.limits }] : [];
  const limits = def.limits;
  if (!limits) return keys;
  if (!isPerKey(limits)) return [...keys, { key: taskLimitKey(def.name), limits }];
  const limitKey = keyLimitKey(def.name, job.key);
  const line = limits.concurrency !== undefined ? { line: { limitKey, def, key: job.key, limits } } : {};
  return [...keys, { key: limitKey, limits, ...line }, ...(limits.total ? [{ key: taskLimitKey(def.name), limits: limits.total }] : [])];
}
