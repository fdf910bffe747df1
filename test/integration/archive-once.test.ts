/**
 * A message is archived once on a tracked queue even when a copy of it reaches a second dispatcher
 * while the first is still in its batch (the archive fence, lib/policy/archive-fences.ts), on the
 * emulators. The double receive is forced: the doorbell starts its batch seconds after its
 * trigger received it (a cold start), so its hold would extend the messages only after they lapsed.
 */
import { writeFileSync } from 'node:fs';
import type { ReceivedMessage } from '../../lib/ports';
import { tempFile } from '../helpers/emulators';
import { eventually } from '../helpers/run';
import { triggerRecords } from '../helpers/sqs-event';
import { type System, systemPerTest } from '../helpers/system';

const fresh = systemPerTest();
const VISIBILITY_SECONDS = 5;
/** Longer than the hold's lead before a lapse (a quarter of the visibility): the doorbell's hold comes too late. */
const COLD_START_MS = 3_000;
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
  it('a malformed message received again while its first doorbell still runs its batch is archived once', async () => {
    const s = await fresh({ tracked: true });
    const url = s.urls.queues.urgent as string;
    const gate = tempFile('gate');
    await s.sqs.sendBatch(url, [{ id: 'bad', body: MALFORMED }]);
    await s.publisher.publish('held', { journal: tempFile('held.jsonl'), gate });
    // The trigger's receive, then the invocation's late start.
    const received: ReceivedMessage[] = [];
    while (received.length < 2)
      received.push(...(await s.sqs.receive(url, { maxMessages: 10, waitSeconds: 1, visibilityTimeoutSeconds: VISIBILITY_SECONDS })));
    const malformed = received.find((m) => m.body === MALFORMED) as ReceivedMessage;
    await new Promise((resolve) => setTimeout(resolve, COLD_START_MS));
    const first = ring(s, received);

    // Its visibility lapses while the batch runs (the held task waits for its gate): a second doorbell gets it.
    const copies: ReceivedMessage[] = [];
    await eventually('the malformed message to come back', async () => {
      copies.push(...(await s.sqs.receive(url, { maxMessages: 10, waitSeconds: 1, visibilityTimeoutSeconds: VISIBILITY_SECONDS })));
      return copies.some((m) => m.messageId === malformed.messageId);
    });
    await ring(
      s,
      copies.filter((m) => m.messageId === malformed.messageId),
      s.dispatcher({ workerId: 'second' }),
    );
    writeFileSync(gate, '');
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
    // The first archived it; the copies were handed back while it held the fence, or deleted once it had sent it.
    expect(outcomes.filter((o) => o === 'archived')).toHaveLength(1);
    expect(outcomes.every((o) => o === 'archived' || o === 'deferred' || o === 'duplicate')).toBe(true);
    expect(outcomes.length).toBeGreaterThan(1);
    const archive = await s.archive();
    expect(archive.map((a) => [a.record?.reason, a.record?.messageId])).toEqual([['malformed', malformed.messageId]]);
    const record = await s.tracking?.jobs.get(malformed.messageId);
    expect(record).toMatchObject({ state: 'archived', reason: 'malformed' });
    expect(record?.archiveHolder).toBeUndefined();
  }, 90_000);
});
