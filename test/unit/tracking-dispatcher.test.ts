import type { TrackingMode } from '../../lib/config/app-config';
import { LeaseLostError } from '../../lib/errors';
import { payloadDigest } from '../../lib/policy/job-rules';
import { taskStatsKey, utcDay } from '../../lib/policy/stat-sums';
import type { TaskOptions } from '../../lib/tasks/task';
import { readArchiveRecord } from '../../lib/wire/archive-record';
import { encodeEnvelope } from '../../lib/wire/envelope';
import { succeedsOnAttempt } from '../helpers/factories';
import { type World, world } from '../helpers/world';

const ok: TaskOptions = { name: 'ok', queue: 'urgent', timeLimitSeconds: 5, run: () => 'done' };
const failing: TaskOptions = {
  name: 'failing',
  queue: 'urgent',
  timeLimitSeconds: 5,
  maxRetries: 1,
  backoff: { baseSeconds: 1, capSeconds: 1 },
  run: () => Promise.reject(new Error('boom')),
};
const envelope = (task: string, id?: string) => encodeEnvelope({ task, payload: {}, ...(id ? { id } : {}) });
const outcomes = (w: World) => w.reports.flatMap((r) => r.jobs.map((j) => j.outcome));

function trackedWorld(mode: TrackingMode, tasks: TaskOptions[] = [ok, failing]): World {
  return world(tasks, { queues: [{ name: 'urgent', priority: 90, visibilityTimeoutSeconds: 30, tracking: mode }] }, { tracked: true });
}

