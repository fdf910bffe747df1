import { UnrecoverableError } from '../../lib/errors';
import { DEBOUNCE_ABANDONED_MS } from '../../lib/policy/debounce-rules';
import { dueShardOf } from '../../lib/policy/due-times';
import type { JobStoreSettings } from '../../lib/policy/job-rules';
import { emptyDuration } from '../../lib/policy/stat-sums';
import { UNIQUE_RECORD_GRACE_MS } from '../../lib/policy/unique-rules';
import { dueJob, publishDebounced } from '../../lib/settle/debounce-cycles';
import { holdUniqueKey } from '../../lib/settle/unique-holds';
import type { LimitStore } from '../../lib/track/fleet-limits';
import { attemptsUsed, type ClaimHandBack, type ClaimResult, type JobRecord, type JobRef } from '../../lib/track/job-record';
import type { JobStore } from '../../lib/track/job-stores';
import type { QueueDayStats, StatsStore } from '../../lib/track/stats-store';

let unique = 0;
const ref = (overrides: Partial<JobRef> = {}): JobRef => ({
  jobId: `job-${Date.now()}-${++unique}`,
  task: 'send-email',
  payloadDigest: 'digest-a',
  queue: 'urgent',
  version: 'v1',
  publishedAt: 1000,
  ...overrides,
});
const claim = (store: JobStore, job: JobRef, now: number, worker = 'w1', leaseMs = 10_000) =>
  store.claim({ ...job, workerId: worker, now, leaseUntil: now + leaseMs });
const error = { type: 'Error', message: 'boom' };

/** The settings both stores are built with for the suite: a short history, so every write meets the cap. */
/** `listed`'s succeeded jobs carry the state index key (`listSucceeded`); every other queue's do not. */
export const CONFORMANCE_SETTINGS: JobStoreSettings = { historyLimit: 4, retentionDays: 7, listSucceeded: ['listed'] };
const LIMIT = CONFORMANCE_SETTINGS.historyLimit;

/** Claims and fails a job until its history is exactly at the limit; it is left `retrying`. */
async function retryingAtLimit(store: JobStore, job: JobRef): Promise<JobRecord> {
  let now = 100;
  for (;;) {
    const claimed = await claim(store, job, now++);
    if (claimed.outcome !== 'claimed') throw new Error(`not claimed: ${claimed.outcome}`);
    await store.complete({ jobId: job.jobId, token: claimed.token, state: 'retrying', error, workerId: 'w1', now: now++ }, claimed.record);
    const record = (await store.get(job.jobId)) as JobRecord;
    if (record.history.length >= LIMIT) {
      expect(record.history).toHaveLength(LIMIT);
      return record;
    }
  }
}

/** Every history entry kept, in order, ending with `last`, within the cap. */
function expectCapped(record: JobRecord | undefined, last: string): void {
  expect(record?.history.length).toBeLessThanOrEqual(LIMIT);
  expect(record?.history.at(-1)?.what).toBe(last);
  const whens = record?.history.map((h) => h.when) ?? [];
  expect(whens).toEqual([...whens].sort((a, b) => a - b));
}

