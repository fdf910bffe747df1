import { VirtualClock } from '../../lib/clock';
import { ResultTimeoutError, ResultUnavailableError } from '../../lib/errors';
import { MemoryJobStore } from '../../lib/fakes/memory-job-store';
import { waitForResult } from '../../lib/publish/results';
import type { JobRef } from '../../lib/track/job-record';
import type { JobStore } from '../../lib/track/job-stores';

const ref = (jobId: string): JobRef => ({ jobId, task: 't', payloadDigest: 'd', queue: 'q', version: 'v1', publishedAt: 0 });

/** Counts the reads a waiter makes; runs `each` before every read (a worker moving the job on meanwhile). */
function counted(store: JobStore, each: (reads: number) => Promise<void> = async () => {}) {
  const counter = { reads: 0 };
  const jobs = Object.assign(Object.create(store) as JobStore, {
    get: async (id: string) => {
      counter.reads += 1;
      await each(counter.reads);
      return store.get(id);
    },
  });
  return { jobs, counter };
}

describe('waiting for a result', () => {
  it('resolves with the result once the job succeeds, polling one item with backoff', async () => {
    const store = new MemoryJobStore({ historyLimit: 20, retentionDays: 7 });
    const clock = new VirtualClock();
    const { jobs, counter } = counted(store, async (reads) => {
      if (reads === 6) {
        const claimed = await store.claim({ ...ref('j1'), workerId: 'w', now: clock.now(), leaseUntil: clock.now() + 10_000 });
        if (claimed.outcome !== 'claimed') throw new Error(claimed.outcome);
        await store.complete(
          { jobId: 'j1', token: 1, state: 'succeeded', result: '{"rows":3}', workerId: 'w', now: clock.now() },
          claimed.record,
        );
      }
    });
    const started = clock.now();
    await expect(waitForResult(jobs, 'j1', clock)).resolves.toMatchObject({
      jobId: 'j1',
      state: 'succeeded',
      result: { rows: 3 },
      attempts: 1,
    });
    expect(counter.reads).toBe(6);
    // 100 + 200 + 400 + 800 + 1600 ms of pauses between six reads.
    expect(clock.now() - started).toBe(3_100);
  });

  it('resolves with the reason and error of an archived job, and with a cancelled one', async () => {
    const store = new MemoryJobStore({ historyLimit: 20, retentionDays: 7 });
    const clock = new VirtualClock();
    const claimed = await store.claim({ ...ref('j2'), workerId: 'w', now: 1, leaseUntil: 10_000 });
    if (claimed.outcome !== 'claimed') throw new Error(claimed.outcome);
    const error = { type: 'Error', message: 'downstream said no' };
    await store.complete({ jobId: 'j2', token: 1, state: 'archived', reason: 'exhausted', error, workerId: 'w', now: 2 }, claimed.record);
    await expect(waitForResult(store, 'j2', clock)).resolves.toEqual({
      jobId: 'j2',
      state: 'archived',
      reason: 'exhausted',
      error,
      attempts: 1,
      finishedAt: 2,
    });
    await store.park({ ...ref('j3'), runAt: 10_000_000, body: '{}', workerId: 'w', now: 1 });
    await store.cancel('j3', 5);
    await expect(waitForResult(store, 'j3', clock)).resolves.toEqual({ jobId: 'j3', state: 'cancelled', finishedAt: 5 });
  });

  it('gives up at the timeout with the state it last saw, after a bounded number of reads', async () => {
    const store = new MemoryJobStore({ historyLimit: 20, retentionDays: 7 });
    const clock = new VirtualClock();
    await store.recordQueued(ref('j4'), 0);
    const { jobs, counter } = counted(store);
    const error = await waitForResult(jobs, 'j4', clock, { timeoutMs: 60_000 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ResultTimeoutError);
    expect((error as ResultTimeoutError).lastState).toBe('queued');
    expect((error as Error).message).toBe('Job "j4" did not end within 60000 ms: it is queued');
    // 5 doubling pauses to 1.6 s, then one read every 2 s: 6 + 29 reads in a minute, not 600.
    expect(counter.reads).toBeLessThanOrEqual(36);
    const none = await waitForResult(store, 'nope', clock, { timeoutMs: 1_000 }).catch((e: unknown) => e);
    expect((none as Error).message).toMatch(
      /it has no record \(an unknown id, a job not yet claimed, or one on a queue not tracked 'full'\)/,
    );
  });

  it('stops at once where outcomes are not recorded', async () => {
    const store = new MemoryJobStore({ historyLimit: 20, retentionDays: 7 });
    await store.recordUnclaimed({ ...ref('j5'), state: 'retrying', attempt: 1, workerId: 'w', now: 1 });
    const check = () => {
      throw new ResultUnavailableError('q', 'failures');
    };
    await expect(waitForResult(store, 'j5', new VirtualClock(), { check })).rejects.toThrow(
      /Results of jobs on queue "q" cannot be awaited: it is tracked "failures"/,
    );
  });
});
