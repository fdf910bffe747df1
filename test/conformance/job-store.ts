import { UnrecoverableError } from '../../lib/errors';
import type { JobRef, JobStore, QueueDayStats, StatsStore } from '../../lib/tracking/model';
import { emptyDuration } from '../../lib/tracking/stats';

let unique = 0;
const ref = (overrides: Partial<JobRef> = {}): JobRef => ({
  jobId: `job-${Date.now()}-${++unique}`,
  task: 'send-email',
  queue: 'urgent',
  version: 'v1',
  publishedAt: 1000,
  ...overrides,
});
const claim = (store: JobStore, job: JobRef, now: number, worker = 'w1', leaseMs = 10_000) =>
  store.claim({ ...job, workerId: worker, now, leaseUntil: now + leaseMs });
const error = { type: 'Error', message: 'boom' };

/** The behaviour the dispatcher relies on from the jobs and stats tables; run on the fake and on dynalite. */
export function jobStoreConformance(
  label: string,
  setup: () => Promise<{ jobs: JobStore; stats: StatsStore }>,
  teardown: () => Promise<void>,
): void {
  describe(`JobStore conformance: ${label}`, () => {
    let jobs: JobStore;
    let stats: StatsStore;
    beforeAll(async () => {
      ({ jobs, stats } = await setup());
    });
    afterAll(teardown);

    it('claims a new job: running, attempt 1, token 1, a started entry', async () => {
      const job = ref();
      const result = await claim(jobs, job, 2000);
      expect(result.outcome).toBe('claimed');
      if (result.outcome !== 'claimed') return;
      expect(result.token).toBe(1);
      expect(result.record).toMatchObject({
        state: 'running',
        attempt: 1,
        task: 'send-email',
        queue: 'urgent',
        version: 'v1',
        publishedAt: 1000,
        firstStartedAt: 2000,
        leaseOwner: 'w1',
        leaseUntil: 12_000,
      });
      expect(result.record.history.map((h) => [h.what, h.attempt])).toEqual([['started', 1]]);
    });

    it('records a queued job once, and claims it from queued', async () => {
      const job = ref();
      expect(await jobs.recordQueued(job, 500)).toBe(true);
      expect(await jobs.recordQueued(job, 600)).toBe(false);
      expect((await jobs.get(job.jobId))?.state).toBe('queued');
      const result = await claim(jobs, job, 2000);
      expect(result.outcome).toBe('claimed');
      expect((await jobs.get(job.jobId))?.history.map((h) => h.what)).toEqual(['queued', 'started']);
    });

    it('refuses a second claim while the lease lives, and reports the holder', async () => {
      const job = ref();
      await claim(jobs, job, 2000, 'w1');
      const second = await claim(jobs, job, 3000, 'w2');
      expect(second.outcome).toBe('leased');
      expect(second.record.leaseOwner).toBe('w1');
    });

    it('completes with the token; a finished job is a duplicate for later claims', async () => {
      const job = ref();
      const first = await claim(jobs, job, 2000);
      if (first.outcome !== 'claimed') throw new Error('not claimed');
      expect(
        await jobs.complete(
          { jobId: job.jobId, token: first.token, state: 'succeeded', result: '{"ok":true}', workerId: 'w1', now: 2500 },
          first.record,
        ),
      ).toBe(true);
      const again = await claim(jobs, job, 3000, 'w2');
      expect(again.outcome).toBe('finished');
      expect(again.record).toMatchObject({ state: 'succeeded', finishedAt: 2500, result: '{"ok":true}' });
      expect(again.record.leaseOwner).toBeUndefined();
      await jobs.recordDuplicate(job.jobId, 'w2', 3000);
      expect((await jobs.get(job.jobId))?.history.map((h) => h.what)).toEqual(['started', 'succeeded', 'skipped-duplicate']);
    });

    it('takes over a lapsed lease with a new token; the stale completion is rejected and the newer outcome stands', async () => {
      const job = ref();
      const stale = await claim(jobs, job, 2000, 'w1', 1000);
      if (stale.outcome !== 'claimed') throw new Error('not claimed');
      const fresh = await claim(jobs, job, 5000, 'w2', 1000);
      expect(fresh.outcome).toBe('claimed');
      if (fresh.outcome !== 'claimed') return;
      expect(fresh.token).toBe(2);
      expect(fresh.record.history.map((h) => h.what)).toEqual(['started', 'took-over']);
      expect(
        await jobs.complete({ jobId: job.jobId, token: fresh.token, state: 'succeeded', workerId: 'w2', now: 5500 }, fresh.record),
      ).toBe(true);
      expect(
        await jobs.complete(
          { jobId: job.jobId, token: stale.token, state: 'archived', reason: 'exhausted', error, workerId: 'w1', now: 6000 },
          stale.record,
        ),
      ).toBe(false);
      expect(await jobs.get(job.jobId)).toMatchObject({ state: 'succeeded', attempt: 2 });
    });

    it('extends a lease only for the token that holds it', async () => {
      const job = ref();
      const first = await claim(jobs, job, 2000, 'w1', 1000);
      if (first.outcome !== 'claimed') throw new Error('not claimed');
      expect(await jobs.extendLease(job.jobId, first.token, 9000, 2500)).toBe(true);
      expect((await claim(jobs, job, 5000, 'w2')).outcome).toBe('leased');
      expect(await jobs.extendLease(job.jobId, first.token + 1, 99_000, 2600)).toBe(false);
    });

    it('retries: retrying state, claimable again with attempt + 1, error kept', async () => {
      const job = ref();
      const first = await claim(jobs, job, 2000);
      if (first.outcome !== 'claimed') throw new Error('not claimed');
      await jobs.complete({ jobId: job.jobId, token: 1, state: 'retrying', error, workerId: 'w1', now: 2100, retryAt: 4000 }, first.record);
      expect(await jobs.get(job.jobId)).toMatchObject({ state: 'retrying', lastError: error });
      const second = await claim(jobs, job, 4000);
      expect(second.outcome === 'claimed' && second.token).toBe(2);
    });

    it('keeps only the newest history entries', async () => {
      const job = ref();
      let record = await claim(jobs, job, 1);
      for (let i = 2; i <= 30; i++) {
        if (record.outcome !== 'claimed') throw new Error('not claimed');
        await jobs.complete(
          { jobId: job.jobId, token: record.token, state: 'retrying', error, workerId: 'w1', now: i * 10 },
          record.record,
        );
        record = await claim(jobs, job, i * 10 + 1);
      }
      const history = (await jobs.get(job.jobId))?.history ?? [];
      expect(history.length).toBeLessThanOrEqual(21);
      expect(history[history.length - 1]?.what).toBe('started');
    });

    it('records failures without a claim, and never over a finished job', async () => {
      const job = ref({ queue: 'routine', task: 'sync' });
      await jobs.recordFailure({ ...job, state: 'retrying', attempt: 1, error, workerId: 'w1', now: 100 });
      await jobs.recordFailure({ ...job, state: 'archived', attempt: 2, reason: 'exhausted', error, workerId: 'w1', now: 200 });
      expect(await jobs.get(job.jobId)).toMatchObject({ state: 'archived', attempt: 2, reason: 'exhausted', finishedAt: 200 });
      await jobs.recordFailure({ ...job, state: 'retrying', attempt: 3, error, workerId: 'w1', now: 300 });
      expect((await jobs.get(job.jobId))?.state).toBe('archived');
    });

    it('lists archived and retrying jobs by queue and task, newest first', async () => {
      const queue = `q${++unique}`;
      for (let i = 0; i < 3; i++)
        await jobs.recordFailure({
          ...ref({ queue, task: i === 2 ? 'other' : 'sync' }),
          state: 'archived',
          attempt: 1,
          reason: 'unrecoverable',
          error: { type: UnrecoverableError.name, message: 'x' },
          workerId: 'w',
          now: 1000 + i,
        });
      const all = await jobs.list({ state: 'archived', queues: [queue], limit: 10 });
      expect(all.map((r) => r.updatedAt)).toEqual([1002, 1001, 1000]);
      expect((await jobs.list({ state: 'archived', queues: [queue], task: 'other', limit: 10 })).map((r) => r.task)).toEqual(['other']);
      expect(await jobs.list({ state: 'archived', queues: [queue], limit: 2 })).toHaveLength(2);
    });

    it('lists states that are not indexed too (succeeded)', async () => {
      const queue = `q${++unique}`;
      const job = ref({ queue });
      const first = await claim(jobs, job, 2000);
      if (first.outcome !== 'claimed') throw new Error('not claimed');
      await jobs.complete({ jobId: job.jobId, token: 1, state: 'succeeded', workerId: 'w1', now: 2100 }, first.record);
      expect((await jobs.list({ state: 'succeeded', queues: [queue], limit: 10 })).map((r) => r.jobId)).toEqual([job.jobId]);
    });

    it('resets an archived job for replay: queued, attempts 0', async () => {
      const job = ref();
      await jobs.recordFailure({ ...job, state: 'archived', attempt: 3, reason: 'exhausted', error, workerId: 'w', now: 10 });
      await jobs.resetForReplay(job.jobId, 20);
      expect(await jobs.get(job.jobId)).toMatchObject({ state: 'queued', attempt: 0 });
      expect((await claim(jobs, job, 30)).outcome).toBe('claimed');
    });

    it('adds stats atomically and reads them back', async () => {
      const queue = `q${++unique}`;
      const delta = (n: number): QueueDayStats => ({
        queue,
        day: '2026-11-21',
        counters: { succeeded: n, retried: 1 },
        archived: { exhausted: 1 },
        wait: { count: 2, sum: 3000, sumSquares: 5_000_000, buckets: { s1: 1, s2: 1 } },
        run: { ...emptyDuration(), count: 1, sum: 20, sumSquares: 400, buckets: { s0: 1 } },
      });
      await Promise.all([stats.add(delta(2), 99), stats.add(delta(3), 99)]);
      expect(await stats.get(queue, '2026-11-21')).toEqual({
        queue,
        day: '2026-11-21',
        counters: { succeeded: 5, retried: 2 },
        archived: { exhausted: 2 },
        wait: { count: 4, sum: 6000, sumSquares: 10_000_000, buckets: { s1: 2, s2: 2 } },
        run: { count: 2, sum: 40, sumSquares: 800, buckets: { s0: 2 } },
      });
      expect(await stats.get(queue, '2026-11-22')).toBeUndefined();
    });
  });
}
