/**
 * Jobs published to run later, on the emulators: a job due in 3 hours is parked in the jobs table
 * (its message deleted), swept back to its queue when the clock says it is due, and runs exactly
 * once — also when the sweep that sent it was lost before marking it handed over. A raw SDK
 * message with a far `runAt` is parked, never run early; a parked job can be cancelled. The truth is
 * read from the jobs table, the queues and the journal the task writes.
 */
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { type Clock, systemClock } from '../../lib/clock';
import { sweepDue } from '../../lib/invocation/parked-sweep';
import { DUE_SHARDS } from '../../lib/policy/due-times';
import { silentLogger } from '../../lib/ports';
import type { JobRecord } from '../../lib/track/job-record';
import type { JobStore } from '../../lib/track/job-stores';
import { tempFile } from '../helpers/emulators';
import { eventually, readJournal, runUntil } from '../helpers/run';
import { type System, systemPerTest } from '../helpers/system';

const fresh = systemPerTest();
const HOUR = 3_600_000;

/** Real time plus a shift the test moves: "three hours later" without waiting three hours. */
function shiftedClock(): Clock & { shift: number } {
  const clock = { shift: 0, now: () => Date.now() + clock.shift, sleep: systemClock.sleep };
  return clock;
}

const record = (s: System, jobId: string) => s.tracking?.jobs?.get(jobId) as Promise<JobRecord | undefined>;
const depthOf = async (s: System, queue: string) => {
  const d = await s.depth(queue);
  return d.visible + d.inFlight + d.delayed;
};

/** Runs a dispatcher on `clock` until the job is parked (`scheduled` by the dispatcher, with its body: no longer only its publisher's announcement). */
async function untilParked(s: System, clock: Clock, jobId: string): Promise<void> {
  await runUntil(
    s.dispatcher({ clock }),
    'the job to be parked',
    async () => {
      const r = await record(s, jobId);
      return r?.state === 'scheduled' && r.announced !== true;
    },
    20_000,
    clock,
  );
}

/** One scheduled invocation (the minute's schedule) of a dispatcher on `clock`: it sweeps, then works what waits. */
async function scheduledTick(s: System, clock: Clock, wrapJobs?: (jobs: JobStore) => JobStore): Promise<void> {
  const runtime = s.dispatcher({ clock, ...(wrapJobs ? { wrapJobs } : {}) });
  await runtime.invoke(clock.now() + 20_000, AbortSignal.timeout(8_000), 'scheduled');
}

