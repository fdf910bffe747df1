/**
 * A finished task keeps its message until its batch is settled. Found by an outside crash harness:
 * tasks that ended early in a batch whose slowest task outlasted the queue's visibility lost their
 * message to another dispatcher, which ran the bodies again with no process killed. A dispatcher's
 * own receives take no more than will start at once, but a doorbell runs whatever batch its SQS
 * trigger hands it: here the `urgent` queue's visibility is 5 s, a dispatcher has 4 slots, and a
 * trigger hands it 10 tasks of 1.8 s, run 4, 4, then 2 and settled at ~5.4 s, after the first four
 * messages would have lapsed.
 */
import type { QueueClient, ReceivedMessage } from '../../lib/ports';
import { attemptsUsed } from '../../lib/track/job-record';
import { tempFile } from '../helpers/emulators';
import { eventually, readJournal } from '../helpers/run';
import { triggerRecords } from '../helpers/sqs-event';
import { systemPerTest } from '../helpers/system';

const fresh = systemPerTest();
const TASKS = 10;
/** The dispatcher's task slots (the fixture config's concurrency). */
const SLOTS = 4;

async function publishBatch(s: Awaited<ReturnType<typeof fresh>>, journal: string, count = TASKS): Promise<string[]> {
  const ids: string[] = [];
  for (let n = 0; n < count; n++) ids.push((await s.publisher.publish('lull', { journal, ms: 1800, n })).jobId);
  return ids;
}

/** Lambda's SQS event records for messages as a trigger received them from `url`. */
function triggerRecordsFrom(url: string, messages: readonly ReceivedMessage[]) {
  return triggerRecords(url.slice(url.lastIndexOf('/') + 1), messages);
}

/** How often each task body started, by `n`, from the tasks' own journal. */
function startsByTask(journal: string, count = TASKS): number[] {
  const starts = Array.from({ length: count }, () => 0);
  for (const entry of readJournal(journal)) starts[entry.n as number] = (starts[entry.n as number] ?? 0) + 1;
  return starts;
}

/** After its first receive, every call that would settle or extend a message hangs: a process frozen mid-batch. */
function freezesAfterFirstBatch(inner: QueueClient): QueueClient {
  let received = false;
  const hang = () => new Promise<never>(() => {});
  return {
    receive: async (url, request, signal) => {
      if (received) return hang();
      const messages = await inner.receive(url, request, signal);
      received ||= messages.length > 0;
      return messages;
    },
    sendBatch: (url, entries) => (received ? hang() : inner.sendBatch(url, entries)),
    deleteBatch: (url, entries) => (received ? hang() : inner.deleteBatch(url, entries)),
    changeVisibilityBatch: (url, entries) => (received ? hang() : inner.changeVisibilityBatch(url, entries)),
    depth: (url) => inner.depth(url),
  };
}