describe('dispatcher with job tracking (fakes)', () => {
  it.each<[TrackingMode, number]>([
    ['full', 2],
    ['failures', 0],
    ['off', 0],
  ])('%s mode: job-record writes per successful task = %d', async (mode, perTask) => {
    const w = trackedWorld(mode);
    for (let i = 0; i < 30; i++) await w.send('urgent', envelope('ok'));
    await w.run();
    expect(outcomes(w).filter((o) => o === 'succeeded')).toHaveLength(30);
    expect(w.jobs.writes / 30).toBe(perTask);
    // Stats: the invocation coalesces its batches' deltas (StatsBuffer) into one atomic ADD for the
    // queue and one for each task in it, written when it ends: not one per job, nor one per batch.
    expect(w.reports.length).toBeGreaterThan(1);
    expect(w.stats.writes).toBe(2);
    const day = utcDay(w.clock.now());
    expect((await w.stats.get('urgent', day))?.counters.succeeded).toBe(30);
    expect((await w.stats.get(taskStatsKey('ok'), day))?.counters.succeeded).toBe(30);
  });

  // The archive's write opens its fence; one more write closes it once the archive holds the message.
  it.each<[TrackingMode, number]>([
    ['full', 5],
    ['failures', 3],
  ])('%s mode: a job that fails twice (retry, then archive) costs %d job-record writes', async (mode, writes) => {
    const w = trackedWorld(mode);
    await w.send('urgent', envelope('failing', 'job-f'));
    await w.run({ forMs: 60_000 });
    expect(outcomes(w)).toEqual(['retried', 'archived']);
    expect(w.jobs.writes).toBe(writes);
    expect(await w.jobs.get('job-f')).toMatchObject({ state: 'archived', reason: 'exhausted', attempt: 2 });
  });

  it('full mode: counts attempts itself, not by SQS receives', async () => {
    const w = trackedWorld('full');
    await w.send('urgent', envelope('ok', 'job-a'));
    // Three earlier receives that never started the task (released, lost).
    for (let i = 0; i < 3; i++) {
      const [m] = await w.sqs.receive(w.urls.queues.urgent as string, { maxMessages: 1, waitSeconds: 0, visibilityTimeoutSeconds: 0 });
      expect(m?.receiveCount).toBe(i + 1);
    }
    await w.run();
    expect(w.runs[0]?.attempt).toBe(1);
    expect(await w.jobs.get('job-a')).toMatchObject({ state: 'succeeded', attempt: 1, result: '"done"' });
  });

  it('full mode: deletes a delivery of a finished job without running it', async () => {
    const w = trackedWorld('full');
    await w.send('urgent', envelope('ok', 'job-d'));
    await w.run();
    await w.send('urgent', envelope('ok', 'job-d'));
    await w.run();
    expect(w.runs).toHaveLength(1);
    expect(outcomes(w)).toEqual(['succeeded', 'duplicate']);
    expect(w.sqs.peek(w.urls.queues.urgent as string)).toHaveLength(0);
    expect((await w.jobs.get('job-d'))?.history.map((h) => h.what)).toEqual(['started', 'succeeded', 'skipped-duplicate']);
  });

  it('full mode: archives a job whose attempts were all lost with their workers (before SQS redrive)', async () => {
    const w = trackedWorld('full');
    await w.send('urgent', envelope('failing', 'job-lost'));
    // Two attempts claimed by workers that died (their leases lapse).
    for (let i = 0; i < 2; i++) {
      const claim = await w.jobs.claim({
        jobId: 'job-lost',
        task: 'failing',
        payloadDigest: payloadDigest({}),
        queue: 'urgent',
        version: 'v1',
        publishedAt: 0,
        workerId: `gone-${i}`,
        now: w.clock.now(),
        leaseUntil: w.clock.now() + 1,
      });
      expect(claim.outcome).toBe('claimed');
      w.clock.advance(10);
    }
    await w.run();
    expect(w.runs).toHaveLength(0);
    const [archived] = w.sqs.peek(w.urls.archive);
    expect(readArchiveRecord(archived?.attributes ?? {})).toMatchObject({ reason: 'exhausted', errorType: 'WorkerLostError', attempts: 3 });
    expect(await w.jobs.get('job-lost')).toMatchObject({ state: 'archived', attempt: 3 });
  });

  it.each([
    ['succeeded', ok, 'succeeded'],
    ['retried', failing, 'archived'],
  ])('full mode: a %s outcome whose record write fails leaves the message to come back, and the job still ends', async (_, task, final) => {
    const w = trackedWorld('full');
    const complete = w.jobs.complete.bind(w.jobs);
    let failures = 1;
    w.jobs.complete = async (...args) => {
      if (failures-- > 0) throw new Error('ProvisionedThroughputExceededException after SDK retries');
      return complete(...args);
    };
    await w.send('urgent', envelope(task.name, 'job-w'));
    await w.run({ forMs: 20_000 });
    // Neither deleted nor handed back early: the record still says running, the message waits.
    const [first] = w.reports.flatMap((r) => r.jobs);
    expect(first).toMatchObject({ jobId: 'job-w', unsettled: true, unrecorded: true });
    expect(w.sqs.peek(w.urls.queues.urgent as string)).toHaveLength(1);
    expect(await w.jobs.get('job-w')).toMatchObject({ state: 'running', attempt: 1 });
    await w.run({ forMs: 120_000 });
    expect(await w.jobs.get('job-w')).toMatchObject({ state: final });
    expect(w.sqs.peek(w.urls.queues.urgent as string)).toHaveLength(0);
    // The outcome that never reached its record is not counted: the stats say what the table says, once.
    const day = await w.stats.get('urgent', utcDay(w.clock.now()));
    const ended = final === 'succeeded' ? day?.counters.succeeded : day?.archived.exhausted;
    expect(ended).toBe(1);
  });

  it('ctx.heartbeat() extends the visibility, and rejects with LeaseLostError once a newer attempt holds the job', async () => {
    let beatAfterTakeover: unknown;
    const w: World = trackedWorld('full', [
      {
        ...ok,
        async run(_payload, ctx) {
          w.clock.advance(20_000);
          await ctx.heartbeat();
          const [message] = w.sqs.peek(w.urls.queues.urgent as string);
          expect(message).toBeDefined();
          // The message is hidden for a full visibility timeout from now, not from the receive.
          expect((await w.sqs.depth(w.urls.queues.urgent as string)).inFlight).toBe(1);
          w.clock.advance(40_000);
          const takeover = await w.jobs.claim({
            jobId: ctx.jobId,
            task: 'ok',
            payloadDigest: payloadDigest({}),
            queue: 'urgent',
            version: 'v1',
            publishedAt: 0,
            workerId: 'newer',
            now: w.clock.now(),
            leaseUntil: w.clock.now() + 60_000,
          });
          expect(takeover.outcome).toBe('claimed');
          beatAfterTakeover = await ctx.heartbeat().catch((e: unknown) => e);
        },
      },
    ]);
    await w.send('urgent', envelope('ok', 'job-h'));
    await w.run({ forMs: 120_000 });
    expect(beatAfterTakeover).toBeInstanceOf(LeaseLostError);
    // Its completion was rejected too: the newer attempt owns the job. (Its message, visible again
    // while it ran, may have been received meanwhile and deferred to the newer attempt's lease.)
    expect(w.reports.flatMap((r) => r.jobs).find((j) => j.attempt === 1)?.outcome).toBe('stale');
    expect(await w.jobs.get('job-h')).toMatchObject({ state: 'running', leaseOwner: 'newer', attempt: 2 });
  });

  it('gives handlers the fencing token: the claim number in full mode', async () => {
    const w = trackedWorld('full');
    await w.send('urgent', envelope('ok', 'job-t'));
    await w.run();
    expect(w.runs[0]?.ctx.fencingToken).toBe(1);
  });

  it('records malformed messages and unknown tasks as archived jobs under their own message ids', async () => {
    const w = trackedWorld('failures');
    await w.send('urgent', 'not json');
    await w.send('urgent', envelope('ghost', 'job-ghost'));
    await w.run();
    // The id the unknown task's envelope carried names no record: the message never ran as a job.
    expect(await w.jobs.get('job-ghost')).toBeUndefined();
    const archived = await w.jobs.list({ state: 'archived', queues: ['urgent'], limit: 10 });
    expect(archived.map((r) => r.reason).sort()).toEqual(['malformed', 'unknown-task']);
    const ghost = archived.find((r) => r.reason === 'unknown-task');
    expect(ghost).toMatchObject({ task: 'ghost', envelopeId: 'job-ghost' });
    // Archive records and job records agree on the id `jobs show` takes.
    const records = w.sqs.peek(w.urls.archive).map((m) => readArchiveRecord(m.attributes));
    expect(records.map((r) => r?.jobId).sort()).toEqual(archived.map((r) => r.jobId).sort());
    expect(records.every((r) => r?.jobId === r?.messageId)).toBe(true);
  });

  it('failures mode: a job that retried and then succeeded ends with a succeeded record, not retrying', async () => {
    const w = trackedWorld('failures', [ok, succeedsOnAttempt(2)]);
    await w.send('urgent', envelope('flaky', 'job-r'));
    await w.send('urgent', envelope('ok', 'job-ok'));
    await w.run({ forMs: 60_000 });
    expect(outcomes(w).sort()).toEqual(['retried', 'succeeded', 'succeeded']);
    expect(await w.jobs.get('job-r')).toMatchObject({ state: 'succeeded', attempt: 2 });
    expect(await w.jobs.list({ state: 'retrying', queues: ['urgent'], limit: 10 })).toEqual([]);
    // A job that succeeded at once still costs no write.
    expect(await w.jobs.get('job-ok')).toBeUndefined();
  });

  it("failures mode: another job's failure under the same id leaves the first job's record alone", async () => {
    const w = trackedWorld('failures');
    await w.send('urgent', envelope('failing', 'job-same'));
    await w.run({ forMs: 60_000 });
    const first = await w.jobs.get('job-same');
    expect(first).toMatchObject({ state: 'archived', task: 'failing' });
    await w.send('urgent', encodeEnvelope({ task: 'failing', payload: { other: true }, id: 'job-same' }));
    await w.run({ forMs: 60_000 });
    expect(await w.jobs.get('job-same')).toEqual(first);
  });

  it('keeps stats per batch even with tracking off', async () => {
    const w = trackedWorld('off');
    for (let i = 0; i < 3; i++) await w.send('urgent', envelope('ok'));
    await w.run();
    const day = new Date(w.clock.now()).toISOString().slice(0, 10);
    expect((await w.stats.get('urgent', day))?.counters.succeeded).toBe(3);
  });
});

