/**
 * A debounced task's key on the emulators: 20 publishes of one document close together run its task
 * once, with the last payload, and every publish is answered with that job. The truth is read from
 * the jobs table and the journal the task writes.
 */
import { tempFile } from '../helpers/emulators';
import { readJournal, runUntil } from '../helpers/run';
import { systemPerTest } from '../helpers/system';

const fresh = systemPerTest();

it('20 publishes of one key, 100 ms apart: one job run, with the last payload; each answer names it, the first alone sent', async () => {
  const s = await fresh({ tracked: true });
  const journal = tempFile('journal.jsonl');

  const published = [];
  for (let n = 0; n < 20; n++) {
    if (n > 0) await new Promise((resolve) => setTimeout(resolve, 100));
    published.push(await s.publisher.publish('reindex-doc', { journal, n }, { key: 'doc-7' }));
  }

  const jobId = published[0]?.jobId as string;
  expect(published.map((p) => p.jobId)).toEqual(Array(20).fill(jobId));
  expect(published.map((p) => p.debounced ?? false)).toEqual([false, ...Array(19).fill(true)]);
  expect(published.slice(1).every((p) => p.messageId === '')).toBe(true);
  const depth = await s.depth('urgent');
  expect(depth.visible + depth.delayed + depth.inFlight).toBe(1);

  await runUntil(
    s.runtime,
    'the job to succeed and the queue to drain',
    async () => (await s.tracking?.jobs?.get(jobId))?.state === 'succeeded' && (await s.drained('urgent')),
    60_000,
  );

  expect(readJournal(journal).map((e) => [e.jobId, e.n])).toEqual([[jobId, 19]]);
  const succeeded = (await s.tracking?.jobs?.list({ state: 'succeeded', queues: ['urgent'], task: 'reindex-doc', limit: 100 })) ?? [];
  expect(succeeded.map((r) => r.jobId)).toEqual([jobId]);
  expect(await s.tracking?.jobs?.get(jobId)).toMatchObject({ state: 'succeeded', attempt: 1, key: 'doc-7' });
  // The cycle was closed; the body run is kept under the job.
  expect(await s.tracking?.jobs?.debounceCycle('reindex-doc', 'doc-7')).toBeUndefined();
  expect(JSON.parse((await s.tracking?.jobs?.debouncedBody(jobId)) ?? '{}')).toMatchObject({ payload: { n: 19 } });
}, 120_000);