/** The behaviour the dispatcher relies on from the jobs and stats tables; run on the fake and on dynalite. */
export function jobStoreConformance(
  label: string,
  setup: () => Promise<{ jobs: JobStore; stats: StatsStore; limits: LimitStore }>,
  teardown: () => Promise<void>,
): void {
  describe(`JobStore conformance: ${label}`, () => {
    let jobs: JobStore;
    let stats: StatsStore;
    let limits: LimitStore;
    beforeAll(async () => {
      ({ jobs, stats, limits } = await setup());
    });
    afterAll(teardown);

    it('keeps the payload its first claim brings; a later claim leaves it; the record as the claim returns it says the same', async () => {
      const job = ref();
      const first = await jobs.claim({ ...job, workerId: 'w1', now: 1000, leaseUntil: 11_000, payload: '{"n":1}' });
      if (first.outcome !== 'claimed') throw new Error(first.outcome);
      expect(first.record.payload).toBe('{"n":1}');
      await jobs.complete({ jobId: job.jobId, token: first.token, state: 'retrying', error, workerId: 'w1', now: 1001 }, first.record);
      const second = await jobs.claim({ ...job, workerId: 'w2', now: 2000, leaseUntil: 12_000, payload: '{"n":2}' });
      expect(second.outcome === 'claimed' && second.record.payload).toBe('{"n":1}');
      expect((await jobs.get(job.jobId))?.payload).toBe('{"n":1}');
      // A claim that brings none (a payload over the bound) keeps none.
      const other = ref();
      const bare = await claim(jobs, other, 3000);
      expect(bare.outcome === 'claimed' && bare.record.payload).toBeUndefined();
    });

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
      ).toEqual({ landed: true, dependents: [] });
      const again = await claim(jobs, job, 3000, 'w2');
      expect(again.outcome).toBe('finished');
      expect(again.record).toMatchObject({ state: 'succeeded', finishedAt: 2500, result: '{"ok":true}' });
      expect(again.record.leaseOwner).toBeUndefined();
      await jobs.recordDuplicate(job.jobId, job, 'w2', 3000);
      expect((await jobs.get(job.jobId))?.history.map((h) => h.what)).toEqual(['started', 'succeeded', 'skipped-duplicate']);
    });

    it('keeps a result’s size and its reference in the bucket when the result was too large for the record', async () => {
      const job = ref();
      const first = await claim(jobs, job, 2000);
      if (first.outcome !== 'claimed') throw new Error('not claimed');
      const resultRef = {
        bucket: 'app-v1-000000000000-us-east-1',
        key: `results/${job.jobId}/${'a'.repeat(64)}.json`,
        bytes: 5000,
        sha256: 'a'.repeat(64),
      };
      await jobs.complete(
        { jobId: job.jobId, token: first.token, state: 'succeeded', resultBytes: 5000, resultRef, workerId: 'w1', now: 2500 },
        first.record,
      );
      const read = await jobs.get(job.jobId);
      expect(read).toMatchObject({ state: 'succeeded', resultBytes: 5000, resultRef });
      expect(read?.result).toBeUndefined();
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
        (await jobs.complete({ jobId: job.jobId, token: fresh.token, state: 'succeeded', workerId: 'w2', now: 5500 }, fresh.record)).landed,
      ).toBe(true);
      expect(
        await jobs.complete(
          { jobId: job.jobId, token: stale.token, state: 'archived', reason: 'exhausted', error, workerId: 'w1', now: 6000 },
          stale.record,
        ),
      ).toMatchObject({ landed: false });
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

    it('keeps steps only for the token that holds the job, each in its place; a takeover sees them and goes on from there', async () => {
      const job = ref();
      const first = await claim(jobs, job, 2000, 'w1', 1000);
      if (first.outcome !== 'claimed') throw new Error('not claimed');
      expect(await jobs.keepStep(job.jobId, first.token, { index: 0, name: 'charge', result: '{"id":"c1"}' }, 2100)).toBe(true);
      // Out of place: a second write of step 1, or step 3 before step 2.
      expect(await jobs.keepStep(job.jobId, first.token, { index: 0, name: 'charge', result: '{"id":"c2"}' }, 2150)).toBe(false);
      expect(await jobs.keepStep(job.jobId, first.token, { index: 2, name: 'label' }, 2160)).toBe(false);
      expect(await jobs.keepStep(job.jobId, first.token, { index: 1, name: 'notify' }, 2200)).toBe(true);
      // The lease lapses; a takeover holds the job: the old token's step is refused, the new one's kept after the two.
      const second = await claim(jobs, job, 5000, 'w2', 1000);
      if (second.outcome !== 'claimed') throw new Error('not taken over');
      expect(second.record.steps?.map((s) => s.name)).toEqual(['charge', 'notify']);
      expect(await jobs.keepStep(job.jobId, first.token, { index: 2, name: 'label', result: '"zombie"' }, 5100)).toBe(false);
      expect(await jobs.keepStep(job.jobId, second.token, { index: 2, name: 'label', result: '"ok"' }, 5200)).toBe(true);
      expect((await jobs.get(job.jobId))?.steps).toEqual([
        { name: 'charge', result: '{"id":"c1"}', attempt: first.token, at: 2100 },
        { name: 'notify', attempt: first.token, at: 2200 },
        { name: 'label', result: '"ok"', attempt: second.token, at: 5200 },
      ]);
      // Ended, the job keeps no more steps.
      await jobs.complete({ jobId: job.jobId, token: second.token, state: 'succeeded', workerId: 'w2', now: 5500 }, second.record);
      expect(await jobs.keepStep(job.jobId, second.token, { index: 3, name: 'late' }, 5600)).toBe(false);
    });

    it('parks an attempt at a sleep and at a token wait, fenced; a token completes once; the sweep sends a token wait only at its timeout', async () => {
      const job = ref();
      const token = (index: number) => `${job.jobId}:${index}:abcdefghijklmnop`;
      const first = await claim(jobs, job, 2000, 'w1', 60_000);
      if (first.outcome !== 'claimed') throw new Error('not claimed');
      expect(await jobs.keepStep(job.jobId, first.token, { index: 0, name: 'charge', result: '"c1"' }, 2100)).toBe(true);
      const nap = {
        jobId: job.jobId,
        queue: job.queue,
        token: first.token,
        state: 'sleeping' as const,
        runAt: 100_000,
        body: 'BODY',
        step: { index: 1, name: 'nap', wait: { kind: 'sleep' as const, until: 100_000 } },
        detail: 'sleeps',
        history: first.record.history,
        workerId: 'w1',
        now: 2200,
      };
      // Out of place (step 3 before step 2), or a token that does not hold the job: refused.
      expect(await jobs.parkAttempt({ ...nap, step: { ...nap.step, index: 2 } })).toBe(false);
      expect(await jobs.parkAttempt({ ...nap, token: first.token + 1 })).toBe(false);
      expect(await jobs.parkAttempt(nap)).toBe(true);
      const asleep = await jobs.get(job.jobId);
      expect(asleep).toMatchObject({ state: 'sleeping', runAt: 100_000, parks: 1, attempt: first.token });
      expect(asleep?.leaseOwner).toBeUndefined();
      expect(asleep?.steps?.[1]).toEqual({ name: 'nap', attempt: first.token, at: 2200, wait: { kind: 'sleep', until: 100_000 } });
      expectCapped(asleep, 'sleeping');
      // The zombie's second park, and a heartbeat of its token, find the job no longer its.
      expect(await jobs.parkAttempt(nap)).toBe(false);
      expect(await jobs.extendLease(job.jobId, first.token, 90_000, 2300)).toBe(false);
      expect(await jobs.list({ state: 'sleeping', queues: [job.queue], limit: 1000 })).toEqual(
        expect.arrayContaining([expect.objectContaining({ jobId: job.jobId })]),
      );
      expect(await jobs.parkedJob(job.jobId)).toMatchObject({ jobId: job.jobId, body: 'BODY', runAt: 100_000 });
      // Not due: a copy's claim does not take it; due, it does, with its steps.
      expect((await claim(jobs, job, 50_000, 'w2')).outcome).not.toBe('claimed');
      const shard = dueShardOf(job.jobId);
      expect((await jobs.dueJobs(shard, 100_000, 99_000, 1000)).map((d) => d.jobId)).toContain(job.jobId);
      const second = await claim(jobs, job, 100_000, 'w2', 60_000);
      if (second.outcome !== 'claimed') throw new Error(`not claimed when due: ${second.outcome}`);
      expect(second.record.steps?.map((s) => s.name)).toEqual(['charge', 'nap']);
      expect(second.record.parks).toBe(1);

      // A token wait: its step kept first (with the token), then the park names that token.
      const approve = { kind: 'token' as const, forMs: 60_000, token: token(2) };
      expect(await jobs.keepStep(job.jobId, second.token, { index: 2, name: 'approve', wait: approve }, 100_100)).toBe(true);
      const waiting = {
        ...nap,
        token: second.token,
        state: 'waiting-token' as const,
        runAt: 200_000,
        history: second.record.history,
        now: 100_200,
      };
      const { step: _step, ...withoutStep } = waiting;
      expect(await jobs.parkAttempt({ ...withoutStep, waitToken: token(1) })).toBe(false);
      expect(await jobs.parkAttempt({ ...withoutStep, waitToken: token(2) })).toBe(true);
      expect(await jobs.get(job.jobId)).toMatchObject({ state: 'waiting-token', waitToken: token(2), parks: 2, runAt: 200_000 });
      // The sweep reads it only at its timeout: until then a completion may resume it.
      expect((await jobs.dueJobs(shard, 200_000, 150_000, 1000)).map((d) => d.jobId)).not.toContain(job.jobId);
      expect(await jobs.completeToken(`${job.jobId}:2:zzzzzzzzzzzzzzzz`, '"no"', 150_000)).toEqual({ outcome: 'unknown' });
      expect(await jobs.completeToken('not a token', '"no"', 150_000)).toEqual({ outcome: 'unknown' });
      const completed = await jobs.completeToken(token(2), '"yes"', 150_000);
      expect(completed).toMatchObject({
        outcome: 'completed',
        jobId: job.jobId,
        parked: { jobId: job.jobId, runAt: 150_000, body: 'BODY' },
      });
      expect(await jobs.completeToken(token(2), '"again"', 150_100)).toEqual({
        outcome: 'completed-already',
        jobId: job.jobId,
        completedAt: 150_000,
        value: '"yes"',
      });
      const resumed = await jobs.get(job.jobId);
      expect(resumed?.steps?.[2]).toMatchObject({ name: 'approve', completedAt: 150_000, result: '"yes"', wait: { token: token(2) } });
      expect((await jobs.dueJobs(shard, 150_000, 150_000, 1000)).map((d) => d.jobId)).toContain(job.jobId);
      const third = await claim(jobs, job, 150_500, 'w3', 60_000);
      if (third.outcome !== 'claimed') throw new Error(`not claimed after the completion: ${third.outcome}`);
      // Running again: a late completion of the same token is refused as completed already.
      expect((await jobs.completeToken(token(2), '"late"', 151_000)).outcome).toBe('completed-already');

      // Another job's wait that timed out (claimed at its timeout): its token's completion is refused.
      const other = ref();
      const o1 = await claim(jobs, other, 2000, 'w1', 60_000);
      if (o1.outcome !== 'claimed') throw new Error('not claimed');
      const otherToken = `${other.jobId}:0:abcdefghijklmnop`;
      await jobs.keepStep(other.jobId, o1.token, { index: 0, name: 'ok?', wait: { kind: 'token', forMs: 1000, token: otherToken } }, 2100);
      expect(
        await jobs.parkAttempt({
          ...withoutStep,
          jobId: other.jobId,
          token: o1.token,
          waitToken: otherToken,
          runAt: 3100,
          history: o1.record.history,
          now: 2100,
        }),
      ).toBe(true);
      expect((await jobs.dueJobs(dueShardOf(other.jobId), 3100, 3100, 1000)).map((d) => d.jobId)).toContain(other.jobId);
      expect((await claim(jobs, other, 3200, 'w2')).outcome).toBe('claimed');
      expect(await jobs.completeToken(otherToken, '"too late"', 3300)).toEqual({
        outcome: 'not-waiting',
        jobId: other.jobId,
        state: 'running',
      });

      // A continuation keeps no step: parked due now, its steps as they were.
      const hauler = ref();
      const h1 = await claim(jobs, hauler, 2000);
      if (h1.outcome !== 'claimed') throw new Error('not claimed');
      expect(await jobs.keepStep(hauler.jobId, h1.token, { index: 0, name: 'part-1' }, 2100)).toBe(true);
      const { step: _none, ...continuation } = nap;
      expect(
        await jobs.parkAttempt({
          ...continuation,
          jobId: hauler.jobId,
          token: h1.token,
          runAt: 2200,
          history: h1.record.history,
          now: 2200,
        }),
      ).toBe(true);
      expect(await jobs.get(hauler.jobId)).toMatchObject({ state: 'sleeping', runAt: 2200, parks: 1, steps: [{ name: 'part-1' }] });
      expect((await claim(jobs, hauler, 2300, 'w2')).outcome).toBe('claimed');

      // A sleeping job is cancelled like a parked one: it never runs.
      const sleeper = ref();
      const s1 = await claim(jobs, sleeper, 2000);
      if (s1.outcome !== 'claimed') throw new Error('not claimed');
      await jobs.parkAttempt({
        ...nap,
        jobId: sleeper.jobId,
        token: s1.token,
        step: { ...nap.step, index: 0 },
        history: s1.record.history,
      });
      expect(await jobs.cancel(sleeper.jobId, 3000)).toMatchObject({ outcome: 'cancelled', record: { state: 'cancelled' } });
      expect(await jobs.parkedJob(sleeper.jobId)).toBeUndefined();
      expect((await claim(jobs, sleeper, 200_000, 'w2')).outcome).toBe('finished');
    });

    it('completes a token its running attempt kept but has not parked on yet: the park is then refused, and the value kept', async () => {
      const job = ref();
      const token = `${job.jobId}:0:abcdefghijklmnop`;
      const first = await claim(jobs, job, 2000, 'w1', 60_000);
      if (first.outcome !== 'claimed') throw new Error('not claimed');
      expect(
        await jobs.keepStep(job.jobId, first.token, { index: 0, name: 'ok?', wait: { kind: 'token', forMs: 60_000, token } }, 2100),
      ).toBe(true);
      // Completed while the attempt settles: landed, nothing to send (the job is not parked).
      expect(await jobs.completeToken(token, '"early"', 2150)).toEqual({ outcome: 'completed', jobId: job.jobId });
      expect((await jobs.get(job.jobId))?.steps?.[0]).toMatchObject({ completedAt: 2150, result: '"early"' });
      const park = {
        jobId: job.jobId,
        queue: job.queue,
        token: first.token,
        state: 'waiting-token' as const,
        runAt: 62_100,
        body: 'BODY',
        waitToken: token,
        detail: 'waits',
        history: first.record.history,
        workerId: 'w1',
        now: 2200,
      };
      // The park on a completed wait does not land: the attempt still holds the job.
      expect(await jobs.parkAttempt(park)).toBe(false);
      expect(await jobs.get(job.jobId)).toMatchObject({ state: 'running', attempt: first.token });
      expect((await jobs.completeToken(token, '"again"', 2300)).outcome).toBe('completed-already');
    });

    it('writes progress with a lease extension of the token that holds the job', async () => {
      const job = ref();
      const first = await claim(jobs, job, 2000);
      if (first.outcome !== 'claimed') throw new Error('not claimed');
      expect(await jobs.extendLease(job.jobId, first.token, 9000, 2500, { json: '{"done":3}', at: 2400 })).toBe(true);
      expect(await jobs.get(job.jobId)).toMatchObject({ state: 'running', leaseUntil: 9000, progress: '{"done":3}', progressAt: 2400 });
      expect(await jobs.extendLease(job.jobId, first.token + 1, 9000, 2600, { json: '{"done":4}', at: 2600 })).toBe(false);
      expect(await jobs.get(job.jobId)).toMatchObject({ progress: '{"done":3}' });
    });

    it('a running job asked to stop: its lease is no longer extended, the cancellations item lists it, its token ends it cancelled', async () => {
      const job = ref();
      const first = await claim(jobs, job, 2000, 'w1', 60_000);
      if (first.outcome !== 'claimed') throw new Error('not claimed');
      const before = await jobs.cancellations();
      const asked = await jobs.cancel(job.jobId, 2100);
      expect(asked).toMatchObject({ outcome: 'requested', record: { state: 'running', cancelRequestedAt: 2100 } });
      // Asked again: the same request (kept as first asked), written again.
      expect(await jobs.cancel(job.jobId, 2200)).toMatchObject({ outcome: 'requested', record: { cancelRequestedAt: 2100 } });
      const seen = await jobs.cancellations();
      expect(seen.version).toBeGreaterThan(before.version);
      expect(seen.requests[job.jobId]).toBe(2100);
      expect(await jobs.extendLease(job.jobId, first.token, 90_000, 2300)).toBe(false);
      expect((await claim(jobs, job, 3000, 'w2')).outcome).toBe('leased');
      const ended = await jobs.complete(
        { jobId: job.jobId, token: first.token, state: 'cancelled', error, workerId: 'w1', now: 2400 },
        (await jobs.get(job.jobId)) as JobRecord,
      );
      expect(ended.landed).toBe(true);
      expect(await jobs.get(job.jobId)).toMatchObject({ state: 'cancelled', finishedAt: 2400, cancelRequestedAt: 2100 });
      expect((await jobs.get(job.jobId))?.history.at(-1)).toMatchObject({ what: 'cancelled', attempt: first.token });
      expect(await jobs.list({ state: 'cancelled', queues: [job.queue], limit: 1000 })).toEqual(
        expect.arrayContaining([expect.objectContaining({ jobId: job.jobId })]),
      );
      expect((await claim(jobs, job, 90_000, 'w3')).outcome).toBe('finished');
      expect(await jobs.cancel(job.jobId, 2500)).toMatchObject({ outcome: 'not-scheduled', record: { state: 'cancelled' } });
    });

    /** A hand-back of `claimed`'s claim (its first start unless told), at `now`. */
    const handBackOf = (
      job: { jobId: string },
      claimed: { token: number; record: JobRecord },
      now: number,
      over: Partial<ClaimHandBack> = {},
    ) => ({
      jobId: job.jobId,
      token: claimed.token,
      detail: 'stop',
      firstStart: true,
      history: claimed.record.history,
      workerId: 'w1',
      now,
      ...over,
    });

    it('hands a claim back unstarted: queued, no lease, no attempt used; the next claim lands at once; a stale token is refused', async () => {
      const job = ref();
      const first = await claim(jobs, job, 2000, 'w1', 60_000);
      if (first.outcome !== 'claimed') throw new Error('not claimed');
      // Not the token that holds it: refused, the lease stands.
      expect(await jobs.handBackClaim(handBackOf(job, first, 2100, { token: first.token + 1 }))).toBe(false);
      expect((await claim(jobs, job, 2150, 'w2')).outcome).toBe('leased');
      expect(await jobs.handBackClaim(handBackOf(job, first, 2200))).toBe(true);
      const back = (await jobs.get(job.jobId)) as JobRecord;
      expect(back).toMatchObject({ state: 'queued', attempt: 1, parks: 1 });
      expect(back.leaseOwner).toBeUndefined();
      expect(back.leaseUntil).toBeUndefined();
      // No body started: the job has no first start until one does.
      expect(back.firstStartedAt).toBeUndefined();
      expect(back.history.at(-1)).toMatchObject({ what: 'handed-back', attempt: 1, worker: 'w1', detail: 'stop', when: 2200 });
      // Its lease (60 s) is gone: the next delivery claims it now, and has used one attempt only.
      const second = await claim(jobs, job, 2300, 'w2');
      expect(second.outcome === 'claimed' && second.token).toBe(2);
      expect(second.outcome === 'claimed' && attemptsUsed(second.record)).toBe(1);
      expect(second.outcome === 'claimed' && second.record.firstStartedAt).toBe(2300);
      // Handed back twice is refused: the token no longer holds it.
      expect(await jobs.handBackClaim(handBackOf(job, first, 2400, { detail: 'again' }))).toBe(false);
      if (second.outcome !== 'claimed') return;
      await jobs.complete({ jobId: job.jobId, token: second.token, state: 'succeeded', workerId: 'w2', now: 2500 }, second.record);
      // An ended job is not handed back.
      expect(await jobs.handBackClaim(handBackOf(job, second, 2600, { detail: 'late', firstStart: false, workerId: 'w2' }))).toBe(false);
      expect(await jobs.get(job.jobId)).toMatchObject({ state: 'succeeded' });
    });

    it('keeps the attempts a handed-back claim counted when it parks in its key line: neither given back nor taken', async () => {
      const job = ref();
      // Far ahead of the other tests' times, apart in the shared due index.
      const at = 4_100_000_000_000;
      const first = await claim(jobs, job, at);
      if (first.outcome !== 'claimed') throw new Error('not claimed');
      await jobs.complete(
        { jobId: job.jobId, token: 1, state: 'retrying', error, workerId: 'w1', now: at + 10, retryAt: at + 20 },
        first.record,
      );
      const second = await claim(jobs, job, at + 20);
      if (second.outcome !== 'claimed') throw new Error('not claimed again');
      expect(await jobs.handBackClaim(handBackOf(job, second, at + 30, { firstStart: false }))).toBe(true);
      // One attempt used (the failure); the handed-back claim used none.
      expect(attemptsUsed((await jobs.get(job.jobId)) as JobRecord)).toBe(1);
      const parked = await jobs.park({ ...job, runAt: at + 1000, body: '{}', workerId: 'w2', now: at + 40, overKeyLimit: 2 });
      expect(parked).toEqual({ outcome: 'parked' });
      const waiting = (await jobs.get(job.jobId)) as JobRecord;
      expect(waiting.state).toBe('waiting-key');
      expect(attemptsUsed(waiting)).toBe(1);
      // Woken, its claim is its second attempt used, never a negative or a first one.
      const third = await claim(jobs, job, at + 1000, 'w2');
      expect(third.outcome === 'claimed' && attemptsUsed(third.record)).toBe(2);
    });

    it('hands back a claim after a cancel was asked: the next claim finds the cancel and ends the job so', async () => {
      const job = ref();
      const first = await claim(jobs, job, 2000, 'w1', 60_000);
      if (first.outcome !== 'claimed') throw new Error('not claimed');
      expect(await jobs.cancel(job.jobId, 2100)).toMatchObject({ outcome: 'requested' });
      expect(await jobs.handBackClaim(handBackOf(job, first, 2200))).toBe(true);
      const second = await claim(jobs, job, 2300, 'w2');
      expect(second).toMatchObject({ outcome: 'claimed', record: { cancelRequestedAt: 2100 } });
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

    it('counts the re-runs a body asked for (retryAfter) on the record, and a claim answers with the count', async () => {
      const job = ref();
      let claimed = await claim(jobs, job, 2000);
      for (let run = 1; run <= 2; run++) {
        if (claimed.outcome !== 'claimed') throw new Error(`not claimed: ${claimed.outcome}`);
        const now = 2000 + run * 1000;
        const c = {
          jobId: job.jobId,
          token: claimed.token,
          state: 'retrying',
          error,
          workerId: 'w1',
          now: now + 100,
          retryAt: now + 500,
        } as const;
        expect(await jobs.complete({ ...c, retryAfter: true }, claimed.record)).toMatchObject({ landed: true });
        // The same completion sent again (the attempt's token no longer runs) counts nothing more.
        await jobs.complete({ ...c, retryAfter: true }, claimed.record);
        expect((await jobs.get(job.jobId))?.retryAfters).toBe(run);
        claimed = await claim(jobs, job, now + 500);
      }
      if (claimed.outcome !== 'claimed') throw new Error('not claimed');
      expect(claimed.token).toBe(3);
      expect(claimed.record.retryAfters).toBe(2);
      const record = await jobs.get(job.jobId);
      expect(record).toMatchObject({ retryAfters: 2, attempt: 3, state: 'running' });
      expect(record?.history.filter((h) => h.what === 'retry-after').map((h) => h.attempt)).toEqual([1, 2]);
      expect(record?.history.find((h) => h.what === 'retry-after')?.detail).toMatch(/^asked to run again after /);
      // An ordinary retry counts nothing.
      await jobs.complete(
        { jobId: job.jobId, token: 3, state: 'retrying', error, workerId: 'w1', now: 9000, retryAt: 9500 },
        claimed.record,
      );
      expect(await jobs.get(job.jobId)).toMatchObject({ retryAfters: 2, state: 'retrying' });
    });

    it('answers a claim with the record as written: new (with every optional field), queued, retrying, announced, taken over', async () => {
      // Entries are compared without their attempt: a store may know it only once the claim is written.
      const bare = (r: JobRecord | undefined) => r && { ...r, history: r.history.map(({ attempt: _attempt, ...entry }) => entry) };
      const sameAsRead = async (claimed: Promise<ClaimResult>) => {
        const result = await claimed;
        if (result.outcome !== 'claimed') throw new Error(`not claimed: ${result.outcome}`);
        expect(bare(result.record)).toEqual(bare(await jobs.get(result.record.jobId)));
        return result;
      };
      const extras = {
        claimId: 'claim-1',
        memberOf: { id: `fan-${++unique}`, size: 3, index: 1 },
        event: { id: 'evt-1', name: 'orders.created', emittedAt: 900 },
        tags: ['tag-a'],
        startBy: 50_000,
      };
      const fresh = ref({ tags: extras.tags, startBy: extras.startBy });
      await sameAsRead(jobs.claim({ ...fresh, ...extras, workerId: 'w1', now: 2000, leaseUntil: 12_000 }));
      const queued = ref({ publishedAt: 700 });
      await jobs.recordQueued(queued, 800);
      await sameAsRead(jobs.claim({ ...queued, publishedAt: 1000, workerId: 'w1', now: 2000, leaseUntil: 12_000, claimId: 'claim-2' }));
      const retried = ref();
      const first = await sameAsRead(claim(jobs, retried, 2000));
      await jobs.complete({ jobId: retried.jobId, token: 1, state: 'retrying', error, workerId: 'w1', now: 2100 }, first.record);
      await sameAsRead(claim(jobs, retried, 3000, 'w2'));
      const announced = ref();
      await jobs.recordScheduled({ ...announced, runAt: 5000 }, 1500);
      await sameAsRead(claim(jobs, announced, 5000));
      const lapsed = ref();
      await sameAsRead(jobs.claim({ ...lapsed, workerId: 'w1', now: 2000, leaseUntil: 2001, claimId: 'claim-3' }));
      const taken = await sameAsRead(jobs.claim({ ...lapsed, workerId: 'w2', now: 3000, leaseUntil: 13_000 }));
      expect(taken.record).toMatchObject({ attempt: 2, leaseOwner: 'w2', firstStartedAt: 2000 });
      expect(taken.record.leaseClaim).toBeUndefined();
    });

    it('answers a claim that expects no record as the full claim does, whatever record it finds', async () => {
      const expecting = (job: JobRef, now: number, worker = 'w1', leaseMs = 10_000) =>
        jobs.claim({ ...job, workerId: worker, now, leaseUntil: now + leaseMs, expectNew: true });
      // None: the record a full claim writes, read back as answered.
      const extras = { claimId: 'claim-new', memberOf: { id: `fan-${++unique}`, size: 2, index: 0 }, payload: '{"n":1}' };
      const fresh = ref({ tags: ['tag-a'], startBy: 60_000, key: 'k-1' });
      const created = await jobs.claim({ ...fresh, ...extras, workerId: 'w1', now: 2000, leaseUntil: 12_000, expectNew: true });
      const full = ref({ tags: ['tag-a'], startBy: 60_000, key: 'k-1' });
      const plain = await jobs.claim({ ...full, ...extras, workerId: 'w1', now: 2000, leaseUntil: 12_000 });
      if (created.outcome !== 'claimed' || plain.outcome !== 'claimed') throw new Error('not claimed');
      expect(created.token).toBe(1);
      const read = await jobs.get(fresh.jobId);
      expect(read).toMatchObject({
        state: 'running',
        attempt: 1,
        leaseClaim: 'claim-new',
        payload: '{"n":1}',
        key: 'k-1',
        tags: ['tag-a'],
      });
      expect({ ...read, jobId: 'x' }).toEqual({ ...(await jobs.get(full.jobId)), jobId: 'x' });
      // Queued by its publisher: claimed from queued.
      const queued = ref();
      await jobs.recordQueued(queued, 500);
      const fromQueued = await expecting(queued, 2000);
      expect(fromQueued).toMatchObject({ outcome: 'claimed', token: 1 });
      expect((await jobs.get(queued.jobId))?.history.map((h) => h.what)).toEqual(['queued', 'started']);
      // Held by a live worker: leased; its lease lapsed: taken over with the next token.
      const held = ref();
      await claim(jobs, held, 2000, 'w1', 1000);
      expect(await expecting(held, 2500, 'w2')).toMatchObject({ outcome: 'leased', record: { leaseOwner: 'w1' } });
      expect(await expecting(held, 4000, 'w2')).toMatchObject({ outcome: 'claimed', token: 2, record: { leaseOwner: 'w2' } });
      // Retrying: the next attempt.
      const retried = ref();
      const first = await claim(jobs, retried, 2000);
      if (first.outcome !== 'claimed') throw new Error('not claimed');
      await jobs.complete({ jobId: retried.jobId, token: 1, state: 'retrying', error, workerId: 'w1', now: 2100 }, first.record);
      expect(await expecting(retried, 3000)).toMatchObject({ outcome: 'claimed', token: 2 });
      // Finished: a duplicate.
      const done = ref();
      const ran = await claim(jobs, done, 2000);
      if (ran.outcome !== 'claimed') throw new Error('not claimed');
      await jobs.complete({ jobId: done.jobId, token: 1, state: 'succeeded', workerId: 'w1', now: 2100 }, ran.record);
      expect(await expecting(done, 3000)).toMatchObject({ outcome: 'finished', record: { state: 'succeeded' } });
      // Another job's id: a conflict, the record left as it was.
      const owner = ref();
      await jobs.recordQueued(owner, 500);
      const before = await jobs.get(owner.jobId);
      expect(await expecting({ ...owner, payloadDigest: 'digest-other' }, 2000)).toMatchObject({ outcome: 'conflict' });
      expect(await jobs.get(owner.jobId)).toEqual(before);
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
        // The claim's own answer is capped too: the completion writes its history from it.
        expect(record.record.history.length).toBeLessThanOrEqual(LIMIT);
      }
      expectCapped(await jobs.get(job.jobId), 'started');
    });

    describe('the history cap holds after every write', () => {
      it('claim', async () => {
        const job = ref();
        await retryingAtLimit(jobs, job);
        expect((await claim(jobs, job, 10_000)).outcome).toBe('claimed');
        expectCapped(await jobs.get(job.jobId), 'started');
      });

      it('take-over of a lapsed lease', async () => {
        const job = ref();
        await retryingAtLimit(jobs, job);
        await claim(jobs, job, 10_000, 'w1', 10);
        expect((await claim(jobs, job, 20_000, 'w2')).outcome).toBe('claimed');
        expectCapped(await jobs.get(job.jobId), 'took-over');
      });

      it('completion', async () => {
        const job = ref();
        await retryingAtLimit(jobs, job);
        const claimed = await claim(jobs, job, 10_000);
        if (claimed.outcome !== 'claimed') throw new Error('not claimed');
        await jobs.complete({ jobId: job.jobId, token: claimed.token, state: 'succeeded', workerId: 'w1', now: 10_001 }, claimed.record);
        expectCapped(await jobs.get(job.jobId), 'succeeded');
      });

      it('hand-back of a claim', async () => {
        const job = ref();
        await retryingAtLimit(jobs, job);
        const claimed = await claim(jobs, job, 10_000);
        if (claimed.outcome !== 'claimed') throw new Error('not claimed');
        const handBack = {
          jobId: job.jobId,
          token: claimed.token,
          detail: 'stop',
          firstStart: false,
          history: claimed.record.history,
          workerId: 'w1',
          now: 10_001,
        };
        expect(await jobs.handBackClaim(handBack)).toBe(true);
        expectCapped(await jobs.get(job.jobId), 'handed-back');
        // A retry's claim handed back leaves the first attempt's start as it was.
        expect((await jobs.get(job.jobId))?.firstStartedAt).toBe(claimed.record.firstStartedAt);
        expect(claimed.record.firstStartedAt).toBeLessThan(10_000);
      });

      it('unclaimed failure and success', async () => {
        const job = ref();
        await retryingAtLimit(jobs, job);
        expect(await jobs.recordUnclaimed({ ...job, state: 'retrying', attempt: 9, error, workerId: 'w', now: 10_000 })).toBe('recorded');
        expectCapped(await jobs.get(job.jobId), 'retrying');
        expect(await jobs.recordUnclaimed({ ...job, state: 'succeeded', attempt: 10, workerId: 'w', now: 10_001 })).toBe('recorded');
        expectCapped(await jobs.get(job.jobId), 'succeeded');
      });

      it('duplicate deliveries and replay', async () => {
        const job = ref();
        await retryingAtLimit(jobs, job);
        expect(
          await jobs.recordUnclaimed({ ...job, state: 'archived', reason: 'exhausted', attempt: 9, error, workerId: 'w', now: 10_000 }),
        ).toBe('recorded');
        for (let i = 1; i <= LIMIT + 2; i++) await jobs.recordDuplicate(job.jobId, job, 'w2', 10_000 + i);
        expectCapped(await jobs.get(job.jobId), 'skipped-duplicate');
        expect(await jobs.resetForReplay(job.jobId, job, 20_000)).toBe(true);
        expectCapped(await jobs.get(job.jobId), 'queued');
      });
    });

    describe('a job id names one job: task and payload fixed by its first record', () => {
      const other = { task: 'charge-card', payloadDigest: 'digest-a' };
      const otherPayload = { task: 'send-email', payloadDigest: 'digest-b' };

      it.each([
        ['another task', other],
        ['the same task with another payload', otherPayload],
      ])('a claim for %s while the job retries is a conflict and changes nothing', async (_what, intruder) => {
        const job = ref();
        const before = await retryingAtLimit(jobs, job);
        const result = await claim(jobs, { ...job, ...intruder }, 10_000, 'w9');
        expect(result.outcome).toBe('conflict');
        expect(result.record).toMatchObject({ task: job.task, payloadDigest: job.payloadDigest, state: 'retrying' });
        expect(await jobs.get(job.jobId)).toEqual(before);
        // The job itself still claims as usual.
        expect((await claim(jobs, job, 10_001)).outcome).toBe('claimed');
      });

      it('is a conflict against a queued, a running (even lapsed) and a finished job', async () => {
        const queued = ref();
        await jobs.recordQueued(queued, 1);
        expect((await claim(jobs, { ...queued, ...other }, 2)).outcome).toBe('conflict');
        expect(await jobs.get(queued.jobId)).toMatchObject({ state: 'queued', task: queued.task, attempt: 0 });

        const running = ref();
        await claim(jobs, running, 1, 'w1', 10);
        const before = await jobs.get(running.jobId);
        expect((await claim(jobs, { ...running, ...other }, 5000, 'w2')).outcome).toBe('conflict');
        expect(await jobs.get(running.jobId)).toEqual(before);

        const finished = ref();
        const first = await claim(jobs, finished, 1);
        if (first.outcome !== 'claimed') throw new Error('not claimed');
        await jobs.complete({ jobId: finished.jobId, token: 1, state: 'succeeded', workerId: 'w1', now: 2 }, first.record);
        const done = await jobs.get(finished.jobId);
        expect((await claim(jobs, { ...finished, ...otherPayload }, 3)).outcome).toBe('conflict');
        await jobs.recordDuplicate(finished.jobId, otherPayload, 'w2', 4);
        expect(await jobs.get(finished.jobId)).toEqual(done);
        // The same job again is a duplicate, as before.
        expect((await claim(jobs, finished, 5)).outcome).toBe('finished');
      });

      it('unclaimed outcomes of another job leave the record alone', async () => {
        const job = ref({ queue: 'routine' });
        await jobs.recordUnclaimed({ ...job, state: 'retrying', attempt: 1, error, workerId: 'w', now: 10 });
        const before = await jobs.get(job.jobId);
        expect(
          await jobs.recordUnclaimed({
            ...job,
            ...other,
            state: 'archived',
            reason: 'exhausted',
            attempt: 5,
            error,
            workerId: 'x',
            now: 20,
          }),
        ).toBe('conflict');
        expect(await jobs.recordUnclaimed({ ...job, ...otherPayload, state: 'succeeded', attempt: 5, workerId: 'x', now: 20 })).toBe(
          'conflict',
        );
        expect(await jobs.get(job.jobId)).toEqual(before);
      });

      it('a success without a claim ends only a record that failed before, and creates none', async () => {
        const fresh = ref({ queue: 'routine' });
        expect(await jobs.recordUnclaimed({ ...fresh, state: 'succeeded', attempt: 1, workerId: 'w', now: 10 })).toBe('ignored');
        expect(await jobs.get(fresh.jobId)).toBeUndefined();
        const retried = ref({ queue: 'routine' });
        await jobs.recordUnclaimed({ ...retried, state: 'retrying', attempt: 1, error, workerId: 'w', now: 10 });
        expect(await jobs.recordUnclaimed({ ...retried, state: 'succeeded', attempt: 2, workerId: 'w', now: 20 })).toBe('recorded');
        expect(await jobs.get(retried.jobId)).toMatchObject({ state: 'succeeded', attempt: 2, finishedAt: 20 });
        expect(await jobs.list({ state: 'retrying', queues: ['routine'], limit: 100 })).not.toContainEqual(
          expect.objectContaining({ jobId: retried.jobId }),
        );
      });

      it('replay resets only the job the archive names', async () => {
        const job = ref();
        await jobs.recordUnclaimed({ ...job, state: 'archived', reason: 'exhausted', attempt: 3, error, workerId: 'w', now: 10 });
        const before = await jobs.get(job.jobId);
        expect(await jobs.resetForReplay(job.jobId, other, 20)).toBe(false);
        expect(await jobs.get(job.jobId)).toEqual(before);
      });
    });

    it('records a rejected message once, under its own id, and never over an existing record', async () => {
      const messageId = `msg-${++unique}`;
      const rejection = {
        jobId: messageId,
        task: 'ghost',
        payloadDigest: 'digest-g',
        queue: 'urgent',
        version: 'v1',
        publishedAt: 5,
        reason: 'unknown-task' as const,
        error: { type: 'UnknownTaskError', message: 'no ghost' },
        envelopeId: 'job-x',
        attempt: 1,
        workerId: 'w',
        now: 50,
      };
      expect(await jobs.recordRejected(rejection)).toBe(true);
      expect(await jobs.get(messageId)).toMatchObject({
        state: 'archived',
        reason: 'unknown-task',
        task: 'ghost',
        envelopeId: 'job-x',
        finishedAt: 50,
      });
      expect(await jobs.recordRejected({ ...rejection, now: 60 })).toBe(false);
      expect((await jobs.get(messageId))?.history).toHaveLength(1);
      const job = ref();
      await claim(jobs, job, 1);
      const before = await jobs.get(job.jobId);
      expect(await jobs.recordRejected({ ...rejection, jobId: job.jobId })).toBe(false);
      expect(await jobs.get(job.jobId)).toEqual(before);
      expect((await jobs.list({ state: 'archived', queues: ['urgent'], limit: 100 })).map((r) => r.jobId)).toContain(messageId);
    });

    describe('the archive fence: one send per archived message', () => {
      const rejected = (messageId: string, holder: string, until: number) => ({
        jobId: messageId,
        task: '',
        payloadDigest: '',
        queue: 'urgent',
        version: 'v1',
        publishedAt: 5,
        reason: 'malformed' as const,
        error: { type: 'EnvelopeError', message: 'not json' },
        attempt: 1,
        workerId: 'w',
        now: 50,
        archiving: { holder, until },
      });

      it('a rejection opens it; another holder finds it held until it lapses, then takes it over; only its holder closes it', async () => {
        const messageId = `msg-${++unique}`;
        expect(await jobs.recordRejected(rejected(messageId, 'first', 1_000))).toBe(true);
        expect(await jobs.get(messageId)).toMatchObject({ state: 'archived', archiveHolder: 'first', archiveUntil: 1_000 });
        // A second dispatcher's copy while the first holds it: handed back until the lease ends, nothing written.
        expect(await jobs.recordRejected(rejected(messageId, 'second', 2_000))).toBe(false);
        expect(await jobs.takeArchive(messageId, { holder: 'second', until: 2_000 }, 900)).toEqual({ outcome: 'held', until: 1_000 });
        expect(await jobs.get(messageId)).toMatchObject({ archiveHolder: 'first', archiveUntil: 1_000 });
        // Its own take again (the SDK's retry after a lost answer) is its own.
        expect(await jobs.takeArchive(messageId, { holder: 'first', until: 1_000 }, 900)).toEqual({ outcome: 'taken' });
        // The first died before its send: once its lease lapsed, the second takes over.
        expect(await jobs.takeArchive(messageId, { holder: 'second', until: 2_000 }, 1_001)).toEqual({ outcome: 'taken' });
        expect(await jobs.get(messageId)).toMatchObject({ archiveHolder: 'second', archiveUntil: 2_000 });
        expect(await jobs.markArchived(messageId, 'first')).toBe(false);
        expect(await jobs.markArchived(messageId, 'second')).toBe(true);
        const closed = await jobs.get(messageId);
        expect(closed).toMatchObject({ state: 'archived', reason: 'malformed', finishedAt: 50 });
        expect(closed).not.toHaveProperty('archiveHolder');
        expect(closed).not.toHaveProperty('archiveUntil');
        expect(closed?.history.map((h) => h.what)).toEqual(['archived']);
        // Closed: every later copy is only deleted, however late.
        expect(await jobs.takeArchive(messageId, { holder: 'third', until: 9_000 }, 5_000)).toEqual({ outcome: 'sent' });
        expect(await jobs.markArchived(messageId, 'second')).toBe(false);
      });

      it('a holder whose send failed ends its lease at once, the fence left open: the next copy takes it over; no other holder may', async () => {
        const messageId = `msg-${++unique}`;
        expect(await jobs.recordRejected(rejected(messageId, 'first', 10_000))).toBe(true);
        expect(await jobs.lapseArchive(messageId, 'second', 100)).toBe(false);
        expect(await jobs.takeArchive(messageId, { holder: 'second', until: 20_000 }, 200)).toEqual({ outcome: 'held', until: 10_000 });
        expect(await jobs.lapseArchive(messageId, 'first', 100)).toBe(true);
        expect(await jobs.get(messageId)).toMatchObject({ state: 'archived', archiveHolder: 'first', archiveUntil: 100 });
        expect(await jobs.takeArchive(messageId, { holder: 'second', until: 20_000 }, 200)).toEqual({ outcome: 'taken' });
        // Taken over: the first may no longer lapse or close it.
        expect(await jobs.lapseArchive(messageId, 'first', 300)).toBe(false);
        expect(await jobs.markArchived(messageId, 'second')).toBe(true);
        expect(await jobs.lapseArchive(messageId, 'second', 400)).toBe(false);
        expect(await jobs.get(messageId)).not.toHaveProperty('archiveUntil');
        expect(await jobs.lapseArchive(`msg-${++unique}`, 'first', 100)).toBe(false);
      });

      it('a record without a fence, or no record, is taken as sent and left unchanged', async () => {
        const job = ref();
        const claimed = await claim(jobs, job, 10);
        if (claimed.outcome !== 'claimed') throw new Error('not claimed');
        await jobs.complete({ jobId: job.jobId, token: claimed.token, state: 'succeeded', workerId: 'w1', now: 11 }, claimed.record);
        const before = await jobs.get(job.jobId);
        expect(await jobs.takeArchive(job.jobId, { holder: 'h', until: 100 }, 12)).toEqual({ outcome: 'sent' });
        expect(await jobs.get(job.jobId)).toEqual(before);
        expect(await jobs.takeArchive(`msg-${++unique}`, { holder: 'h', until: 100 }, 12)).toEqual({ outcome: 'sent' });
        expect(await jobs.markArchived(job.jobId, 'h')).toBe(false);
      });

      it('a claimed attempt archived with its fence: open on the ended record, closed by its holder', async () => {
        const job = ref();
        const claimed = await claim(jobs, job, 10);
        if (claimed.outcome !== 'claimed') throw new Error('not claimed');
        const completed = await jobs.complete(
          {
            jobId: job.jobId,
            token: claimed.token,
            state: 'archived',
            reason: 'exhausted',
            error,
            workerId: 'w1',
            now: 20,
            archiving: { holder: 'a', until: 500 },
          },
          claimed.record,
        );
        expect(completed.landed).toBe(true);
        expect(await jobs.get(job.jobId)).toMatchObject({ state: 'archived', reason: 'exhausted', archiveHolder: 'a', archiveUntil: 500 });
        // Its message's next delivery finds the job ended: the claim says finished, and the fence held.
        expect((await claim(jobs, job, 30)).outcome).toBe('finished');
        expect(await jobs.takeArchive(job.jobId, { holder: 'b', until: 900 }, 30)).toEqual({ outcome: 'held', until: 500 });
        expect(await jobs.markArchived(job.jobId, 'a')).toBe(true);
        expect(await jobs.takeArchive(job.jobId, { holder: 'b', until: 900 }, 30)).toEqual({ outcome: 'sent' });
        expect((await jobs.get(job.jobId))?.history.map((h) => h.what)).toEqual(['started', 'archived']);
      });

      it('an unclaimed archive (tracking failures) opens it too; a later one finds it', async () => {
        const job = ref();
        const outcome = { ...job, state: 'archived' as const, attempt: 3, reason: 'exhausted' as const, error, workerId: 'w', now: 40 };
        expect(await jobs.recordUnclaimed({ ...outcome, archiving: { holder: 'a', until: 400 } })).toBe('recorded');
        expect(await jobs.get(job.jobId)).toMatchObject({ state: 'archived', archiveHolder: 'a', archiveUntil: 400 });
        expect(await jobs.recordUnclaimed({ ...outcome, now: 50, archiving: { holder: 'b', until: 450 } })).toBe('ignored');
        expect(await jobs.takeArchive(job.jobId, { holder: 'b', until: 450 }, 50)).toEqual({ outcome: 'held', until: 400 });
      });
    });

    it('files rejected messages under the id they carried, apart from the job of that id, which they never touch', async () => {
      const carried = `py-batch-${++unique}`;
      const rejection = (messageId: string, reason: 'unknown-task' | 'id-conflict' | 'malformed', now: number) => ({
        jobId: messageId,
        task: reason === 'malformed' ? '' : 'ghost',
        payloadDigest: reason === 'malformed' ? '' : 'digest-g',
        queue: 'urgent',
        version: 'v1',
        publishedAt: 5,
        reason,
        error: { type: 'EnvelopeError', message: reason },
        envelopeId: carried,
        attempt: 1,
        workerId: 'w',
        now,
      });
      expect(await jobs.rejectionsFor(carried)).toEqual([]);
      const job = ref({ jobId: carried });
      await claim(jobs, job, 1);
      const before = await jobs.get(carried);
      const [m1, m2, m3] = [`msg-${++unique}`, `msg-${++unique}`, `msg-${++unique}`];
      await jobs.recordRejected(rejection(m1, 'unknown-task', 10));
      await jobs.recordRejected(rejection(m2, 'id-conflict', 20));
      await jobs.recordRejected(rejection(m2, 'id-conflict', 25)); // a redelivery: filed once
      await jobs.recordRejected(rejection(m3, 'malformed', 30));
      const filed = await jobs.rejectionsFor(carried);
      expect(filed.map((r) => [r.jobId, r.reason])).toEqual([
        [m3, 'malformed'],
        [m2, 'id-conflict'],
        [m1, 'unknown-task'],
      ]);
      expect(filed.every((r) => r.envelopeId === carried && r.state === 'archived')).toBe(true);
      expect(await jobs.get(carried)).toEqual(before);
      // A message whose id is its own message id is filed nowhere else; an unknown id finds nothing.
      expect(await jobs.rejectionsFor(`missing-${carried}`)).toEqual([]);
    });

    it('records failures without a claim, and never over a finished job', async () => {
      const job = ref({ queue: 'routine', task: 'sync' });
      expect(await jobs.recordUnclaimed({ ...job, state: 'retrying', attempt: 1, error, workerId: 'w1', now: 100 })).toBe('recorded');
      expect(
        await jobs.recordUnclaimed({ ...job, state: 'archived', attempt: 2, reason: 'exhausted', error, workerId: 'w1', now: 200 }),
      ).toBe('recorded');
      expect(await jobs.get(job.jobId)).toMatchObject({ state: 'archived', attempt: 2, reason: 'exhausted', finishedAt: 200 });
      expect(await jobs.recordUnclaimed({ ...job, state: 'retrying', attempt: 3, error, workerId: 'w1', now: 300 })).toBe('ignored');
      expect((await jobs.get(job.jobId))?.state).toBe('archived');
    });

    it('lists archived and retrying jobs by queue and task, newest first', async () => {
      const queue = `q${++unique}`;
      for (let i = 0; i < 3; i++)
        await jobs.recordUnclaimed({
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

    it('lists succeeded jobs of a listing queue newest first over its index keys, a page at a time', async () => {
      // 40 jobs ending in an order that is not their publish order; the newest first, whichever key each went to.
      const ends = Array.from({ length: 40 }, (_, i) => 5000 + ((i * 17) % 40));
      for (const [i, now] of ends.entries()) {
        const job = ref({ queue: 'listed', jobId: `listed-${i}` });
        const claimed = await claim(jobs, job, now - 10);
        if (claimed.outcome !== 'claimed') throw new Error('not claimed');
        await jobs.complete({ jobId: job.jobId, token: 1, state: 'succeeded', workerId: 'w1', now }, claimed.record);
      }
      const newest = await jobs.list({ state: 'succeeded', queues: ['listed'], limit: 10 });
      expect(newest.map((r) => r.updatedAt)).toEqual(Array.from({ length: 10 }, (_, i) => 5039 - i));
      const older = await jobs.list({ state: 'succeeded', queues: ['listed'], limit: 10, updatedAtMost: 5029 });
      expect(older.map((r) => r.updatedAt)).toEqual(Array.from({ length: 10 }, (_, i) => 5029 - i));
      const last = await jobs.list({ state: 'succeeded', queues: ['listed'], limit: 100, updatedAtMost: 5009 });
      expect(last).toHaveLength(10);
      // A success recorded without a claim (a `failures` queue's retry that then succeeded) is listed the same way.
      const unclaimed = ref({ queue: 'listed', jobId: 'listed-unclaimed' });
      await jobs.recordUnclaimed({ ...unclaimed, state: 'retrying', attempt: 1, error, workerId: 'w', now: 5900 });
      expect(await jobs.recordUnclaimed({ ...unclaimed, state: 'succeeded', attempt: 2, workerId: 'w', now: 6000 })).toBe('recorded');
      expect((await jobs.list({ state: 'succeeded', queues: ['listed'], limit: 1 })).map((r) => r.jobId)).toEqual(['listed-unclaimed']);
    });

    it('resets an archived job for replay: queued, attempts 0', async () => {
      const job = ref();
      await jobs.recordUnclaimed({ ...job, state: 'archived', attempt: 3, reason: 'exhausted', error, workerId: 'w', now: 10 });
      expect(await jobs.resetForReplay(job.jobId, job, 20)).toBe(true);
      expect(await jobs.get(job.jobId)).toMatchObject({ state: 'queued', attempt: 0 });
      expect((await claim(jobs, job, 30)).outcome).toBe('claimed');
    });

    it('a replay starts the asks to run later and the claims handed back over with the attempts', async () => {
      const job = ref();
      const first = await claim(jobs, job, 100);
      if (first.outcome !== 'claimed') throw new Error('not claimed');
      await jobs.complete(
        { jobId: job.jobId, token: 1, state: 'retrying', error, workerId: 'w', now: 110, retryAt: 120, retryAfter: true },
        first.record,
      );
      const handed = await claim(jobs, job, 125);
      if (handed.outcome !== 'claimed') throw new Error('not claimed');
      await jobs.handBackClaim({
        jobId: job.jobId,
        token: 2,
        detail: 'stop',
        firstStart: false,
        history: handed.record.history,
        workerId: 'w',
        now: 127,
      });
      const second = await claim(jobs, job, 130);
      if (second.outcome !== 'claimed') throw new Error('not claimed');
      await jobs.complete(
        { jobId: job.jobId, token: 3, state: 'archived', reason: 'exhausted', error, workerId: 'w', now: 140 },
        second.record,
      );
      expect(await jobs.get(job.jobId)).toMatchObject({ state: 'archived', attempt: 3, retryAfters: 1, parks: 1 });
      expect(await jobs.resetForReplay(job.jobId, job, 150)).toBe(true);
      const replayed = await jobs.get(job.jobId);
      expect(replayed?.retryAfters).toBeUndefined();
      expect(replayed?.parks).toBeUndefined();
      // Its first claim after the replay is its first attempt used (a count left over would make it less).
      const again = await claim(jobs, job, 160);
      expect(again.outcome === 'claimed' && attemptsUsed(again.record)).toBe(1);
    });

    describe('jobs parked until due', () => {
      // Far-future times keep these jobs apart from every other test's in the shared due index.
      const base = 4_000_000_000_000;
      const park = (job: JobRef, runAt: number, now = base - 3_600_000) =>
        jobs.park({ ...job, runAt, body: `{"task":"${job.task}","id":"${job.jobId}"}`, attributes: { trace: 't1' }, workerId: 'w1', now });
      const dueIn = async (job: JobRef, until: number, now: number) =>
        (await jobs.dueJobs(dueShardOf(job.jobId), until, now, 1000)).filter((d) => d.jobId === job.jobId);

      it('parks a job once; a second copy finds it, another job with its id is a conflict', async () => {
        const job = ref();
        expect(await park(job, base)).toEqual({ outcome: 'parked' });
        expect(await jobs.get(job.jobId)).toMatchObject({ state: 'scheduled', runAt: base, attempt: 0 });
        expect((await jobs.get(job.jobId))?.history.map((h) => h.what)).toEqual(['scheduled']);
        expect(await park(job, base)).toMatchObject({ outcome: 'exists', record: { state: 'scheduled' } });
        expect(await park({ ...job, payloadDigest: 'digest-b' }, base)).toMatchObject({ outcome: 'conflict' });
        expect(await jobs.list({ state: 'scheduled', queues: [job.queue], limit: 1000 })).toEqual(
          expect.arrayContaining([expect.objectContaining({ jobId: job.jobId, runAt: base })]),
        );
      });

      it('lists a parked job as due only by its runAt, with the body and attributes to send', async () => {
        const job = ref();
        await park(job, base + 5000);
        expect(await dueIn(job, base + 4999, base)).toEqual([]);
        expect(await dueIn(job, base + 5000, base)).toEqual([
          {
            jobId: job.jobId,
            queue: job.queue,
            runAt: base + 5000,
            body: `{"task":"send-email","id":"${job.jobId}"}`,
            attributes: { trace: 't1' },
          },
        ]);
      });

      it('is claimed only once due, and a claim takes it out of the due index', async () => {
        const job = ref();
        await park(job, base);
        expect((await claim(jobs, job, base - 60_000)).outcome).toBe('finished');
        expect(await jobs.get(job.jobId)).toMatchObject({ state: 'scheduled' });
        expect((await claim(jobs, job, base)).outcome).toBe('claimed');
        expect(await dueIn(job, base, base)).toEqual([]);
      });

      it('gives one sweep a lease; hands over only under that lease; another sweep may take it once the lease lapses', async () => {
        const job = ref();
        await park(job, base);
        expect(await jobs.leaseForSweep(job.jobId, base - 1000, base + 59_000)).toBe(true);
        expect(await jobs.leaseForSweep(job.jobId, base - 500, base + 59_500)).toBe(false);
        expect(await dueIn(job, base, base)).toEqual([]);
        // The first sweep was lost after sending: its lease lapses and another sweep takes the job.
        expect(await dueIn(job, base, base + 60_000)).toHaveLength(1);
        expect(await jobs.leaseForSweep(job.jobId, base + 60_000, base + 120_000)).toBe(true);
        expect(await jobs.handOver(job.jobId, base + 59_000, base + 60_001)).toBe(false);
        expect(await jobs.handOver(job.jobId, base + 120_000, base + 60_002)).toBe(true);
        const record = await jobs.get(job.jobId);
        expect(record).toMatchObject({ state: 'queued', runAt: base });
        expect(record?.history.at(-1)).toMatchObject({ what: 'queued' });
        expect(await dueIn(job, base, base + 200_000)).toEqual([]);
        expect((await claim(jobs, job, base + 1)).outcome).toBe('claimed');
      });

      it('cancels a parked job, and one already handed over (queued, its message in SQS); a cancelled job never claims', async () => {
        const job = ref();
        await park(job, base);
        expect(await jobs.cancel(job.jobId, base - 10)).toMatchObject({ outcome: 'cancelled', record: { state: 'cancelled' } });
        expect(await dueIn(job, base, base)).toEqual([]);
        expect(await jobs.cancel(job.jobId, base - 5)).toMatchObject({ outcome: 'not-scheduled', record: { state: 'cancelled' } });
        expect((await claim(jobs, job, base)).outcome).toBe('finished');
        expect(await jobs.list({ state: 'cancelled', queues: [job.queue], limit: 1000 })).toEqual(
          expect.arrayContaining([expect.objectContaining({ jobId: job.jobId })]),
        );
        expect(await jobs.cancel(`missing-${job.jobId}`, base)).toEqual({ outcome: 'unknown' });
        const handed = ref();
        await park(handed, base);
        await jobs.leaseForSweep(handed.jobId, base - 100, base + 100);
        await jobs.handOver(handed.jobId, base + 100, base - 50);
        expect(await jobs.cancel(handed.jobId, base - 40)).toMatchObject({ outcome: 'cancelled', record: { state: 'cancelled' } });
        // Its message, when a dispatcher receives it, finds the job ended.
        expect((await claim(jobs, handed, base)).outcome).toBe('finished');
      });

      it('reads a parked job as the sweep would send it; brings it forward once, as read: due now with its new body, then swept and claimed', async () => {
        const job = ref();
        await park(job, base + 3_600_000);
        const parked = await jobs.parkedJob(job.jobId);
        expect(parked).toEqual({
          jobId: job.jobId,
          queue: job.queue,
          runAt: base + 3_600_000,
          body: `{"task":"send-email","id":"${job.jobId}"}`,
          attributes: { trace: 't1' },
        });
        expect(await dueIn(job, base, base)).toEqual([]);
        const body = `{"task":"send-email","id":"${job.jobId}","now":true}`;
        expect(await jobs.bringForward(parked as NonNullable<typeof parked>, body, base)).toBe(true);
        expect(await jobs.get(job.jobId)).toMatchObject({ state: 'scheduled', runAt: base });
        expect((await jobs.get(job.jobId))?.history.at(-1)).toMatchObject({ what: 'scheduled', when: base });
        expect(await dueIn(job, base, base)).toEqual([{ ...parked, runAt: base, body }]);
        // Read before the change: it no longer matches (its runAt moved), so a second one changes nothing.
        expect(await jobs.bringForward(parked as NonNullable<typeof parked>, 'other', base + 1)).toBe(false);
        expect((await jobs.parkedJob(job.jobId))?.body).toBe(body);
        expect(await jobs.leaseForSweep(job.jobId, base + 2, base + 60_002)).toBe(true);
        expect(await jobs.handOver(job.jobId, base + 60_002, base + 3)).toBe(true);
        expect(await jobs.parkedJob(job.jobId)).toBeUndefined();
        expect((await claim(jobs, job, base + 4)).outcome).toBe('claimed');
      });

      it('parks a job over its key limit in its key line: waiting-key, sent by the sweep only once due, claimed only once due, brought forward once', async () => {
        const job = { ...ref(), key: 'tenant-a' };
        const out = await jobs.park({ ...job, runAt: base, body: '{}', workerId: 'w1', now: base - 3_600_000, overKeyLimit: 2 });
        expect(out).toEqual({ outcome: 'parked' });
        const record = await jobs.get(job.jobId);
        expect(record).toMatchObject({ state: 'waiting-key', runAt: base, attempt: 0, key: 'tenant-a' });
        expect(record?.history.at(-1)).toMatchObject({ what: 'waiting-key', worker: 'w1' });
        expect(record?.history.at(-1)?.detail).toContain('"tenant-a" at its limit of 2 running');
        expect(await jobs.list({ state: 'waiting-key', queues: [job.queue], limit: 1000 })).toEqual(
          expect.arrayContaining([expect.objectContaining({ jobId: job.jobId })]),
        );
        // Not 15 minutes ahead as a scheduled job: until its due time a free slot may still wake it.
        expect(await dueIn(job, base, base - 60_000)).toEqual([]);
        expect(await dueIn(job, base, base)).toHaveLength(1);
        expect((await claim(jobs, job, base - 60_000)).outcome).toBe('finished');
        // A second copy of its message parks nothing.
        expect(await jobs.park({ ...job, runAt: base, body: '{}', workerId: 'w2', now: base - 60_000, overKeyLimit: 2 })).toMatchObject({
          outcome: 'exists',
          record: { state: 'waiting-key' },
        });
        const parked = (await jobs.parkedJob(job.jobId)) as NonNullable<Awaited<ReturnType<typeof jobs.parkedJob>>>;
        expect(await jobs.bringForward(parked, '{"now":true}', base - 30_000, 'its key had a free slot')).toBe(true);
        expect(await jobs.bringForward(parked, '{"now":true}', base - 29_000, 'its key had a free slot')).toBe(false);
        expect((await jobs.get(job.jobId))?.history.at(-1)?.detail).toMatch(/^its key had a free slot \(was due /);
        expect(await dueIn(job, base, base - 30_000)).toHaveLength(1);
        expect((await claim(jobs, job, base - 30_000)).outcome).toBe('claimed');
      });

      it('keeps a line in the tag index: oldest tagging first, a job leaves it when untagged', async () => {
        const tag = `~line t${++unique} k`;
        const [a, b, c] = [ref(), ref(), ref()];
        for (const [job, at] of [
          [b, 2000],
          [a, 1000],
          [c, 3000],
        ] as const) {
          await jobs.recordQueued(job, at);
          await jobs.tagJob(job.jobId, [tag], at);
        }
        expect((await jobs.oldestByTag(tag, 2)).map((r) => r.jobId)).toEqual([a.jobId, b.jobId]);
        await jobs.untagJob(a.jobId, [tag]);
        await jobs.untagJob(a.jobId, [tag]);
        expect((await jobs.oldestByTag(tag, 5)).map((r) => r.jobId)).toEqual([b.jobId, c.jobId]);
        expect(await jobs.oldestByTag(`~line none${unique} k`, 5)).toEqual([]);
      });

      it("keeps an ordered key's counter and turn: numbers taken in blocks, the turn moved only from where it stands, a gap's first sighting kept", async () => {
        const task = `ordered${++unique}`;
        expect(await jobs.keyOrder(task, 'k')).toEqual({ last: 0, next: 1 });
        expect(await jobs.takeNumbers(task, 'k', 3, base)).toBe(3);
        expect(await jobs.takeNumbers(task, 'k', 1, base + 500)).toBe(4);
        // Another key of the task, and the empty key (jobs without one), have their own counters.
        expect(await jobs.takeNumbers(task, '', 2, base)).toBe(2);
        // The first numbering starts the key's `movedAt`; later ones leave it.
        expect(await jobs.keyOrder(task, 'k')).toEqual({ last: 4, next: 1, movedAt: base });
        // Moved from where it stands only: of two movers from 1, one moves it.
        expect(await jobs.advanceOrder(task, 'k', 1, base + 600)).toBe(true);
        expect(await jobs.advanceOrder(task, 'k', 1, base + 700)).toBe(false);
        expect(await jobs.advanceOrder(task, 'k', 3, base + 700)).toBe(false);
        expect(await jobs.keyOrder(task, 'k')).toEqual({ last: 4, next: 2, movedAt: base + 600 });
        // A gap at 2: its first sighting stays; none for a number that is not the turn.
        expect(await jobs.noteGap(task, 'k', 2, base + 1_000)).toBe(base + 1_000);
        expect(await jobs.noteGap(task, 'k', 2, base + 5_000)).toBe(base + 1_000);
        expect(await jobs.keyOrder(task, 'k')).toEqual({ last: 4, next: 2, gapSince: base + 1_000, movedAt: base + 600 });
        expect(await jobs.noteGap(task, 'k', 3, base + 5_000)).toBeUndefined();
        expect(await jobs.advanceOrder(task, 'k', 2, base + 6_000)).toBe(true);
        // The next number's gap is its own.
        expect(await jobs.keyOrder(task, 'k')).toEqual({ last: 4, next: 3, movedAt: base + 6_000 });
        expect(await jobs.noteGap(task, 'k', 3, base + 7_000)).toBe(base + 7_000);
      });

      it("reads an ordered key's line lowest number first", async () => {
        const tag = `~order t${++unique} k`;
        const [a, b] = [ref(), ref()];
        await jobs.recordQueued(b, base);
        await jobs.tagJob(b.jobId, [tag], 2);
        await jobs.tagJob(a.jobId, [tag], 1);
        const line = await jobs.lineEntries(tag, 5);
        expect(line).toEqual([
          { jobId: a.jobId, at: 1 },
          { jobId: b.jobId, at: 2 },
        ]);
        expect(await jobs.lineEntries(tag, 1)).toHaveLength(1);
        expect(await jobs.lineEntries(`~order none${unique} k`, 5)).toEqual([]);
      });

      it('brings forward neither a job a sweep holds nor one that is not parked', async () => {
        const held = ref();
        await park(held, base);
        const parked = (await jobs.parkedJob(held.jobId)) as NonNullable<Awaited<ReturnType<typeof jobs.parkedJob>>>;
        expect(await jobs.leaseForSweep(held.jobId, base - 1000, base + 59_000)).toBe(true);
        expect(await jobs.bringForward(parked, 'now', base - 500)).toBe(false);
        expect(await jobs.get(held.jobId)).toMatchObject({ runAt: base });
        // A cancelled one has no parked body left to read, and its record is not brought forward.
        const cancelled = ref();
        await park(cancelled, base);
        const read = (await jobs.parkedJob(cancelled.jobId)) as NonNullable<typeof parked>;
        await jobs.cancel(cancelled.jobId, base - 100);
        expect(await jobs.parkedJob(cancelled.jobId)).toBeUndefined();
        expect(await jobs.bringForward(read, 'now', base - 50)).toBe(false);
        expect(await jobs.get(cancelled.jobId)).toMatchObject({ state: 'cancelled', runAt: base });
        expect(await jobs.parkedJob(`missing-${held.jobId}`)).toBeUndefined();
      });

      describe('recorded at publish (announced)', () => {
        const schedule = (job: JobRef, runAt: number, now = base - 600_000) => jobs.recordScheduled({ ...job, runAt }, now);

        it('is scheduled with its due time and listed, once; never in the due index, since its message is in SQS', async () => {
          const job = ref({ tags: ['batch-1'] });
          expect(await schedule(job, base)).toBe(true);
          expect(await jobs.get(job.jobId)).toMatchObject({
            state: 'scheduled',
            runAt: base,
            announced: true,
            attempt: 0,
            tags: ['batch-1'],
          });
          expect((await jobs.get(job.jobId))?.history).toEqual([
            { what: 'scheduled', when: base - 600_000, detail: expect.stringContaining('due ') },
          ]);
          expect(await schedule({ ...job, payloadDigest: 'digest-b' }, base)).toBe(false);
          expect(await jobs.recordQueued(job, base)).toBe(false);
          expect(await jobs.list({ state: 'scheduled', queues: [job.queue], limit: 1000 })).toEqual(
            expect.arrayContaining([expect.objectContaining({ jobId: job.jobId, runAt: base })]),
          );
          expect(await dueIn(job, base + 3_600_000, base + 3_600_000)).toEqual([]);
          expect(await jobs.leaseForSweep(job.jobId, base, base + 60_000)).toBe(false);
        });

        it('is claimed when its message arrives, even a little before its due time (SQS held it)', async () => {
          const job = ref();
          await schedule(job, base);
          const claimed = await claim(jobs, job, base - 5_000);
          expect(claimed).toMatchObject({ outcome: 'claimed', token: 1, record: { state: 'running' } });
          expect((await jobs.get(job.jobId))?.announced).toBeUndefined();
          expect(await schedule(job, base)).toBe(false);
        });

        it('is parked over by the dispatcher with its body, then swept as any parked job; a parked one is not parked over', async () => {
          const job = ref();
          await schedule(job, base);
          expect(await park(job, base)).toEqual({ outcome: 'parked' });
          const record = await jobs.get(job.jobId);
          expect(record).toMatchObject({ state: 'scheduled', runAt: base });
          expect(record?.announced).toBeUndefined();
          expect(record?.history.map((h) => h.what)).toEqual(['scheduled', 'scheduled']);
          expect(await dueIn(job, base, base)).toHaveLength(1);
          expect(await park(job, base)).toMatchObject({ outcome: 'exists' });
          // A parked job is claimed only once due; its announcement no longer counts.
          expect((await claim(jobs, job, base - 60_000)).outcome).toBe('finished');
          const stranger = ref();
          await schedule(stranger, base);
          expect(await park({ ...stranger, task: 'other-task' }, base)).toMatchObject({ outcome: 'conflict' });
        });

        it('is not parked: nothing to read or bring forward (its message, in SQS, cannot be)', async () => {
          const job = ref();
          await schedule(job, base);
          expect(await jobs.parkedJob(job.jobId)).toBeUndefined();
          const forged = { jobId: job.jobId, queue: job.queue, runAt: base, body: '{}' };
          expect(await jobs.bringForward(forged, '{}', base - 1000)).toBe(false);
          expect(await jobs.get(job.jobId)).toMatchObject({ state: 'scheduled', runAt: base, announced: true });
        });

        it('is cancelled; its message, when it arrives, finds it finished (deleted unrun), and parking it changes nothing', async () => {
          const job = ref();
          await schedule(job, base);
          expect(await jobs.cancel(job.jobId, base - 1000)).toMatchObject({ outcome: 'cancelled', record: { state: 'cancelled' } });
          expect(await claim(jobs, job, base)).toMatchObject({ outcome: 'finished', record: { state: 'cancelled' } });
          expect(await park(job, base)).toMatchObject({ outcome: 'exists', record: { state: 'cancelled' } });
          expect(await jobs.get(job.jobId)).toMatchObject({ state: 'cancelled', attempt: 0 });
        });
      });
    });

    describe('fleet-wide limits', () => {
      it('grants concurrency slots up to the limit across holders; a release gives them back', async () => {
        const key = `task:c${++unique}`;
        const acquire = (holder: string, want: number, now = 1000) =>
          limits.acquire({ key, limit: 5, holder, want, now, until: now + 60_000 });
        expect(await acquire('a', 3)).toBe(3);
        expect(await acquire('b', 4)).toBe(2);
        expect(await acquire('c', 1)).toBe(0);
        await limits.release(key, 'a', 2000);
        expect(await acquire('c', 4, 2000)).toBe(3);
        // Two holders at once never get more than there is.
        await limits.release(key, 'b', 3000);
        await limits.release(key, 'c', 3000);
        const both = await Promise.all([acquire('d', 5, 3000), acquire('e', 5, 3000)]);
        expect(both[0] + both[1]).toBeLessThanOrEqual(5);
        expect(both[0] + both[1]).toBeGreaterThan(0);
      });

      it("counts a key's parked jobs: a release answers with the count; a clear lands only on the count it saw", async () => {
        const key = `key:t${++unique}:a`;
        expect(await limits.acquire({ key, limit: 1, holder: 'h', want: 1, now: 1000, until: 60_000 })).toBe(1);
        expect(await limits.parked(key, 3)).toBe(3);
        expect(await limits.parked(key, -1)).toBe(2);
        expect(await limits.release(key, 'h', 2000)).toBe(2);
        await limits.clearParked(key, 5);
        expect(await limits.parked(key, 0)).toBe(2);
        await limits.clearParked(key, 2);
        expect(await limits.parked(key, 0)).toBe(0);
        // Never below 0: a job taken off twice.
        expect(await limits.parked(key, -1)).toBe(0);
      });

      it('keeps one watch per key line: taken when none is set or its time has come', async () => {
        const key = `key:t${++unique}:w`;
        expect(await limits.watchLine(key, 1000, 5000)).toBe(true);
        expect(await limits.watchLine(key, 4999, 9000)).toBe(false);
        expect(await limits.watchLine(key, 5000, 9000)).toBe(true);
        expect(await limits.watchLine(key, 6000, 9500)).toBe(false);
        expect(await limits.watchLine(key, 9000, 12_000)).toBe(true);
      });

      it('gives back the slots of a holder that died when its lease ends, not before', async () => {
        const key = `queue:q${++unique}`;
        expect(await limits.acquire({ key, limit: 4, holder: 'dead', want: 4, now: 1000, until: 11_000 })).toBe(4);
        expect(await limits.acquire({ key, limit: 4, holder: 'live', want: 2, now: 10_999, until: 70_000 })).toBe(0);
        expect(await limits.acquire({ key, limit: 4, holder: 'live', want: 2, now: 11_001, until: 70_000 })).toBe(2);
        expect(await limits.acquire({ key, limit: 4, holder: 'other', want: 4, now: 11_002, until: 70_000 })).toBe(2);
      });

      it('counts what live holders hold; a dead holder stops counting at its lease end and its entry goes', async () => {
        const key = `fleet:f${++unique}`;
        expect(await limits.held(key, 1000)).toBe(0);
        await limits.acquire({ key, limit: 1000, holder: 'scheduled-1', want: 1, now: 1000, until: 300_000 });
        await limits.acquire({ key, limit: 1000, holder: 'scale-out-1', want: 1, now: 1000, until: 56_000 });
        await limits.acquire({ key, limit: 1000, holder: 'scale-out-2', want: 1, now: 1000, until: 56_000 });
        expect(await limits.held(key, 2000)).toBe(3);
        await limits.release(key, 'scale-out-2', 3000);
        expect(await limits.held(key, 3000)).toBe(2);
        // scale-out-1 died without releasing: counted until its lease ends, then not.
        expect(await limits.held(key, 56_000)).toBe(2);
        expect(await limits.held(key, 61_000)).toBe(1);
        // Its slot is free again for anyone under a limit.
        expect(await limits.acquire({ key, limit: 2, holder: 'next', want: 1, now: 61_000, until: 120_000 })).toBe(1);
        expect(await limits.held(key, 61_000)).toBe(2);
      });

      it('hands out tokens at the rate with the burst, and says when the next one comes', async () => {
        const key = `task:r${++unique}`;
        const take = (want: number, now: number) => limits.take({ key, perSecond: 10, burst: 3, want, now });
        expect(await take(5, 1000)).toEqual({ granted: 3, startAfterMs: [0, 0, 0], retryAfterMs: 100 });
        expect(await take(1, 1050)).toEqual({ granted: 0, startAfterMs: [], retryAfterMs: 50 });
        expect(await take(2, 1300)).toMatchObject({ granted: 2 });
        expect(await take(10, 10_000)).toMatchObject({ granted: 3 });
      });

      it('books tokens up to aheadMs before they are earned, each with the delay until it is', async () => {
        const key = `task:b${++unique}`;
        const take = (want: number, now: number) => limits.take({ key, perSecond: 10, burst: 2, want, now, aheadMs: 500 });
        // The bucket's 2, then 5 booked at 100 ms each; the 8th is bookable once the 3rd is earned.
        expect(await take(10, 1000)).toEqual({ granted: 7, startAfterMs: [0, 0, 100, 200, 300, 400, 500], retryAfterMs: 100 });
        // Nothing more until then; 250 ms on, the next 2 (earned at 1,600 and 1,700).
        expect(await take(3, 1050)).toEqual({ granted: 0, startAfterMs: [], retryAfterMs: 50 });
        expect(await take(2, 1250)).toEqual({ granted: 2, startAfterMs: [350, 450], retryAfterMs: 0 });
        // Idle past a full bucket, two dispatchers at once book no more between them than one would:
        // the bucket's 2 and the 5 of the next half second.
        const both = await Promise.all([take(10, 2000), take(10, 2000)]);
        const delays = [...both[0].startAfterMs, ...both[1].startAfterMs].sort((a, b) => a - b);
        expect(delays).toEqual([0, 0, 100, 200, 300, 400, 500]);
      });

      it('gives waiting jobs turns in one line behind what can be booked; a line whose turns passed starts again', async () => {
        const key = `task:l${++unique}`;
        const r = { key, perSecond: 10, burst: 2, now: 1000, aheadMs: 500 };
        expect(await limits.take({ ...r, want: 10 })).toMatchObject({ granted: 7 });
        // Tokens 8, 9 and 10 can be booked at 1,100, 1,200 and 1,300; the next dispatcher's two after them.
        expect(await limits.waitInLine({ ...r, want: 3 })).toEqual([100, 200, 300]);
        expect(await limits.waitInLine({ ...r, want: 2 })).toEqual([400, 500]);
        // Four seconds on, every turn has come: the line starts at what can be booked then.
        expect(await limits.waitInLine({ ...r, want: 1, now: 5000 })).toEqual([100]);
      });
    });

    describe('dependencies', () => {
      const waitOn = (job: JobRef, dependsOn: string[], now = 1000) =>
        jobs.wait({
          ...job,
          body: `{"task":"${job.task}","id":"${job.jobId}"}`,
          dependsOn,
          onDependencyFailure: 'fail',
          workerId: 'w1',
          now,
        });

      it('records a waiting job once; a copy finds it, another job under its id is a conflict', async () => {
        const job = ref();
        expect(await waitOn(job, ['a'])).toEqual({ outcome: 'waiting' });
        expect(await waitOn(job, ['a'])).toMatchObject({ outcome: 'exists', record: { state: 'waiting', dependsOn: ['a'] } });
        expect(await waitOn({ ...job, payloadDigest: 'other' }, ['a'])).toMatchObject({ outcome: 'conflict' });
        expect((await claim(jobs, job, 2000)).outcome).toBe('finished');
      });

      it('adds a dependent to a job that has not ended; says so for an ended or unknown one', async () => {
        const dependency = ref();
        await jobs.recordQueued(dependency, 900);
        const edge = { id: 'd1', index: 0, size: 1 };
        expect(await jobs.addDependent(dependency.jobId, edge, 1000)).toEqual({ outcome: 'added' });
        expect(await jobs.addDependent(dependency.jobId, edge, 1001)).toEqual({ outcome: 'added' });
        expect((await jobs.get(dependency.jobId))?.dependents).toEqual([edge]);
        expect(await jobs.addDependent('no-such-job', edge, 1000)).toEqual({ outcome: 'unknown' });
        const first = await claim(jobs, dependency, 2000);
        if (first.outcome !== 'claimed') throw new Error('not claimed');
        await jobs.complete({ jobId: dependency.jobId, token: 1, state: 'succeeded', workerId: 'w1', now: 2100 }, first.record);
        expect(await jobs.addDependent(dependency.jobId, { id: 'd2', index: 0, size: 1 }, 2200)).toMatchObject({
          outcome: 'ended',
          record: { state: 'succeeded' },
        });
      });

      it('tells a completion the dependents added after its claim', async () => {
        const dependency = ref();
        const first = await claim(jobs, dependency, 2000);
        if (first.outcome !== 'claimed') throw new Error('not claimed');
        await jobs.addDependent(dependency.jobId, { id: 'late', index: 3, size: 4 }, 2050);
        const completed = await jobs.complete(
          { jobId: dependency.jobId, token: 1, state: 'succeeded', workerId: 'w1', now: 2100 },
          first.record,
        );
        expect(completed).toEqual({ landed: true, dependents: [{ id: 'late', index: 3, size: 4 }] });
        expect(await jobs.get(dependency.jobId)).toMatchObject({
          state: 'succeeded',
          history: [{ what: 'started' }, { what: 'succeeded' }],
        });
      });

      it('counts each dependency once, over shards, and completes with the last one', async () => {
        const dependent = `fan-${++unique}`;
        const size = 120;
        for (let i = 0; i < size - 1; i++) {
          expect((await jobs.countDependency({ id: dependent, index: i, size }, `${dependent}.${i}`, false, 1000)).complete).toBe(false);
        }
        // Counting again (a retry, a crash's second pass) changes nothing.
        expect(await jobs.countDependency({ id: dependent, index: 5, size }, `${dependent}.5`, false, 1000)).toEqual({ complete: false });
        expect(await jobs.dependencyCount(dependent)).toEqual({ complete: false });
        expect(await jobs.countDependency({ id: dependent, index: size - 1, size }, `${dependent}.119`, false, 1000)).toEqual({
          complete: true,
        });
        expect(await jobs.countDependency({ id: dependent, index: size - 1, size }, `${dependent}.119`, false, 1000)).toEqual({
          complete: true,
        });
        expect(await jobs.dependencyCount(dependent)).toEqual({ complete: true });
      });

      it('keeps the first failure', async () => {
        const dependent = `failing-${++unique}`;
        expect(await jobs.countDependency({ id: dependent, index: 1, size: 3 }, 'b', true, 1000)).toEqual({
          complete: false,
          firstFailure: 'b',
        });
        expect(await jobs.countDependency({ id: dependent, index: 2, size: 3 }, 'c', true, 1000)).toEqual({
          complete: false,
          firstFailure: 'b',
        });
        expect(await jobs.countDependency({ id: dependent, index: 0, size: 3 }, 'a', false, 1000)).toEqual({
          complete: true,
          firstFailure: 'b',
        });
      });

      it('releases a waiting job once, as a parked job due now that the sweep path sends', async () => {
        const job = ref();
        await waitOn(job, ['x']);
        const released = await jobs.release(job.jobId, 5000);
        expect(released).toMatchObject({
          jobId: job.jobId,
          queue: 'urgent',
          runAt: 5000,
          body: `{"task":"send-email","id":"${job.jobId}"}`,
        });
        expect(await jobs.release(job.jobId, 5001)).toBeUndefined();
        expect(await jobs.get(job.jobId)).toMatchObject({ state: 'scheduled', history: [{ what: 'waiting' }, { what: 'released' }] });
        expect(await jobs.leaseForSweep(job.jobId, 5002, 65_002)).toBe(true);
        expect(await jobs.handOver(job.jobId, 65_002, 5003)).toBe(true);
        expect((await claim(jobs, job, 5004)).outcome).toBe('claimed');
      });

      it('archives a waiting job for its dependencies, and cancels another', async () => {
        const failing = ref();
        await waitOn(failing, ['x']);
        expect(await jobs.failWaiting(failing.jobId, 'dependency-failed', 'dependency "x" did not succeed', 3000)).toMatchObject({
          state: 'archived',
          reason: 'dependency-failed',
          lastError: { type: 'DependencyError', message: 'dependency "x" did not succeed' },
        });
        expect(await jobs.failWaiting(failing.jobId, 'dependency-failed', 'again', 3001)).toBeUndefined();
        expect(await jobs.release(failing.jobId, 3002)).toBeUndefined();
        const cancelled = ref();
        await waitOn(cancelled, ['x']);
        expect(await jobs.cancel(cancelled.jobId, 3000)).toMatchObject({ outcome: 'cancelled', record: { state: 'cancelled' } });
        expect(await jobs.release(cancelled.jobId, 3002)).toBeUndefined();
      });

      it('finds jobs by tag in every state, newest first, paged by tagging time', async () => {
        const tag = `tenant:${++unique}`;
        const older = ref();
        const newer = ref();
        await jobs.recordQueued(older, 1);
        await waitOn(newer, ['x']);
        await jobs.tagJob(older.jobId, [tag, 'import'], 100);
        await jobs.tagJob(newer.jobId, [tag], 200);
        await jobs.tagJob(older.jobId, [tag], 300);
        const found = await jobs.jobsByTag(tag, 10);
        expect(found.map((r) => [r.jobId, r.state])).toEqual([
          [newer.jobId, 'waiting'],
          [older.jobId, 'queued'],
        ]);
        expect((await jobs.jobsByTag(tag, 1)).map((r) => r.jobId)).toEqual([newer.jobId]);
        expect((await jobs.jobsByTag(tag, 10, 200)).map((r) => r.jobId)).toEqual([older.jobId]);
        expect(await jobs.jobsByTag('nobody-has-this', 10)).toEqual([]);
      });

      it('takes a replayed failure back and reopens the dependent it archived, unless another failure stands', async () => {
        const dependent = ref();
        await waitOn(dependent, ['a', 'b', 'c']);
        const edge = (index: number) => ({ id: dependent.jobId, index, size: 3 });
        await jobs.countDependency(edge(0), 'a', false, 1000);
        await jobs.countDependency(edge(1), 'b', true, 1000);
        expect(await jobs.countDependency(edge(2), 'c', true, 1000)).toEqual({ complete: true, firstFailure: 'b' });
        await jobs.failWaiting(dependent.jobId, 'dependency-failed', 'dependency "b" did not succeed', 1100);
        expect(await jobs.uncountFailure(edge(1), 'b')).toEqual({ stillFailed: true });
        expect(await jobs.uncountFailure(edge(2), 'c')).toEqual({ stillFailed: false });
        expect(await jobs.uncountFailure(edge(2), 'c')).toEqual({ stillFailed: false });
        expect(await jobs.dependencyCount(dependent.jobId)).toEqual({ complete: false });
        expect(await jobs.reopen(dependent.jobId, 1200)).toMatchObject({ state: 'waiting' });
        expect(await jobs.reopen(dependent.jobId, 1201)).toBeUndefined();
        expect(await jobs.countDependency(edge(1), 'b', false, 1300)).toEqual({ complete: false });
        expect(await jobs.countDependency(edge(2), 'c', false, 1300)).toEqual({ complete: true });
        expect(await jobs.release(dependent.jobId, 1400)).toMatchObject({
          jobId: dependent.jobId,
          body: expect.stringContaining(dependent.jobId),
        });
        const other = ref();
        await jobs.recordQueued(other, 1);
        const claimed = await claim(jobs, other, 2);
        if (claimed.outcome !== 'claimed') throw new Error('not claimed');
        await jobs.complete(
          { jobId: other.jobId, token: 1, state: 'archived', reason: 'exhausted', error, workerId: 'w1', now: 3 },
          claimed.record,
        );
        expect(await jobs.reopen(other.jobId, 4)).toBeUndefined();
      });

      it('lets a job replayed from the archive wait again, but not the released copy of one', async () => {
        const job = ref();
        await waitOn(job, ['x']);
        await jobs.release(job.jobId, 2000);
        await jobs.leaseForSweep(job.jobId, 2001, 62_001);
        await jobs.handOver(job.jobId, 62_001, 2002);
        expect(await waitOn(job, ['x'], 2003)).toMatchObject({ outcome: 'exists', record: { state: 'queued' } });
        const claimed = await claim(jobs, job, 2004);
        if (claimed.outcome !== 'claimed') throw new Error('not claimed');
        await jobs.complete(
          { jobId: job.jobId, token: 1, state: 'archived', reason: 'exhausted', error, workerId: 'w1', now: 2005 },
          claimed.record,
        );
        expect(await jobs.resetForReplay(job.jobId, job, 2006)).toBe(true);
        expect(await waitOn(job, ['x'], 2007)).toEqual({ outcome: 'waiting' });
        expect((await jobs.get(job.jobId))?.history.map((h) => h.what).slice(-2)).toEqual(['queued', 'waiting']);
      });

      it('reads many records at once, in the order asked, leaving out unknown ones', async () => {
        const a = ref();
        const b = ref();
        await jobs.recordQueued(a, 1);
        await jobs.recordQueued(b, 1);
        expect((await jobs.getMany([b.jobId, 'nope', a.jobId])).map((r) => r.jobId)).toEqual([b.jobId, a.jobId]);
      });
    });

    describe('schedule ticks', () => {
      let n = 0;
      const schedule = () => `nightly-${Date.now()}-${++n}`;

      it('raises the latest tick and never lowers it, adding the counts only with a raise', async () => {
        const name = schedule();
        expect(await jobs.scheduleTicks(name)).toBeUndefined();
        expect(await jobs.noteTick(name, 60_000, { missed: 0, caughtUp: 0 }, 61_000)).toBe(true);
        expect(await jobs.noteTick(name, 240_000, { missed: 1, caughtUp: 1 }, 241_000)).toBe(true);
        // A tick as late or earlier (a redelivery, a late copy) adds nothing.
        expect(await jobs.noteTick(name, 240_000, { missed: 5, caughtUp: 5 }, 242_000)).toBe(false);
        expect(await jobs.noteTick(name, 120_000, { missed: 5, caughtUp: 5 }, 243_000)).toBe(false);
        expect(await jobs.scheduleTicks(name)).toEqual({
          schedule: name,
          lastTick: 240_000,
          missed: 1,
          caughtUp: 1,
          skipped: 0,
          lastMissedAt: 241_000,
        });
      });

      it('of many dispatchers noting ticks at once, the latest tick stands and each raise is counted once', async () => {
        const name = schedule();
        const raised = await Promise.all(
          Array.from({ length: 12 }, (_, i) => jobs.noteTick(name, (i % 4) * 60_000 + 60_000, { missed: 1, caughtUp: 0 }, 1_000)),
        );
        const ticks = await jobs.scheduleTicks(name);
        expect(ticks?.lastTick).toBe(240_000);
        expect(ticks?.missed).toBe(raised.filter(Boolean).length);
      });

      it('counts skipped ticks, with when the last one was', async () => {
        const name = schedule();
        await jobs.countSkipped(name, 5_000);
        await jobs.countSkipped(name, 7_000);
        expect(await jobs.scheduleTicks(name)).toEqual({ schedule: name, missed: 0, caughtUp: 0, skipped: 2, lastSkippedAt: 7_000 });
      });
    });

    describe('unique keys', () => {
      let n = 0;
      const key = () => `user ${Date.now()}-${++n}`;
      const take = (k: string, jobId: string, now: number, from = now, forMs = 60_000) => ({
        task: 'sync-user',
        key: k,
        jobId,
        from,
        until: from + forMs,
        now,
      });
      const rule = { forSeconds: 60, while: ['queued', 'scheduled', 'waiting', 'running', 'retrying'] as const };

      it('holds a free key; another job inside the window is refused with the hold; the holder may write again', async () => {
        const k = key();
        expect(await jobs.holdKey(take(k, 'a', 1000))).toEqual({ landed: true });
        const refused = await jobs.holdKey(take(k, 'b', 2000));
        expect(refused).toEqual({ landed: false, hold: { holder: 'a', from: 1000, until: 61_000, takenAt: 1000 } });
        expect(await jobs.holdKey(take(k, 'a', 3000, 1000))).toEqual({ landed: true });
        // The same key of another task is another hold.
        expect(await jobs.holdKey({ ...take(k, 'c', 2000), task: 'other-task' })).toEqual({ landed: true });
      });

      it('lets another job take the key once the window has ended, whatever TTL has not deleted yet', async () => {
        const k = key();
        await jobs.holdKey(take(k, 'a', 1000));
        expect((await jobs.holdKey(take(k, 'b', 60_999))).landed).toBe(false);
        expect(await jobs.holdKey(take(k, 'b', 61_000))).toEqual({ landed: true });
        expect(await jobs.holdKey(take(k, 'c', 61_001))).toMatchObject({ landed: false, hold: { holder: 'b', from: 61_000 } });
      });

      it('takes a hold over only as it was read: of two takers of one hold, exactly one wins', async () => {
        const k = key();
        await jobs.holdKey(take(k, 'a', 1000));
        const read = await jobs.holdKey(take(k, 'b', 2000));
        if (read.landed || !read.hold) throw new Error('expected the hold of a');
        const [b, c] = await Promise.all([jobs.holdKey(take(k, 'b', 2000), read.hold), jobs.holdKey(take(k, 'c', 2000), read.hold)]);
        expect([b, c].filter((w) => w.landed)).toHaveLength(1);
        const winner = b.landed ? 'b' : 'c';
        // A takeover over a hold that has since changed hands is refused, naming the new holder.
        expect(await jobs.holdKey(take(k, 'd', 3000), read.hold)).toMatchObject({ landed: false, hold: { holder: winner } });
      });

      it('of many jobs taking a free key at once, exactly one holds it', async () => {
        const k = key();
        const writes = await Promise.all(Array.from({ length: 20 }, (_, i) => jobs.holdKey(take(k, `j${i}`, 5000))));
        expect(writes.filter((w) => w.landed)).toHaveLength(1);
        const holder = `j${writes.findIndex((w) => w.landed)}`;
        for (const w of writes.filter((x) => !x.landed)) expect(w).toMatchObject({ hold: { holder } });
      });

      it('lets go of a key only for its holder', async () => {
        const k = key();
        await jobs.holdKey(take(k, 'a', 1000));
        await jobs.releaseKey('sync-user', k, 'b');
        expect((await jobs.holdKey(take(k, 'b', 2000))).landed).toBe(false);
        await jobs.releaseKey('sync-user', k, 'a');
        expect(await jobs.holdKey(take(k, 'b', 2000))).toEqual({ landed: true });
      });

      it('records a job that joined another once: deduplicated, never claimed, listed by its state', async () => {
        const job = ref({ task: 'sync-user', key: 'user 7' });
        const request = { ...job, key: 'user 7', duplicateOf: 'holder-1', workerId: 'w1', now: 4000 };
        expect(await jobs.recordDeduplicated(request)).toBe(true);
        expect(await jobs.recordDeduplicated({ ...request, now: 5000 })).toBe(false);
        const record = await jobs.get(job.jobId);
        expect(record).toMatchObject({ state: 'deduplicated', key: 'user 7', duplicateOf: 'holder-1', attempt: 0, updatedAt: 4000 });
        expect(record?.history.map((h) => h.what)).toEqual(['deduplicated']);
        expect((await claim(jobs, job, 6000)).outcome).toBe('finished');
        const listed = await jobs.list({ state: 'deduplicated', queues: ['urgent'], limit: 50 });
        expect(listed.map((r) => r.jobId)).toContain(job.jobId);
        // Never over an existing record.
        const existing = ref();
        await jobs.recordQueued(existing, 100);
        expect(await jobs.recordDeduplicated({ ...existing, key: 'k', duplicateOf: 'x', workerId: 'w1', now: 200 })).toBe(false);
        expect((await jobs.get(existing.jobId))?.state).toBe('queued');
      });

      describe('held by holdUniqueKey (lib/settle/unique-holds.ts)', () => {
        const job = (k: string, jobId: string, publishedAt: number) => ({ task: 'sync-user', key: k, jobId, publishedAt });

        it('joins a live holder inside the window, and takes the key over once the holder has ended', async () => {
          const k = key();
          const first = ref({ task: 'sync-user', publishedAt: 1000 });
          expect(await holdUniqueKey(jobs, job(k, first.jobId, 1000), rule, 1000)).toEqual({ outcome: 'holds' });
          await jobs.recordQueued(first, 1000);
          expect(await holdUniqueKey(jobs, job(k, 'second', 2000), rule, 2000)).toEqual({ outcome: 'joined', holder: first.jobId });
          const claimed = await claim(jobs, first, 3000);
          if (claimed.outcome !== 'claimed') throw new Error('not claimed');
          expect(await holdUniqueKey(jobs, job(k, 'third', 3500), rule, 3500)).toEqual({ outcome: 'joined', holder: first.jobId });
          await jobs.complete({ jobId: first.jobId, token: claimed.token, state: 'succeeded', workerId: 'w1', now: 4000 }, claimed.record);
          expect(await holdUniqueKey(jobs, job(k, 'fourth', 5000), rule, 5000)).toEqual({ outcome: 'holds' });
          expect(await holdUniqueKey(jobs, job(k, 'fifth', 6000), rule, 6000)).toEqual({ outcome: 'joined', holder: 'fourth' });
        });

        it('joins a holder with no record yet for a while, then takes over a publish that never finished', async () => {
          const k = key();
          await holdUniqueKey(jobs, job(k, 'never-sent', 1000), rule, 1000);
          expect(await holdUniqueKey(jobs, job(k, 'b', 2000), rule, 2000)).toEqual({ outcome: 'joined', holder: 'never-sent' });
          const later = 1000 + UNIQUE_RECORD_GRACE_MS;
          expect(await holdUniqueKey(jobs, job(k, 'c', later), { ...rule, forSeconds: 3600 }, later)).toEqual({ outcome: 'holds' });
        });

        it('of many publishes of one key at once, exactly one holds it and every other joins that one', async () => {
          const k = key();
          const outcomes = await Promise.all(Array.from({ length: 20 }, (_, i) => holdUniqueKey(jobs, job(k, `p${i}`, 7000), rule, 7000)));
          const holders = outcomes.map((o, i) => (o.outcome === 'holds' ? `p${i}` : undefined)).filter((h) => h !== undefined);
          expect(holders).toHaveLength(1);
          for (const o of outcomes) if (o.outcome === 'joined') expect(o.holder).toBe(holders[0]);
        });

        it('a job published before its holder, after its own window had ended, is no duplicate of it', async () => {
          const k = key();
          await holdUniqueKey(jobs, job(k, 'late-holder', 100_000), rule, 100_000);
          // Published at 1000 (window to 61,000), it reaches a dispatcher only now.
          expect(await holdUniqueKey(jobs, job(k, 'early', 1000), rule, 100_500)).toEqual({ outcome: 'holds' });
        });
      });
    });

    describe('debounce cycles', () => {
      let n = 0;
      const key = () => `doc ${Date.now()}-${++n}`;
      const publish = (k: string, jobId: string, now: number, body = `{"n":${now}}`) => ({
        task: 'reindex',
        key: k,
        jobId,
        body,
        now,
        dueAt: now + 2_000,
        maxDueAt: now + 10_000,
        abandonedBefore: now - DEBOUNCE_ABANDONED_MS,
      });

      it('opens a cycle when none is open; a later publish joins it, its body and due time the latest, the first’s job and maxDueAt kept', async () => {
        const k = key();
        expect(await jobs.debounce(publish(k, 'a', 1000))).toEqual({
          landed: true,
          started: true,
          cycle: { pending: 'a', seq: 1, firstAt: 1000, dueAt: 3000, maxDueAt: 11_000 },
        });
        expect(await jobs.debounce(publish(k, 'b', 1500, '{"last":true}'))).toEqual({
          landed: true,
          started: false,
          cycle: { pending: 'a', seq: 2, firstAt: 1000, dueAt: 3500, maxDueAt: 11_000 },
        });
        expect(await jobs.debounceCycle('reindex', k)).toEqual({
          pending: 'a',
          seq: 2,
          body: '{"last":true}',
          firstAt: 1000,
          dueAt: 3500,
          maxDueAt: 11_000,
        });
        // The same key of another task is another cycle; a key with no cycle reads as none.
        expect(await jobs.debounce({ ...publish(k, 'c', 1500), task: 'other-task' })).toMatchObject({ started: true });
        expect(await jobs.debounceCycle('reindex', key())).toBeUndefined();
      });

      it('says a publish written twice (the SDK retrying a write that landed) opened the cycle, so its job is sent', async () => {
        const k = key();
        await jobs.debounce(publish(k, 'a', 1000));
        expect(await jobs.debounce(publish(k, 'a', 1000))).toMatchObject({ landed: true, started: true, cycle: { pending: 'a', seq: 2 } });
      });

      it('of many publishes of a free key at once, exactly one opens the cycle and every other joins it', async () => {
        const k = key();
        const writes = await Promise.all(Array.from({ length: 20 }, (_, i) => jobs.debounce(publish(k, `p${i}`, 5000))));
        const opened = writes.filter((w) => w.landed && w.started);
        expect(opened).toHaveLength(1);
        const pending = `p${writes.findIndex((w) => w.landed && w.started)}`;
        for (const w of writes) expect(w).toMatchObject({ landed: true, cycle: { pending } });
        expect((await jobs.debounceCycle('reindex', k))?.seq).toBe(20);
      });

      it('refuses a publish over an abandoned cycle with it; a fresh cycle opens only over that very cycle', async () => {
        const k = key();
        await jobs.debounce(publish(k, 'lost', 1000));
        const later = 11_000 + DEBOUNCE_ABANDONED_MS + 1;
        const refused = await jobs.debounce(publish(k, 'b', later));
        expect(refused).toMatchObject({ landed: false, cycle: { pending: 'lost', seq: 1, maxDueAt: 11_000 } });
        if (refused.landed || !refused.cycle) throw new Error('expected the abandoned cycle');
        const [b, c] = await Promise.all([
          jobs.debounce(publish(k, 'b', later), refused.cycle),
          jobs.debounce(publish(k, 'c', later), refused.cycle),
        ]);
        expect([b, c].filter((w) => w.landed)).toHaveLength(1);
        const winner = b.landed ? 'b' : 'c';
        expect(await jobs.debounceCycle('reindex', k)).toMatchObject({ pending: winner, seq: 1, firstAt: later });
        // The loser's takeover names the cycle as it stands; written plainly, it joins.
        expect(b.landed ? c : b).toMatchObject({ landed: false, cycle: { pending: winner } });
        expect(await jobs.debounce(publish(k, 'd', later + 1))).toMatchObject({ landed: true, started: false, cycle: { pending: winner } });
      });

      it('closes a cycle only as it was read (its job, and its count when given); the next publish opens a new one', async () => {
        const k = key();
        await jobs.debounce(publish(k, 'a', 1000));
        const read = (await jobs.debounceCycle('reindex', k)) as NonNullable<Awaited<ReturnType<JobStore['debounceCycle']>>>;
        await jobs.debounce(publish(k, 'b', 1200));
        expect(await jobs.closeDebounce('reindex', k, read)).toBe(false);
        expect(await jobs.closeDebounce('reindex', k, { pending: 'b' })).toBe(false);
        expect(await jobs.closeDebounce('reindex', k, { pending: 'a', seq: 2 })).toBe(true);
        expect(await jobs.debounceCycle('reindex', k)).toBeUndefined();
        expect(await jobs.debounce(publish(k, 'c', 1300))).toMatchObject({ started: true, cycle: { pending: 'c', seq: 1 } });
        // A publisher letting go of the cycle its failed send opened: its job alone is checked.
        await jobs.debounce(publish(k, 'd', 1400));
        expect(await jobs.closeDebounce('reindex', k, { pending: 'c' })).toBe(true);
        expect(await jobs.debounceCycle('reindex', k)).toBeUndefined();
      });

      it('keeps a closed cycle’s body under its job, never over the body of a later publish of that cycle', async () => {
        const job = `kept-${Date.now()}-${++n}`;
        const cycle = { pending: job, seq: 3, body: '{"n":3}', firstAt: 1000, dueAt: 3000, maxDueAt: 11_000 };
        expect(await jobs.debouncedBody(job)).toBeUndefined();
        expect(await jobs.keepDebouncedBody(cycle, 4000)).toBe(true);
        expect(await jobs.keepDebouncedBody({ ...cycle, seq: 2, body: '{"n":2}' }, 4100)).toBe(false);
        expect(await jobs.keepDebouncedBody(cycle, 4200)).toBe(true);
        expect(await jobs.debouncedBody(job)).toBe('{"n":3}');
        // Another cycle of the same job id (a raw message's id sent again): its own body.
        expect(await jobs.keepDebouncedBody({ ...cycle, seq: 1, body: '{"again":1}', firstAt: 90_000 }, 95_000)).toBe(true);
        expect(await jobs.debouncedBody(job)).toBe('{"again":1}');
        // A kept body is no job record.
        expect(await jobs.get(job)).toBeUndefined();
      });

      describe('closed by dueJob (lib/settle/debounce-cycles.ts)', () => {
        const rule = { periodSeconds: 2, maxWaitSeconds: 10 };
        const job = (k: string, jobId: string, n: number) => ({ task: 'reindex', key: k, jobId, body: `{"n":${n}}` });

        it('waits while publishes put the job off, closes it once due with the last body, then runs that body for every later delivery', async () => {
          const k = key();
          expect(await publishDebounced(jobs, job(k, 'first', 1), rule, 1000)).toEqual({ outcome: 'started', jobId: 'first', dueAt: 3000 });
          expect(await publishDebounced(jobs, job(k, 'second', 2), rule, 2000)).toEqual({ outcome: 'joined', jobId: 'first', dueAt: 4000 });
          expect(await dueJob(jobs, 'reindex', k, 'first', 3000)).toEqual({ kind: 'wait', dueAt: 4000 });
          expect(await dueJob(jobs, 'reindex', k, 'first', 4000)).toEqual({ kind: 'run', body: '{"n":2}' });
          expect(await publishDebounced(jobs, job(k, 'third', 3), rule, 4100)).toMatchObject({ outcome: 'started', jobId: 'third' });
          expect(await dueJob(jobs, 'reindex', k, 'first', 9000)).toEqual({ kind: 'run', body: '{"n":2}' });
          // No cycle's job and nothing kept for it: a message from elsewhere, a publish at its arrival.
          expect(await dueJob(jobs, 'reindex', k, 'raw-1', 4200)).toEqual({ kind: 'publish' });
        });

        it('runs by maxWait after the first publish, however often publishes put it off', async () => {
          const k = key();
          for (let t = 0; t <= 12_000; t += 1000) await publishDebounced(jobs, job(k, `p${t}`, t), rule, 10_000 + t);
          expect(await dueJob(jobs, 'reindex', k, 'p0', 19_999)).toEqual({ kind: 'wait', dueAt: 20_000 });
          expect(await dueJob(jobs, 'reindex', k, 'p0', 20_000)).toEqual({ kind: 'run', body: '{"n":12000}' });
        });
      });
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

    it("adds a task day's attributed cost and reads it back", async () => {
      const queue = `task:t${++unique}`;
      const day = { queue, day: '2026-11-21', counters: { succeeded: 1 }, archived: {}, wait: emptyDuration(), run: emptyDuration() };
      const cost = { lambdaMbMs: 1024, sqsRequests: 0.25, writeUnits: 1.5 };
      await Promise.all([stats.add({ ...day, cost }, 99), stats.add({ ...day, cost }, 99)]);
      expect((await stats.get(queue, '2026-11-21'))?.cost).toEqual({ lambdaMbMs: 2048, sqsRequests: 0.5, writeUnits: 3 });
    });

    it("adds a queue's minute counters atomically and reads the minutes asked for", async () => {
      const queue = `q${++unique}`;
      await Promise.all([
        stats.addMinute?.(queue, '2026-11-21T10:00', { started: 2, succeeded: 1, archived: 0 }, 99),
        stats.addMinute?.(queue, '2026-11-21T10:00', { started: 1, succeeded: 2, archived: 1 }, 99),
        stats.addMinute?.(queue, '2026-11-21T10:02', { started: 0, succeeded: 4, archived: 0 }, 99),
      ]);
      expect(await stats.minutes?.(queue, ['2026-11-21T10:00', '2026-11-21T10:01', '2026-11-21T10:02'])).toEqual({
        '2026-11-21T10:00': { started: 3, succeeded: 3, archived: 1 },
        '2026-11-21T10:02': { started: 0, succeeded: 4, archived: 0 },
      });
      // A minute item never reads as a day.
      expect(await stats.get(queue, '2026-11-21')).toBeUndefined();
    });
  });
}
