/**
 * A batch's jobs of `ordered` tasks (lib/settle/key-order.ts): the job whose turn it is in its key
 * runs (tagged in the key's line first, so no gap check can pass it while it runs); a job numbered
 * before the key's turn runs too (a copy of an ended job, which its claim stops, or one that came
 * after its number was skipped); a job numbered after it is parked in the key's line
 * (`waiting-key`), its message deleted, and sent when its turn comes. A message without a number
 * (another SDK's, Celery's) is numbered here, once, and sent again with its number.
 */
import type { QueueConfig } from '../config/app-config';
import { describe } from '../errors';
import { messageBytes, SQS_MESSAGE_LIMIT_BYTES } from '../layout/sqs-limits';
import { decideArchive } from '../settle/decisions';
import { moveOrder, orderTag, turnDueAt, turnMsOf } from '../settle/key-order';
import { flowPorts } from '../settle/records';
import type { BatchState } from '../settle/settle';
import type { OrderWindow } from '../tasks/task';
import type { KeyOrder } from '../track/job-stores';
import { pinEnvelope, withSeq } from '../wire/envelope';
import { CLAIM_RETRY_SECONDS } from './claim';

/** How long a key's line may stand still before a job arriving after its turn looks at it. */
const STILL_LINE_MS = 10_000;

import type { DispatcherDeps, Planned } from './dispatcher-deps';
import { parkJobInLine } from './key-lines';

/** Whether a planned job is an `ordered` task's, and its queue keeps the order. */
export function isOrdered(deps: DispatcherDeps, queue: QueueConfig, p: Planned): boolean {
  return p.def.ordered !== undefined && queue.tracking === 'full' && deps.tracking?.jobs !== undefined;
}

/** Resolves with the batch's jobs that may run now, in message order; decides the rest. */
export async function holdForOrder(
  deps: DispatcherDeps,
  queue: QueueConfig,
  planned: readonly Planned[],
  state: BatchState,
): Promise<Planned[]> {
  const ordered = planned.filter((p) => isOrdered(deps, queue, p));
  const byKey = new Map<string, Planned[]>();
  for (const p of ordered) byKey.set(`${p.def.name} ${p.job.key ?? ''}`, [...(byKey.get(`${p.def.name} ${p.job.key ?? ''}`) ?? []), p]);
  const held = new Set<Planned>();
  await Promise.all(
    [...byKey.values()].map(async (group) => {
      for (const p of await holdKey(deps, queue, group, state)) held.add(p);
    }),
  );
  return planned.filter((p) => !held.has(p));
}

/** One key's jobs of the batch: resolves with those it held back (numbered and sent again, parked, or handed back). */
async function holdKey(deps: DispatcherDeps, queue: QueueConfig, group: readonly Planned[], state: BatchState): Promise<Planned[]> {
  const jobs = deps.tracking?.jobs;
  const ports = flowPorts(deps);
  const [first] = group;
  if (!jobs || !ports || !first) return [];
  const { def } = first;
  const task = def.name;
  const key = first.job.key;
  const rule = def.ordered as OrderWindow;
  const tag = orderTag(task, key);
  try {
    const unnumbered = group.filter((p) => p.job.seq === undefined);
    if (unnumbered.length > 0) await numberAndResend(deps, queue, unnumbered, state);
    const numbered = group.filter((p) => p.job.seq !== undefined).sort((a, b) => (a.job.seq as number) - (b.job.seq as number));
    if (numbered.length === 0) return [...unnumbered];
    let order: KeyOrder | undefined = await jobs.keyOrder(task, key ?? '');
    // Every job after the turn, and the line has not moved for a while: it may be behind (a move
    // lost to a crash, a gap) — moved, then looked at again. A line that moves is not looked at
    // on every arrival: the one whose turn comes is sent by the move that gives it.
    const now = deps.clock.now();
    if ((numbered[0]?.job.seq as number) > order.next && now - (order.movedAt ?? 0) >= STILL_LINE_MS)
      order = await moveOrder(ports, task, key, rule);
    if (!order) return [...group];
    const next = order.next;
    const runnable = numbered.filter((p) => (p.job.seq as number) <= next);
    const later = numbered.filter((p) => (p.job.seq as number) > next);
    // Tagged before it runs: a gap check finds it in the line, and never skips it while it runs.
    await Promise.all(runnable.map((p) => jobs.tagJob(p.job.id, [tag], p.job.seq as number)));
    if (later.length > 0) {
      await parkLater(deps, queue, later, next, state);
      // A turn that came while they were parked (the job before them ended meanwhile, and its move
      // read the line before they were in it) is taken now: one read says whether it came.
      const after = await jobs.keyOrder(task, key ?? '');
      if (later.some((p) => p.job.seq === after.next)) await moveOrder(ports, task, key, rule);
    }
    return [...unnumbered, ...later];
  } catch (error) {
    deps.logger.error('an ordered key could not be read; its jobs come back', { task, key, error: describe(error) });
    // Those already decided (numbered and sent again, parked) keep their decision.
    for (const p of group.filter((g) => !state.reports.has(g.message.messageId))) {
      state.decide(
        { kind: 'visibility', message: p.message, seconds: CLAIM_RETRY_SECONDS },
        { messageId: p.message.messageId, jobId: p.job.id, task, outcome: 'deferred', attempt: 0 },
      );
    }
    return [...group];
  }
}

