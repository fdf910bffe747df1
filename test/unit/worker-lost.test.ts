import { workerLostError } from '../../lib/dispatch/claim';
import { payloadDigest } from '../../lib/policy/job-rules';
import type { TaskOptions } from '../../lib/tasks/task';
import type { HistoryEntry } from '../../lib/track/job-record';
import { readArchiveRecord } from '../../lib/wire/archive-record';
import { encodeEnvelope } from '../../lib/wire/envelope';
import { world } from '../helpers/world';

/**
 * A job whose claim finds its attempts spent though no attempt failed that many times is archived
 * `exhausted` with a WorkerLostError. Its text says what the record's history shows: which attempts
 * started and never ended (their worker lost), which failed and were retried, and the last one.
 */
const failing: TaskOptions = {
  name: 'failing',
  queue: 'urgent',
  timeLimitSeconds: 5,
  maxRetries: 2,
  backoff: { baseSeconds: 0, capSeconds: 0 },
  run: () => Promise.reject(new Error('boom')),
};

describe('WorkerLostError', () => {
  it('names the attempts that never ended apart from those that failed and were retried', async () => {
    const w = world([failing], { queues: [{ name: 'urgent', priority: 90, visibilityTimeoutSeconds: 30 }] }, { tracked: true });
    await w.send('urgent', encodeEnvelope({ task: 'failing', payload: {}, id: 'job-lost' }));
    const claim = (worker: string) =>
      w.jobs.claim({
        jobId: 'job-lost',
        task: 'failing',
        payloadDigest: payloadDigest({}),
        queue: 'urgent',
        version: 'v1',
        publishedAt: 0,
        workerId: worker,
        now: w.clock.now(),
        leaseUntil: w.clock.now() + 1,
      });
    // Attempt 1 fails and is retried; attempts 2 and 3 are claimed by workers that die (their leases lapse).
    const first = await claim('w-1');
    if (first.outcome !== 'claimed') throw new Error(`expected a claim, got ${first.outcome}`);
    await w.jobs.complete(
      { jobId: 'job-lost', token: 1, state: 'retrying', error: { type: 'Error', message: 'boom' }, workerId: 'w-1', now: w.clock.now() },
      first.record,
    );
    w.clock.advance(10);
    for (const worker of ['gone-2', 'gone-3']) {
      expect((await claim(worker)).outcome).toBe('claimed');
      w.clock.advance(10);
    }
    const lastStartedAt = (await w.jobs.get('job-lost'))?.lastStartedAt as number;

    await w.run();

    expect(w.runs).toHaveLength(0);
    const [archived] = w.sqs.peek(w.urls.archive);
    const record = readArchiveRecord(archived?.attributes ?? {});
    expect(record).toMatchObject({ reason: 'exhausted', errorType: 'WorkerLostError', attempts: 4 });
    expect(record?.detail).toBe(
      `3 attempts started (maxRetries 2 allows 3): 2 never ended, their workers lost (attempts 2, 3); ` +
        `1 failed and was retried (attempt 1); the last, attempt 3, started ${new Date(lastStartedAt).toISOString()} on gone-3`,
    );
    expect((await w.jobs.get('job-lost'))?.lastError?.message).toBe(record?.detail);
  });

  const start = (when: number, worker: string, what: HistoryEntry['what'] = 'started'): HistoryEntry => ({ what, when, worker });
  const retried = (when: number, attempt: number): HistoryEntry => ({ what: 'retrying', when, attempt });

  it('reads a history as DynamoDB keeps it: only the last start names its attempt', () => {
    // Attempts 1 and 2 lost (2 took over 1's lapsed lease), this claim is attempt 3.
    const history = [start(1_000, 'a'), start(2_000, 'b', 'took-over'), { ...start(3_000, 'c', 'took-over'), attempt: 3 }];
    expect(workerLostError({ history }, 3, 1).message).toBe(
      '2 attempts started (maxRetries 1 allows 2): 2 never ended, their workers lost (attempts 1, 2); the last, attempt 2, started 1970-01-01T00:00:02.000Z on b',
    );
  });

  it('counts apart the attempts older than a trimmed history', () => {
    // historyLimit kept the last four entries of a job now claimed for attempt 6: attempt 4 failed, 5 was lost.
    const history = [start(4_000, 'd'), retried(4_500, 4), start(5_000, 'e'), start(6_000, 'f', 'took-over')];
    expect(workerLostError({ history }, 6, 4).message).toBe(
      '5 attempts started (maxRetries 4 allows 5): 1 never ended, its worker lost (attempt 5); 1 failed and was retried (attempt 4); ' +
        '3 older than the history kept; the last, attempt 5, started 1970-01-01T00:00:05.000Z on e',
    );
  });

  it('leaves a claim handed back unstarted out of the attempts started and of both lists', () => {
    // Claim 1 was lost, claim 2 handed back before its body started (a stop), claim 3 lost, and this is claim 4.
    const history: HistoryEntry[] = [
      start(1_000, 'a'),
      start(2_000, 'b', 'took-over'),
      { what: 'handed-back', when: 2_100, worker: 'b', attempt: 2 },
      start(3_000, 'c'),
      { ...start(4_000, 'd', 'took-over'), attempt: 4 },
    ];
    expect(workerLostError({ history, parks: 1 }, 4, 1).message).toBe(
      '2 attempts started (maxRetries 1 allows 2): 2 never ended, their workers lost (attempts 1, 3); the last, attempt 3, started 1970-01-01T00:00:03.000Z on c',
    );
  });

  it('says when the history kept shows none of the earlier attempts', () => {
    expect(workerLostError({ history: [start(9_000, 'z')] }, 4, 2).message).toBe(
      '3 attempts started (maxRetries 2 allows 3); the history kept does not show how they ended',
    );
  });
});
