/**
 * A message is archived once on a tracked queue, however many dispatchers receive copies of it: the
 * archive fence on its job record (lib/policy/archive-fences.ts, lib/settle/settle.ts). Copies
 * come back here the way they do when a batch outlives its messages' visibility (a doorbell
 * started late by a cold start): the virtual clock moves past the visibility while the batch runs.
 */
import { processBatch } from '../../lib/dispatch/batch';
import { TaskSlots } from '../../lib/dispatch/slots';
import { batchItemFailures } from '../../lib/invocation/doorbell';
import type { QueueClient, ReceivedMessage } from '../../lib/ports';
import type { BatchReport } from '../../lib/settle/report';
import type { TaskOptions } from '../../lib/tasks/task';
import { readArchiveRecord } from '../../lib/wire/archive-record';
import { encodeEnvelope } from '../../lib/wire/envelope';
import { type World, world } from '../helpers/world';

const VISIBILITY_MS = 30_000;
const MALFORMED = '{"task":';

function trackedWorld(tasks: TaskOptions[]): World {
  return world(
    tasks,
    { queues: [{ name: 'urgent', priority: 90, visibilityTimeoutSeconds: VISIBILITY_MS / 1000, longPollSeconds: 0, maxReceiveCount: 10 }] },
    { tracked: true },
  );
}

const urgent = (w: World) => w.urls.queues.urgent as string;
const receive = (w: World) => w.sqs.receive(urgent(w), { maxMessages: 10, waitSeconds: 0, visibilityTimeoutSeconds: VISIBILITY_MS / 1000 });
const archived = (w: World) => w.sqs.peek(w.urls.archive).map((m) => readArchiveRecord(m.attributes));
const outcomeOf = (report: BatchReport | undefined, messageId: string) => report?.jobs.find((j) => j.messageId === messageId)?.outcome;

/**
 * One batch through the dispatcher, its invocation ending at `deadline`. As a doorbell, the
 * deletes are left to the trigger, which deletes (with this batch's receipts) what it did not keep.
 */
async function dispatch(
  w: World,
  batch: readonly ReceivedMessage[],
  deadline: number,
  { doorbell = false, deps = w.deps }: { doorbell?: boolean; deps?: World['deps'] } = {},
): Promise<BatchReport> {
  const queue = w.config.queues[0] as World['config']['queues'][number];
  const report = await processBatch(deps, queue, batch, { deadline }, new TaskSlots(4, () => w.clock.now()), { triggerDeletes: doorbell });
  if (doorbell) {
    const kept = new Set(
      batchItemFailures(
        [report],
        batch.map((m) => m.messageId),
      ).map((f) => f.itemIdentifier),
    );
    const deletes = batch.filter((m) => !kept.has(m.messageId)).map((m) => ({ id: m.messageId, receiptHandle: m.receiptHandle }));
    if (deletes.length > 0) await w.sqs.deleteBatch(urgent(w), deletes);
  }
  return report;
}

/** Lets the batch's pending decisions and their writes land. */
const settleTicks = async () => {
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
};

/**
 * A job that fails for good (`failing`, id job-f) and a slow one, in one batch: once the failing
 * job is archived the slow one lets the batch outlive its visibility and hands the failing job's
 * copy to a second dispatcher. The queue redrives to a DLQ after `maxReceiveCount` receives.
 */
async function archivedWhileBatchRuns(maxReceiveCount: number) {
  let failingId = '';
  let failed = () => {};
  const ended = new Promise<void>((resolve) => {
    failed = resolve;
  });
  let second: BatchReport | undefined;
  let copy: ReceivedMessage | undefined;
  const w: World = world(
    [
      {
        name: 'failing',
        queue: 'urgent',
        timeLimitSeconds: 5,
        maxRetries: 0,
        run: () => {
          failed();
          throw new Error('boom');
        },
      },
      {
        name: 'slow',
        queue: 'urgent',
        timeLimitSeconds: 5,
        run: async () => {
          await ended;
          await settleTicks();
          w.clock.advance(VISIBILITY_MS + 1_000);
          const copies = (await receive(w)).filter((m) => m.messageId === failingId);
          expect(copies).toHaveLength(1);
          copy = copies[0];
          second = await dispatch(w, copies, w.clock.now() + VISIBILITY_MS);
        },
      },
    ],
    { queues: [{ name: 'urgent', priority: 90, visibilityTimeoutSeconds: VISIBILITY_MS / 1000, longPollSeconds: 0, maxReceiveCount }] },
    { tracked: true, deadLetters: true },
  );
  await w.send('urgent', encodeEnvelope({ task: 'failing', id: 'job-f', payload: {} }));
  await w.send('urgent', encodeEnvelope({ task: 'slow', id: 'job-s', payload: {} }));
  const batch = await receive(w);
  failingId = (batch.find((m) => m.body.includes('"failing"')) as ReceivedMessage).messageId;
  const first = await dispatch(w, batch, w.clock.now() + 2 * VISIBILITY_MS);
  return { w, first, second, copy, failingId };
}

