/**
 * Publishing an `ordered` task's jobs (lib/settle/key-order.ts): numbered from their key's counter,
 * then either sent (the job whose turn it is, or may soon be) or parked in the jobs table in their
 * key's line — a job numbered after its key's turn would only be received to be parked, so it is
 * parked here and sent by the move that gives it its turn. A key's publish of many jobs costs its
 * queue one message, not many: the line, not the queue, holds the rest.
 */
import { MessageTooLargeError } from '../errors';
import { bodyBytes } from '../layout/sqs-limits';
import { MAX_PARKED_BODY_BYTES } from '../policy/due-times';
import { type QueueUrls, silentLogger } from '../ports';
import { moveOrder, orderTag, turnDueAt } from '../settle/key-order';
import type { KeyOrder } from '../track/job-stores';
import { MAX_BODY_BYTES, withSeq } from '../wire/envelope';
import { type Prepared, refOf } from './prepare';
import type { PublishContext } from './publish-context';

/** Items grouped by task and key, in item order. */
function byKey(items: readonly Prepared[]): Prepared[][] {
  const groups = new Map<string, Prepared[]>();
  for (const p of items) groups.set(`${p.task} ${p.key ?? ''}`, [...(groups.get(`${p.task} ${p.key ?? ''}`) ?? []), p]);
  return [...groups.values()];
}

/**
 * The items of `ordered` tasks take their key's next numbers, one write per key for the batch's
 * items of it (in item order), and carry them in their envelopes (`seq`). Taken before anything is
 * sent or parked: a number whose job is neither is a gap its key's line skips after a grace.
 */
export async function numberOrdered(ctx: PublishContext, prepared: readonly Prepared[], now: number): Promise<Prepared[]> {
  const ordered = prepared.filter((p) => p.ordered);
  if (ordered.length === 0) return [...prepared];
  const jobs = ctx.jobStore();
  const numbers = new Map<Prepared, number>();
  await Promise.all(
    byKey(ordered).map(async (items) => {
      const [first] = items;
      if (!first) return;
      const last = await jobs.takeNumbers(first.task, first.key ?? '', items.length, now);
      for (const [i, p] of items.entries()) numbers.set(p, last - items.length + 1 + i);
    }),
  );
  return prepared.map((p) => {
    const seq = numbers.get(p);
    if (seq === undefined) return p;
    const body = withSeq(p.entry.body, seq);
    const bytes = bodyBytes(body);
    if (bytes > MAX_BODY_BYTES) throw new MessageTooLargeError(p.task, bytes, MAX_BODY_BYTES);
    return { ...p, seq, entry: { ...p.entry, body }, bytes };
  });
}

/**
 * Parks the numbered items after their key's turn (one read of each key's order), each tagged in
 * its key's line at its number, then parked `waiting-key` with its body and a due time (should no
 * move send it). Resolves with those parked and those to send: the turn's job, and any whose park
 * did not land (a body too large to park, the table refusing): the dispatcher parks those.
 */
export async function parkBeforeTurn(
  ctx: PublishContext,
  prepared: readonly Prepared[],
  now: number,
): Promise<{ parked: Prepared[]; toSend: Prepared[] }> {
  const numbered = prepared.filter((p) => p.seq !== undefined && p.ordered);
  if (numbered.length === 0) return { parked: [], toSend: [...prepared] };
  const jobs = ctx.jobStore();
  const parked: Prepared[] = [];
  await Promise.all(
    byKey(numbered).map(async (items) => {
      const [first] = items;
      if (!first) return;
      let order: KeyOrder;
      try {
        order = await jobs.keyOrder(first.task, first.key ?? '');
      } catch {
        return; // Sent, all of them: the dispatcher parks what is not its turn.
      }
      for (const p of items) {
        const seq = p.seq as number;
        if (seq <= order.next || bodyBytes(p.entry.body) > MAX_PARKED_BODY_BYTES) continue;
        try {
          // Parked, then tagged: a publisher that dies between the two leaves a parked job that comes
          // back by its due time (its number skipped meanwhile, it runs late), never a tag with no job
          // behind it, which its key's line would wait for as a job still in its queue.
          const outcome = await jobs.park({
            ...refOf(p, ctx.version, now),
            runAt: turnDueAt(now, seq - order.next, p.ordered?.turnMs ?? 0),
            body: p.entry.body,
            ...(p.entry.attributes && Object.keys(p.entry.attributes).length > 0 ? { attributes: p.entry.attributes } : {}),
            workerId: 'publisher',
            now,
            waitsForTurn: order.next,
          });
          if (outcome.outcome !== 'parked') continue;
          await jobs.tagJob(p.jobId, [orderTag(p.task, p.key)], seq);
          parked.push(p);
        } catch {
          // Sent instead: the dispatcher that receives it parks it.
        }
      }
    }),
  );
  return { parked, toSend: prepared.filter((p) => !parked.includes(p)) };
}

/**
 * After the parks: a turn that came to a parked job meanwhile (the job before it ended, and its
 * move read the line before the park) is taken now — one read of the key's order says whether it
 * came, and the move sends the job. Best effort: its due time sends it otherwise.
 */
export async function takeTurnsCome(ctx: PublishContext, parked: readonly Prepared[], urls: QueueUrls): Promise<void> {
  if (parked.length === 0) return;
  const jobs = ctx.jobStore();
  // A publisher has no log of its own: a move that fails here is made by the key's next end or arrival.
  const deps = { jobs, queues: ctx.queues, urls, clock: ctx.clock, logger: silentLogger };
  await Promise.allSettled(
    byKey(parked).map(async (items) => {
      const [first] = items;
      if (!first) return;
      const order = await jobs.keyOrder(first.task, first.key ?? '');
      const rule = first.ordered?.rule;
      if (rule && items.some((p) => p.seq === order.next)) await moveOrder(deps, first.task, first.key, rule);
    }),
  );
}

/**
 * The sent items of `ordered` tasks join their key's line (the tag index, at their number): its
 * check for gaps then knows the job was sent, however long it waits in its queue. After the send,
 * so a line never holds a number whose message was not sent. Best effort: the dispatcher tags the
 * job again before it runs it.
 */
export async function tagOrdered(
  ctx: PublishContext,
  prepared: readonly Prepared[],
  sent: ReadonlyArray<{ readonly index: number }>,
): Promise<void> {
  const numbered = prepared.filter((p) => p.seq !== undefined && sent.some((s) => s.index === p.index));
  if (numbered.length === 0) return;
  const jobs = ctx.jobStore();
  await Promise.allSettled(numbered.map((p) => jobs.tagJob(p.jobId, [orderTag(p.task, p.key)], p.seq as number)));
}