describe('jobs published to run later', () => {
  it('parks a job due in 3 hours, sweeps it when due, and runs it once even when the first sweep was lost before its mark', async () => {
    const clock = shiftedClock();
    const s = await fresh({ tracked: true, clock });
    const journal = tempFile('journal.jsonl');
    const { jobId, runAt } = await s.publisher.publish('record', { journal, n: 1 }, { delaySeconds: 3 * 3600 });
    expect(runAt).toBeGreaterThan(Date.now() + 3 * HOUR - 60_000);

    await untilParked(s, clock, jobId);
    expect(await record(s, jobId)).toMatchObject({ state: 'scheduled', runAt, attempt: 0 });
    await eventually('the parked message to leave its queue', async () => (await depthOf(s, 'urgent')) === 0);

    // Ten minutes before it is due: the sweep sends it, delayed by what is left, and is lost before its mark.
    clock.shift = 3 * HOUR - 10 * 60_000;
    const lostMark = (jobs: JobStore): JobStore =>
      Object.assign(Object.create(jobs) as JobStore, {
        handOver: async () => {
          throw new Error('the sweeping process died here');
        },
      });
    await scheduledTick(s, clock, lostMark);
    expect(await record(s, jobId)).toMatchObject({ state: 'scheduled' });
    expect((await s.depth('urgent')).delayed).toBe(1);
    // A sweep within the lost one's lease sends nothing more.
    await scheduledTick(s, clock);
    expect(await depthOf(s, 'urgent')).toBe(1);

    // Due: its lease has lapsed, so the next sweep sends it again (at once) and marks it handed over.
    clock.shift = 3 * HOUR + 1_000;
    await scheduledTick(s, clock);
    const sent = await s.depth('urgent');
    expect(sent.visible + sent.delayed + sent.inFlight).toBeGreaterThanOrEqual(1);
    // The first copy's SQS delay (10 minutes) is real time; SQS holds it. Only the second copy runs now.
    await runUntil(
      s.dispatcher({ clock }),
      'the job to succeed',
      async () => (await record(s, jobId))?.state === 'succeeded',
      20_000,
      clock,
    );
    expect(readJournal(journal).filter((j) => j.jobId === jobId)).toHaveLength(1);
    const done = (await record(s, jobId)) as JobRecord;
    expect(done.attempt).toBe(1);
    // The sweep's own mark (`queued`) lands before or after the claim, whichever is first.
    // Scheduled by its publisher (announced), then by the dispatcher that parked it with its body.
    expect(done.history.map((h) => h.what).filter((w) => w !== 'queued')).toEqual(['scheduled', 'scheduled', 'started', 'succeeded']);
    expect(done.firstStartedAt).toBeGreaterThanOrEqual((runAt as number) - 1_000);
    // Nothing is listed as due any more: the claim took it out of the due index.
    for (let shard = 0; shard < DUE_SHARDS; shard++) {
      expect(await s.tracking?.jobs?.dueJobs(String(shard), Number.MAX_SAFE_INTEGER, clock.now(), 100)).toEqual([]);
    }
  });

  it('stops the copy of a lost sweep with the claim: the job runs once when both copies arrive', async () => {
    const clock = shiftedClock();
    const s = await fresh({ tracked: true, clock });
    const journal = tempFile('journal.jsonl');
    const { jobId } = await s.publisher.publish('record', { journal, n: 2 }, { delaySeconds: 7200 });
    await untilParked(s, clock, jobId);
    // Two sweeps at its due time, before any dispatcher looks: the first is lost before its mark, the
    // second (once the first's lease lapsed) sends it again. Two copies wait in the queue.
    const jobs = s.tracking?.jobs as JobStore;
    const sweep = (store: JobStore) =>
      sweepDue({ jobs: store, queues: s.sqs, urls: s.urls, clock, logger: silentLogger }, clock.now() + 10_000);
    clock.shift = 2 * HOUR;
    expect(await sweep(Object.assign(Object.create(jobs) as JobStore, { handOver: async () => false }))).toMatchObject({
      sent: 1,
      handedOver: 0,
    });
    clock.shift = 2 * HOUR + 61_000;
    expect(await sweep(jobs)).toMatchObject({ sent: 1, handedOver: 1 });
    await eventually('both copies to be in the queue', async () => (await s.depth('urgent')).visible === 2);
    await runUntil(
      s.dispatcher({ clock }),
      'the job to succeed and both copies to be gone',
      async () => (await record(s, jobId))?.state === 'succeeded' && (await depthOf(s, 'urgent')) === 0,
      20_000,
      clock,
    );
    expect(readJournal(journal).filter((j) => j.jobId === jobId)).toHaveLength(1);
    const done = (await record(s, jobId)) as JobRecord;
    expect(done.attempt).toBe(1);
    expect(done.history.map((h) => h.what)).toContain('skipped-duplicate');
  });

  it('parks a raw SDK message with a far runAt instead of running it early, and delays a near one in its queue', async () => {
    const clock = shiftedClock();
    const s = await fresh({ tracked: true, clock });
    const journal = tempFile('journal.jsonl');
    const far = Date.now() + 5 * HOUR;
    const near = Date.now() + 3_000;
    const send = (body: unknown) =>
      s.sqs.sqs.send(new SendMessageCommand({ QueueUrl: s.urls.queues.urgent, MessageBody: JSON.stringify(body) }));
    await send({ task: 'record', id: 'far-1', payload: { journal, n: 1 }, runAt: far });
    await send({ task: 'record', id: 'near-1', payload: { journal, n: 2 }, runAt: near });
    await runUntil(
      s.dispatcher({ clock }),
      'the near job to run and the far one to be parked',
      async () => (await record(s, 'near-1'))?.state === 'succeeded' && (await record(s, 'far-1'))?.state === 'scheduled',
      20_000,
      clock,
    );
    expect(readJournal(journal).map((j) => j.jobId)).toEqual(['near-1']);
    expect((await record(s, 'near-1'))?.firstStartedAt).toBeGreaterThanOrEqual(near - 1_000);
    expect(await record(s, 'far-1')).toMatchObject({ state: 'scheduled', runAt: far, attempt: 0 });
    // A second copy of the far message (a careless publisher's retry) finds it parked; still nothing runs.
    await send({ task: 'record', id: 'far-1', payload: { journal, n: 1 }, runAt: far });
    await runUntil(s.dispatcher({ clock }), 'the copy to be deleted', async () => (await depthOf(s, 'urgent')) === 0, 20_000, clock);
    expect(readJournal(journal).map((j) => j.jobId)).toEqual(['near-1']);
    // A runAt past what a publisher may ask for (a year) is archived, not kept for centuries.
    await send({ task: 'record', id: 'far-2', payload: { journal }, runAt: Date.now() + 3 * 366 * 86_400_000 });
    await runUntil(
      s.dispatcher({ clock }),
      'the far-off message to be archived',
      async () => (await depthOf(s, 'urgent')) === 0,
      20_000,
      clock,
    );
    const archived = await s.archive();
    expect(archived.map((a) => a.record)).toEqual([
      expect.objectContaining({ reason: 'malformed', code: 'bad-run-at', envelopeId: 'far-2' }),
    ]);
    expect(await record(s, 'far-2')).toBeUndefined();
  });

  it('cancels a parked job: the sweep never sends it; a job waiting in its queue is cancelled too and never runs', async () => {
    const clock = shiftedClock();
    const s = await fresh({ tracked: true, clock });
    const journal = tempFile('journal.jsonl');
    const { jobId } = await s.publisher.publish('record', { journal }, { runAt: new Date(Date.now() + 2 * HOUR) });
    await untilParked(s, clock, jobId);
    expect(await s.publisher.cancel(jobId)).toMatchObject({ outcome: 'cancelled', record: { state: 'cancelled' } });
    clock.shift = 2 * HOUR + 1_000;
    await scheduledTick(s, clock);
    expect(await depthOf(s, 'urgent')).toBe(0);
    expect(await record(s, jobId)).toMatchObject({ state: 'cancelled' });

    // A job waiting in its queue (delayed 60 s) has its publisher's record: it is cancelled too, and
    // its message, when it arrives, is deleted unrun.
    const soon = await s.publisher.publish('record', { journal }, { delaySeconds: 60 });
    expect(await s.publisher.cancel(soon.jobId)).toMatchObject({ outcome: 'cancelled', record: { state: 'cancelled' } });
    expect(readJournal(journal)).toEqual([]);
  });

  it('parks jobs of an untracked queue too: the parked record is the one write they pay for', async () => {
    const clock = shiftedClock();
    const s = await fresh({ tracked: true, clock });
    const journal = tempFile('journal.jsonl');
    const { jobId } = await s.publisher.publish('record', { journal, n: 3 }, { queue: 'bulk', delaySeconds: 3600 });
    await untilParked(s, clock, jobId);
    clock.shift = HOUR + 1_000;
    await scheduledTick(s, clock);
    await runUntil(s.dispatcher({ clock }), 'the job to run', () => readJournal(journal).length === 1, 20_000, clock);
    // Untracked: nothing claims it, so its record stays as the sweep left it.
    expect(await record(s, jobId)).toMatchObject({ state: 'queued' });
  });

  it('sweeps in a dispatcher that runs back to back too (taskworker dev --always-on): no schedule needed', async () => {
    const clock = shiftedClock();
    const s = await fresh({ tracked: true, clock });
    const journal = tempFile('journal.jsonl');
    const { jobId } = await s.publisher.publish('record', { journal, n: 4 }, { delaySeconds: 7200 });
    await untilParked(s, clock, jobId);
    clock.shift = 2 * HOUR + 1_000;
    await runUntil(s.dispatcher({ clock }), 'the job to run', async () => (await record(s, jobId))?.state === 'succeeded', 20_000, clock);
    expect(readJournal(journal).map((j) => j.jobId)).toEqual([jobId]);
  });
});