describe('the archive fence: one archive entry per message on a tracked queue', () => {
  it('two doorbells given the same malformed message, the second while the first is still in its batch: archived once', async () => {
    let second: BatchReport | undefined;
    let malformedId = '';
    const w: World = trackedWorld([
      {
        name: 'slow',
        queue: 'urgent',
        timeLimitSeconds: 5,
        run: async () => {
          // The batch outlives the visibility: SQS hands the malformed message to another invocation.
          w.clock.advance(VISIBILITY_MS + 1_000);
          const copies = (await receive(w)).filter((m) => m.body === MALFORMED);
          expect(copies.map((m) => m.messageId)).toEqual([malformedId]);
          second = await dispatch(w, copies, w.clock.now() + VISIBILITY_MS, { doorbell: true });
        },
      },
    ]);
    await w.send('urgent', MALFORMED);
    await w.send('urgent', encodeEnvelope({ task: 'slow', payload: {} }));
    const batch = await receive(w);
    malformedId = (batch.find((m) => m.body === MALFORMED) as ReceivedMessage).messageId;

    // The first invocation's deadline lies past the visibility (it started late in it).
    const first = await dispatch(w, batch, w.clock.now() + 2 * VISIBILITY_MS, { doorbell: true });

    expect(outcomeOf(second, malformedId)).toBe('deferred');
    expect(outcomeOf(first, malformedId)).toBe('archived');
    expect(archived(w).map((r) => r?.reason)).toEqual(['malformed']);
    const record = await w.jobs.get(malformedId);
    expect(record).toMatchObject({ state: 'archived', reason: 'malformed' });
    expect(record?.archiveHolder).toBeUndefined();
    expect(record?.history.map((h) => h.what)).toEqual(['archived']);

    // The copy the second handed back returns once the first's lease is over: only deleted.
    w.clock.advance(2 * VISIBILITY_MS);
    const third = (await receive(w)).filter((m) => m.body === MALFORMED);
    expect(third).toHaveLength(1);
    const last = await dispatch(w, third, w.clock.now() + VISIBILITY_MS, { doorbell: true });
    expect(outcomeOf(last, malformedId)).toBe('duplicate');
    expect(archived(w)).toHaveLength(1);
    expect(w.sqs.peek(urgent(w)).filter((m) => m.body === MALFORMED)).toHaveLength(0);
    expect((await w.jobs.get(malformedId))?.history.map((h) => h.what)).toEqual(['archived']);
  });

  it('a dispatcher lost between taking the fence and its send: the message comes back and the next archives it once', async () => {
    const w = trackedWorld([]);
    await w.send('urgent', MALFORMED);
    const batch = await receive(w);
    const messageId = (batch[0] as ReceivedMessage).messageId;
    // Its archive send never lands, nor anything after it (the process is gone by then): nothing sent, nothing deleted.
    const killed = async () => {
      throw new Error('process killed');
    };
    const lost: QueueClient = Object.assign(Object.create(w.queues) as QueueClient, { sendBatch: killed });
    const jobs = Object.assign(Object.create(w.jobs) as typeof w.jobs, { lapseArchive: killed });
    const tracking = { ...(w.deps.tracking as NonNullable<World['deps']['tracking']>), jobs };
    const first = await dispatch(w, batch, w.clock.now() + 2 * VISIBILITY_MS, { deps: { ...w.deps, queues: lost, tracking } });
    expect(first.jobs[0]).toMatchObject({ outcome: 'archived', unsettled: true });
    expect(archived(w)).toHaveLength(0);
    expect(await w.jobs.get(messageId)).toMatchObject({ state: 'archived', archiveHolder: expect.any(String) });

    // The next dispatcher: the copy is handed back while the lost one's lease lasts, then taken over.
    w.clock.advance(VISIBILITY_MS + 1_000);
    await w.run({ forMs: 3 * VISIBILITY_MS });
    expect(w.reports.flatMap((r) => r.jobs.map((j) => j.outcome))).toEqual(['deferred', 'archived']);
    expect(archived(w).map((r) => [r?.reason, r?.messageId])).toEqual([['malformed', messageId]]);
    expect(w.sqs.peek(urgent(w))).toHaveLength(0);
    const record = await w.jobs.get(messageId);
    expect(record?.archiveHolder).toBeUndefined();
    expect(record?.history.map((h) => h.what)).toEqual(['archived']);
  });

  it('a send that failed in a live dispatcher ends its lease at once: the next delivery archives the message without waiting', async () => {
    const w = trackedWorld([]);
    await w.send('urgent', MALFORMED);
    const batch = await receive(w);
    const messageId = (batch[0] as ReceivedMessage).messageId;
    const refusing: QueueClient = Object.assign(Object.create(w.queues) as QueueClient, {
      sendBatch: async () => {
        throw new Error('archive queue unreachable');
      },
    });
    const first = await dispatch(w, batch, w.clock.now() + 2 * VISIBILITY_MS, { deps: { ...w.deps, queues: refusing } });
    expect(first.jobs[0]).toMatchObject({ outcome: 'archived', unsettled: true });
    expect(await w.jobs.get(messageId)).toMatchObject({ archiveHolder: expect.any(String), archiveUntil: w.clock.now() });

    // Its lease would have run to the invocation's end (2 visibilities away); the copy after one visibility takes it over.
    w.clock.advance(VISIBILITY_MS + 1_000);
    await w.run({ forMs: VISIBILITY_MS / 2 });
    expect(w.reports.flatMap((r) => r.jobs.map((j) => j.outcome))).toEqual(['archived']);
    expect(archived(w).map((r) => [r?.reason, r?.messageId])).toEqual([['malformed', messageId]]);
    expect(w.sqs.peek(urgent(w))).toHaveLength(0);
    expect((await w.jobs.get(messageId))?.archiveHolder).toBeUndefined();
  });

  it("a job's copy held at its last receive before redrive is replaced by a fresh copy, not redriven to the DLQ", async () => {
    // Its second receive: handed back by its visibility, it would be received once more, then SQS
    // moves it to the DLQ (maxReceiveCount 3; the dispatcher replaces a job's message a receive early).
    const { w, first, second, copy, failingId } = await archivedWhileBatchRuns(3);
    expect(copy?.receiveCount).toBe(2);
    expect(second?.jobs.find((j) => j.messageId === failingId)).toMatchObject({ outcome: 'deferred', requeued: true });
    // The fresh copy (a new message, the job's id) comes back to find the archive sent: deleted.
    w.clock.advance(3 * VISIBILITY_MS);
    await w.run({ forMs: VISIBILITY_MS });
    expect(archived(w).map((r) => [r?.reason, r?.jobId])).toEqual([['exhausted', 'job-f']]);
    expect(w.sqs.peek(urgent(w))).toHaveLength(0);
    expect(w.sqs.peek(`${urgent(w)}-dlq`)).toHaveLength(0);
    const outcomes = [first, second, ...w.reports].flatMap((r) => r?.jobs.filter((j) => j.jobId === 'job-f').map((j) => j.outcome) ?? []);
    expect(outcomes).toEqual(['archived', 'deferred', 'duplicate']);
    expect(w.runs.filter((r) => r.task === 'failing')).toHaveLength(1);
  });

  it('a record under the message id that is no archive (a job of that id) is left alone: the message is archived all the same', async () => {
    const w = trackedWorld([]);
    await w.send('urgent', MALFORMED);
    const messageId = (w.sqs.peek(urgent(w))[0] as ReceivedMessage).messageId;
    const job = { jobId: messageId, task: 'other', payloadDigest: 'd', queue: 'urgent', version: 'v1', publishedAt: 1 };
    await w.jobs.recordQueued(job, w.clock.now());
    await w.run();
    expect(archived(w).map((r) => r?.messageId)).toEqual([messageId]);
    expect(await w.jobs.get(messageId)).toMatchObject({ state: 'queued', task: 'other' });
    expect(w.sqs.peek(urgent(w))).toHaveLength(0);
  });

  it('a claimed job archived for exhaustion while its batch runs on: its copy is neither run nor archived again', async () => {
    const { w, first, second, failingId } = await archivedWhileBatchRuns(10);

    // The copy found the job ended and its archive fence held: handed back, its body not run again.
    expect(outcomeOf(second, failingId)).toBe('deferred');
    expect(outcomeOf(first, failingId)).toBe('archived');
    expect(w.runs.filter((r) => r.task === 'failing')).toHaveLength(1);
    expect(archived(w).map((r) => [r?.reason, r?.jobId])).toEqual([['exhausted', 'job-f']]);
    expect(await w.jobs.get('job-f')).toMatchObject({ state: 'archived', reason: 'exhausted', attempt: 1 });

    w.clock.advance(2 * VISIBILITY_MS);
    const third = (await receive(w)).filter((m) => m.messageId === failingId);
    expect(third).toHaveLength(1);
    const last = await dispatch(w, third, w.clock.now() + VISIBILITY_MS);
    expect(outcomeOf(last, failingId)).toBe('duplicate');
    expect(archived(w)).toHaveLength(1);
    expect(w.runs.filter((r) => r.task === 'failing')).toHaveLength(1);
    expect((await w.jobs.get('job-f'))?.archiveHolder).toBeUndefined();
  });
});