describe('a finished task keeps its message until its batch is settled', () => {
  it('no body runs twice when a trigger’s batch outlasts the visibility with another dispatcher polling', async () => {
    const s = await fresh({ tracked: true });
    const journal = tempFile('hold.jsonl');
    const ids = await publishBatch(s, journal);
    // The trigger's receive: all ten at once, with the queue's 5 s visibility.
    const url = s.urls.queues.urgent as string;
    const received: ReceivedMessage[] = [];
    while (received.length < TASKS)
      received.push(...(await s.sqs.receive(url, { maxMessages: 10, waitSeconds: 1, visibilityTimeoutSeconds: 5 })));
    const stop = new AbortController();
    const ringing = s.runtime.ring(triggerRecordsFrom(url, received), Date.now() + 30_000);
    // The second dispatcher starts once the first holds the whole batch, and polls all along.
    await eventually('the doorbell to start the batch', () => readJournal(journal).length > 0);
    const second = s.dispatcher().invoke(Date.now() + 60_000, stop.signal);
    try {
      const rang = await ringing;
      // The trigger deletes what the invocation does not report as kept. A message of this
      // oversized batch that could not have a thread before its visibility ran short is kept,
      // unstarted, and comes back to the second dispatcher.
      const kept = new Set(rang.batchItemFailures.map((f) => f.itemIdentifier));
      await s.sqs.deleteBatch(
        url,
        received.filter((m) => !kept.has(m.messageId)).map((m) => ({ id: m.messageId, receiptHandle: m.receiptHandle })),
      );
      await eventually('every job to succeed', async () => {
        const records = await Promise.all(ids.map((id) => s.tracking?.jobs.get(id)));
        return records.every((r) => r?.state === 'succeeded');
      });
      await eventually('the queue to drain', () => s.drained('urgent'));
    } finally {
      stop.abort();
      await second;
    }
    // Every body started once (the tasks' own journal): none ran again, as a retry or a re-delivery.
    expect(startsByTask(journal)).toEqual(Array.from({ length: TASKS }, () => 1));
    // Nothing came back to be stopped as a duplicate: no finished task's message left the doorbell.
    expect(s.jobs().filter((j) => j.outcome === 'duplicate')).toEqual([]);
    // One attempt used by each, and every other claim accounted for in the jobs table. A claim made
    // ahead of its slot whose visibility ran short before a thread was free is handed back unstarted
    // (no attempt used); on a machine too busy for the hand-back to land first, its message came
    // back and the second dispatcher took the job over (an attempt used, its body never started:
    // the journal above), and the first one's late settle was refused as stale.
    const records = await Promise.all(ids.map((id) => s.tracking?.jobs.get(id)));
    const takenOver = new Set<string>();
    for (const [n, record] of records.entries()) {
      if (!record) throw new Error(`no record of job n=${n}`);
      const count = (what: string) => record.history.filter((h) => h.what === what).length;
      if (count('took-over') > 0) takenOver.add(record.jobId);
      expect({ n, state: record.state, used: attemptsUsed(record), extraClaims: record.attempt - 1 }).toEqual({
        n,
        state: 'succeeded',
        used: 1 + count('took-over'),
        extraClaims: count('handed-back') + count('took-over'),
      });
    }
    expect(s.jobs().filter((j) => j.outcome === 'stale' && !takenOver.has(j.jobId ?? ''))).toEqual([]);
  }, 60_000);

  it('a task that ended is recorded at once: a dispatcher frozen before its settle costs no second run', async () => {
    const s = await fresh({ tracked: true });
    const journal = tempFile('frozen.jsonl');
    // As many as its first receive takes (its free slots).
    const ids = await publishBatch(s, journal, SLOTS);
    const stop = new AbortController();
    // Frozen after its receive: it can neither extend nor settle, as a process stopped mid-batch.
    void s.dispatcher({ wrapQueues: freezesAfterFirstBatch, workerId: 'frozen' }).invoke(Date.now() + 60_000, stop.signal);
    await eventually('the frozen dispatcher to run its tasks', () => readJournal(journal).length === SLOTS, 20_000);
    const rescuer = s.runtime.invoke(Date.now() + 60_000, stop.signal);
    try {
      await eventually('the queue to drain', () => s.drained('urgent'), 30_000);
    } finally {
      stop.abort();
      await rescuer;
    }
    // Every body ran once; the messages that came back found their jobs finished.
    expect(readJournal(journal).filter((entry) => entry.attempt !== 1)).toEqual([]);
    expect(startsByTask(journal, SLOTS)).toEqual(Array.from({ length: SLOTS }, () => 1));
    const records = await Promise.all(ids.map((id) => s.tracking?.jobs.get(id)));
    expect(records.map((r) => [r?.state, r?.attempt])).toEqual(ids.map(() => ['succeeded', 1]));
    expect(s.jobs().filter((j) => j.outcome === 'duplicate')).toHaveLength(SLOTS);
  }, 60_000);
});