describe('claims made while the bodies before them run (claim ahead of the slot)', () => {
  /**
   * One slot, and a task whose `stop` job tells the dispatcher to stop while it runs (after
   * `beforeStop`), so the jobs claimed behind it are still waiting for the slot. One job has run
   * first: the queue's tasks have a run time here, so a receive takes ten for the one slot.
   */
  async function stoppingWorld(beforeStop: (w: World) => Promise<void> = async () => {}) {
    const stop = new AbortController();
    let w: World | undefined;
    const stopper: TaskOptions = {
      name: 'stopper',
      queue: 'urgent',
      timeLimitSeconds: 5,
      maxRetries: 0,
      run: async (payload) => {
        if ((payload as { stop?: boolean }).stop) {
          await beforeStop(w as World);
          stop.abort();
        }
        return 'ok';
      },
    };
    w = world(
      [stopper],
      { queues: [{ name: 'urgent', priority: 90, visibilityTimeoutSeconds: 30, tracking: 'full' }], dispatcher: { concurrency: 1 } },
      { tracked: true },
    );
    await w.send('urgent', encodeEnvelope({ task: 'stopper', id: 'warm', payload: {} }));
    await w.run();
    await w.send('urgent', encodeEnvelope({ task: 'stopper', id: 'first', payload: { stop: true } }));
    return { w, stop: stop.signal };
  }

  it('a claimed job that cannot start after all (a stop while it waits for its slot) is handed back: queued, no attempt used, run at once next time', async () => {
    const { w, stop } = await stoppingWorld();
    for (let i = 0; i < 9; i++) await w.send('urgent', encodeEnvelope({ task: 'stopper', id: `behind-${i}`, payload: {} }));
    await w.run({ signal: stop });
    expect(w.runs.map((r) => (r.payload as { stop?: boolean }).stop === true)).toEqual([false, true]);
    // The nine behind it were claimed while it ran, and handed back, not left to their leases.
    expect(outcomes(w).filter((o) => o === 'released')).toHaveLength(9);
    for (let i = 0; i < 9; i++) {
      const record = await w.jobs.get(`behind-${i}`);
      expect(record).toMatchObject({ state: 'queued', attempt: 1, parks: 1 });
      expect(record?.leaseUntil).toBeUndefined();
      expect(record?.history.map((h) => h.what)).toEqual(['started', 'handed-back']);
      expect(record?.history.at(-1)?.detail).toBe('the dispatcher is stopping');
      // No body started: no first start is recorded until one does.
      expect(record?.firstStartedAt).toBeUndefined();
    }
    expect((await w.sqs.depth(w.urls.queues.urgent as string)).visible).toBe(9);
    // The next invocation runs each at once, as its first attempt (maxRetries 0 still allows it).
    await w.run();
    expect(w.runs).toHaveLength(11);
    expect(w.runs.slice(2).every((r) => r.attempt === 1)).toBe(true);
    for (let i = 0; i < 9; i++) {
      const record = await w.jobs.get(`behind-${i}`);
      expect(record).toMatchObject({ state: 'succeeded', attempt: 2 });
      // Its first start is its body's, the second claim's.
      const started = record?.history.filter((h) => h.what === 'started').at(-1);
      expect(started?.when).toEqual(expect.any(Number));
      expect(record?.firstStartedAt).toBe(started?.when);
    }
  });

  it('a handed-back claim whose job was cancelled meanwhile ends cancelled on its next claim, never run', async () => {
    // An operator cancels the claimed job behind the running one, then the dispatcher stops.
    const { w, stop } = await stoppingWorld(async (w) => void (await w.jobs.cancel('behind', w.clock.now())));
    await w.send('urgent', encodeEnvelope({ task: 'stopper', id: 'behind', payload: {} }));
    await w.run({ signal: stop });
    expect(await w.jobs.get('behind')).toMatchObject({ state: 'queued', cancelRequestedAt: expect.any(Number) });
    await w.run();
    expect(w.runs.map((r) => r.payload)).toEqual([{}, { stop: true }]);
    expect(await w.jobs.get('behind')).toMatchObject({ state: 'cancelled' });
  });
});
