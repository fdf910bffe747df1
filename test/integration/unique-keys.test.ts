/**
 * A unique task's key on the emulators: many publishers at once send one job, every other answer
 * names it, and the body runs once; a message of the same key sent from another SDK while that job
 * is live is recorded `deduplicated` and never runs. The truth is read from the jobs table, the
 * queue and the journal the task writes.
 */
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { tempFile } from '../helpers/emulators';
import { readJournal, runUntil } from '../helpers/run';
import { type System, systemPerTest } from '../helpers/system';

const fresh = systemPerTest();
/** Concurrent publishes of one key: 200 in CI; the 1,000 with UNIQUE_PUBLISHES=1000. */
const PUBLISHES = Number(process.env.UNIQUE_PUBLISHES ?? 200);

const jobsIn = async (s: System, state: 'succeeded' | 'queued' | 'deduplicated' | 'running') =>
  (await s.tracking?.jobs?.list({ state, queues: ['urgent'], task: 'sync-account', limit: 1000 })) ?? [];

it(`${PUBLISHES} concurrent publishes of one task and key: 1 message, 1 job, ${PUBLISHES - 1} answers naming it; the body runs once`, async () => {
  const s = await fresh({ tracked: true });
  const journal = tempFile('journal.jsonl');

  const published = await Promise.all(
    Array.from({ length: PUBLISHES }, (_, n) => s.publisher.publish('sync-account', { journal, n, holdMs: 1000 }, { key: 'account-42' })),
  );

  const sent = published.filter((p) => !p.deduplicated);
  expect(sent).toHaveLength(1);
  const jobId = sent[0]?.jobId as string;
  const joined = published.filter((p) => p.deduplicated);
  expect(joined).toHaveLength(PUBLISHES - 1);
  expect(new Set(joined.map((p) => p.jobId))).toEqual(new Set([jobId]));
  expect(joined.every((p) => p.messageId === '')).toBe(true);
  expect((await s.depth('urgent')).visible).toBe(1);
  expect(await jobsIn(s, 'queued')).toEqual([expect.objectContaining({ jobId, key: 'account-42' })]);

  // Another SDK sends a job of the same account while the published one is live.
  await s.sqs.sqs.send(
    new SendMessageCommand({
      QueueUrl: s.urls.queues.urgent,
      MessageBody: JSON.stringify({ task: 'sync-account', id: 'from-elsewhere', key: 'account-42', payload: { journal, n: 999 } }),
    }),
  );

  await runUntil(
    s.runtime,
    'the job to succeed and the queue to drain',
    async () => (await s.tracking?.jobs?.get(jobId))?.state === 'succeeded' && (await s.drained('urgent')),
    30_000,
  );

  expect(readJournal(journal).map((e) => e.jobId)).toEqual([jobId]);
  expect((await jobsIn(s, 'succeeded')).map((r) => r.jobId)).toEqual([jobId]);
  expect(await s.tracking?.jobs?.get(jobId)).toMatchObject({ state: 'succeeded', attempt: 1, key: 'account-42' });
  expect(await jobsIn(s, 'deduplicated')).toEqual([
    expect.objectContaining({ jobId: 'from-elsewhere', state: 'deduplicated', duplicateOf: jobId, key: 'account-42', attempt: 0 }),
  ]);
  expect(s.jobs().find((j) => j.jobId === 'from-elsewhere')).toMatchObject({ outcome: 'duplicate' });
  expect(await jobsIn(s, 'queued')).toEqual([]);
}, 90_000);
