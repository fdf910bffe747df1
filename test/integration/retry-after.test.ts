/**
 * A body that throws RetryAfterError runs again at the time it asked for, using none of its
 * attempts: real dispatchers on the emulators, the truth read from the jobs table and the journal
 * the task writes.
 */
import type { JobRecord } from '../../lib/track/job-record';
import { tempFile } from '../helpers/emulators';
import { readJournal, runUntil } from '../helpers/run';
import { type System, systemPerTest } from '../helpers/system';

const fresh = systemPerTest();
const record = (s: System, jobId: string): Promise<JobRecord | undefined> => s.tracking?.jobs?.get(jobId) as Promise<JobRecord | undefined>;

async function runToEnd(s: System, jobId: string) {
  await runUntil(
    s.dispatcher(),
    'the job to end',
    async () => ['succeeded', 'archived'].includes((await record(s, jobId))?.state ?? ''),
    30_000,
  );
  return (await record(s, jobId)) as JobRecord;
}

describe('RetryAfterError on the emulators', () => {
  it('three asks, then success, with maxRetries 0: attempt 1 on every run, three retry-after entries, each run no earlier than asked', async () => {
    const s = await fresh({ tracked: true });
    const journal = tempFile('journal.jsonl');
    const { jobId } = await s.publisher.publish('asks-later', { journal, asks: 3, waitMs: 1000 });
    const ended = await runToEnd(s, jobId);
    expect(ended).toMatchObject({ state: 'succeeded', attempt: 4, retryAfters: 3, result: '{"attempt":1}' });
    expect(ended.history.map((h) => h.what)).toEqual([
      'queued',
      'started',
      'retry-after',
      'started',
      'retry-after',
      'started',
      'retry-after',
      'started',
      'succeeded',
    ]);
    const runs = readJournal(journal);
    expect(runs.map((r) => [r.attempt, r.token])).toEqual([
      [1, 1],
      [1, 2],
      [1, 3],
      [1, 4],
    ]);
    // The message stayed invisible for the second asked: no run came sooner (the queue's own clock).
    for (let i = 1; i < runs.length; i++) expect((runs[i]?.at as number) - (runs[i - 1]?.at as number)).toBeGreaterThanOrEqual(1000);
  });

  it('past maxRetryAfters (3) an ask is an ordinary failure: with maxRetries 0 the job is archived exhausted after four runs', async () => {
    const s = await fresh({ tracked: true });
    const journal = tempFile('journal.jsonl');
    const { jobId } = await s.publisher.publish('asks-later', { journal, asks: 100, waitMs: 0 });
    const ended = await runToEnd(s, jobId);
    expect(ended).toMatchObject({
      state: 'archived',
      reason: 'exhausted',
      attempt: 4,
      retryAfters: 3,
      lastError: { type: 'RetryAfterError' },
    });
    expect(readJournal(journal).map((r) => r.attempt)).toEqual([1, 1, 1, 1]);
  });
});