/**
 * Messages of an ordered task that carry no number (published by another SDK): each takes the
 * key's next numbers (one write for the batch's jobs of the key, in message order) and is sent
 * again with its number, its message deleted. A copy of the same job numbered twice (both copies
 * sent again) holds two numbers: the second is a duplicate of the first when its turn comes.
 */
async function numberAndResend(deps: DispatcherDeps, queue: QueueConfig, unnumbered: readonly Planned[], state: BatchState): Promise<void> {
  const jobs = deps.tracking?.jobs;
  const [first] = unnumbered;
  if (!jobs || !first) return;
  const last = await jobs.takeNumbers(first.def.name, first.job.key ?? '', unnumbered.length, deps.clock.now());
  for (const [i, p] of unnumbered.entries()) {
    const seq = last - unnumbered.length + 1 + i;
    const copy = {
      id: p.message.messageId,
      body: withSeq(pinEnvelope(p.message.body, p.job), seq),
      ...(Object.keys(p.message.attributes).length > 0 ? { attributes: p.message.attributes } : {}),
    };
    if (messageBytes(copy.body, copy.attributes) > SQS_MESSAGE_LIMIT_BYTES) {
      // At SQS's limit already: with its number it could not be sent again (its number is a gap, skipped after the grace).
      decideArchive(deps, queue, state, p.message, p.job, 'malformed', {
        type: 'EnvelopeError',
        code: 'bad-seq',
        message: `no seq, and numbered it would be ${messageBytes(copy.body, copy.attributes)} bytes, over SQS's ${SQS_MESSAGE_LIMIT_BYTES}: an ordered task's message from another SDK must leave room for its number`,
      });
      return;
    }
    state.decide(
      { kind: 'requeue', message: p.message, copy },
      { messageId: p.message.messageId, jobId: p.job.id, task: p.def.name, outcome: 'deferred', attempt: 0, requeued: true },
    );
  }
}

/**
 * Parks the jobs numbered after their key's turn in its line, each with its body (number pinned)
 * and a due time — the latest it waits should no move reach it: a gap's grace, growing with its
 * place so a long line does not come back at once. Those that cannot be parked (a body too large,
 * a record further along) are handed back.
 */
async function parkLater(
  deps: DispatcherDeps,
  queue: QueueConfig,
  later: readonly Planned[],
  next: number,
  state: BatchState,
): Promise<void> {
  const now = deps.clock.now();
  await Promise.all(
    later.map(async (p) => {
      const seq = p.job.seq as number;
      const runAt = turnDueAt(now, seq - next, turnMsOf(p.def.timeLimitSeconds, deps.config.dispatcher));
      const at = {
        tag: orderTag(p.def.name, p.job.key),
        place: seq,
        runAt,
        body: withSeq(pinEnvelope(p.message.body, p.job), seq),
        as: { waitsForTurn: next },
      };
      if ((await parkJobInLine(deps, queue, state, p, at)) === 'decided') return;
      state.decide(
        { kind: 'visibility', message: p.message, seconds: CLAIM_RETRY_SECONDS },
        { messageId: p.message.messageId, jobId: p.job.id, task: p.def.name, outcome: 'deferred', attempt: 0 },
      );
    }),
  );
}
