/**
 * A message is archived once on a tracked queue even when a second copy of it reaches another
 * dispatcher while the first still holds its archive (the archive fence,
 * lib/policy/archive-fences.ts), on the emulators: SQS delivers at least once, and a doorbell whose
 * batch outlives its messages' visibility sees its copies go to a second doorbell. The overlap is
 * arranged, not raced: the first doorbell stops right after its rejection record opened the fence,
 * and goes on only once the second has met it.
 */
import type { ReceivedMessage } from '../../lib/ports';
import type { Rejection } from '../../lib/track/job-record';
import type { JobStore } from '../../lib/track/job-stores';
import { eventually } from '../helpers/run';
import { triggerRecords } from '../helpers/sqs-event';
import { type System, systemPerTest } from '../helpers/system';

const fresh = systemPerTest();
const VISIBILITY_SECONDS = 5;
const MALFORMED = '{"task":';

/** A doorbell on `messages` as the trigger hands them over, then the trigger's deletes of what it did not keep. */
async function ring(s: System, messages: readonly ReceivedMessage[], runtime = s.runtime): Promise<void> {
  const url = s.urls.queues.urgent as string;
  const summary = await runtime.ring(triggerRecords(url.slice(url.lastIndexOf('/') + 1), messages), Date.now() + VISIBILITY_SECONDS * 1000);
  const kept = new Set(summary.batchItemFailures.map((f) => f.itemIdentifier));
  const deletes = messages.filter((m) => !kept.has(m.messageId)).map((m) => ({ id: m.messageId, receiptHandle: m.receiptHandle }));
  if (deletes.length > 0) await s.sqs.deleteBatch(url, deletes);
}

describe('the archive fence on the emulators', () => {
  it('a malformed message delivered again while its first doorbell holds the archive is archived once', async () => {
    const s = await fresh({ tracked: true });
    const url = s.urls.queues.urgent as string;
    await s.sqs.sendBatch(url, [{ id: 'bad', body: MALFORMED }]);
    const received: ReceivedMessage[] = [];
    await eventually('the trigger to receive the malformed message', async () => {
      received.push(...(await s.sqs.receive(url, { maxMessages: 10, waitSeconds: 1, visibilityTimeoutSeconds: VISIBILITY_SECONDS })));
      return received.length > 0;
    });
    const malformed = received[0] as ReceivedMessage;

    // The first doorbell stops once its rejection is written (the fence open, held by it) until the gate opens.
    let fenceOpened: () => void = () => undefined;
    const opened = new Promise<void>((resolve) => {
      fenceOpened = resolve;
    });
    let openGate: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      openGate = resolve;
    });
    const stopsAfterRejection = (jobs: JobStore): JobStore =>
      Object.assign(Object.create(jobs) as JobStore, {
        recordRejected: async (rejection: Rejection) => {
          const written = await jobs.recordRejected(rejection);
          fenceOpened();
          await gate;
          return written;
        },
      });
    const firstDoorbell = s.dispatcher({ workerId: 'first', wrapJobs: stopsAfterRejection });
    const secondDoorbell = s.dispatcher({ workerId: 'second' });
    const first = ring(s, received, firstDoorbell);
    await opened;
    // The same message reaches a second doorbell: the fence is held, so it hands the copy back.
    await ring(s, [malformed], secondDoorbell);
    openGate();
    await first;
    // Whatever comes back later is rung like any trigger's batch, until nothing is left.
    await eventually(
      'the queue to drain',
      async () => {
        const later = await s.sqs.receive(url, { maxMessages: 10, waitSeconds: 1, visibilityTimeoutSeconds: VISIBILITY_SECONDS });
        if (later.length > 0) await ring(s, later);
        return s.drained('urgent');
      },
      30_000,
    );

    const outcomes = s
      .jobs()
      .filter((j) => j.messageId === malformed.messageId)
      .map((j) => j.outcome);
    // The second met the fence and handed its copy back; the first archived it. (Without the fence: two archives.)
    expect(outcomes.slice(0, 2)).toEqual(['deferred', 'archived']);
    expect(outcomes.every((o) => o === 'archived' || o === 'deferred' || o === 'duplicate')).toBe(true);
    expect(outcomes.filter((o) => o === 'archived')).toHaveLength(1);
    const archive = await s.archive();
    expect(archive.map((a) => [a.record?.reason, a.record?.messageId])).toEqual([['malformed', malformed.messageId]]);
    const record = await s.tracking?.jobs.get(malformed.messageId);
    expect(record).toMatchObject({ state: 'archived', reason: 'malformed' });
    expect(record?.archiveHolder).toBeUndefined();
  }, 90_000);
});
