/**
 * On a `full` tracked queue the dispatcher, not SQS redrive, decides how a job ends. Receives that
 * started no attempt (released, waiting for a slot, held by a process that died) still count
 * toward `maxReceiveCount`; near that limit the dispatcher replaces the message by a fresh copy
 * instead of handing it back, so the job's record always reaches a terminal state and the DLQ
 * stays empty. Fakes with DLQ redrive wired as deployed; a virtual clock.
 */

import type { TrackingMode } from '../../lib/config/app-config';
import { payloadDigest } from '../../lib/policy/job-rules';
import type { TaskOptions } from '../../lib/tasks/task';
import { readArchiveRecord } from '../../lib/wire/archive-record';
import { encodeEnvelope } from '../../lib/wire/envelope';
import { succeedsOnAttempt } from '../helpers/factories';
import { type World, world } from '../helpers/world';

const MAX_RECEIVES = 4;

function redriveWorld(tasks: TaskOptions[], tracking: TrackingMode = 'full'): World {
  return world(
    tasks,
    { queues: [{ name: 'urgent', priority: 90, visibilityTimeoutSeconds: 30, maxReceiveCount: MAX_RECEIVES, tracking }] },
    { tracked: true, deadLetters: true },
  );
}

/** Receives the message `times` times and drops it, as dispatchers killed before they settled would. */
async function lostReceives(w: World, times: number): Promise<void> {
  const url = w.urls.queues.urgent as string;
  for (let i = 0; i < times; i++) {
    const got = await w.sqs.receive(url, { maxMessages: 10, waitSeconds: 0, visibilityTimeoutSeconds: 30 });
    expect(got).toHaveLength(1);
    w.clock.advance(30_001);
  }
}

const dlq = (w: World) => w.sqs.peek(w.sqs.createQueue('urgent-dlq'));
const left = (w: World) => w.sqs.peek(w.urls.queues.urgent as string);

const flaky = succeedsOnAttempt(2, { backoff: { baseSeconds: 2, capSeconds: 2 } });
const doomed = succeedsOnAttempt(Number.POSITIVE_INFINITY, { name: 'doomed' });

describe('near the redrive limit, a tracked job is requeued, never redriven', () => {
  it('a retry after receives lost with their processes goes out as a fresh copy; the job succeeds, the DLQ stays empty', async () => {
    const w = redriveWorld([flaky]);
    await w.send('urgent', encodeEnvelope({ task: 'flaky', payload: { n: 1 } }));
    await lostReceives(w, MAX_RECEIVES - 1);
    await w.run({ forMs: 60_000 });

    const jobId = w.reports[0]?.jobs[0]?.jobId as string;
    expect(await w.jobs.get(jobId)).toMatchObject({ state: 'succeeded', attempt: 2 });
    expect(w.runs.map((r) => [r.attempt, r.payload])).toEqual([
      [1, { n: 1 }],
      [2, { n: 1 }],
    ]);
    // The copy kept the job's id (it had none in its envelope: the first message id) and its wait.
    expect(new Set(w.runs.map((r) => r.ctx.jobId))).toEqual(new Set([jobId]));
    expect(dlq(w)).toEqual([]);
    expect(left(w)).toEqual([]);
  });

  it('a job whose attempts all fail after lost receives is archived as exhausted, not left retrying in the DLQ', async () => {
    const w = redriveWorld([doomed]);
    await w.send('urgent', encodeEnvelope({ task: 'doomed', payload: {}, id: 'job-d' }));
    await lostReceives(w, MAX_RECEIVES - 1);
    await w.run({ forMs: 120_000 });
    expect(await w.jobs.get('job-d')).toMatchObject({ state: 'archived', reason: 'exhausted', attempt: 3 });
    expect(readArchiveRecord(w.sqs.peek(w.urls.archive)[0]?.attributes ?? {})).toMatchObject({ reason: 'exhausted', jobId: 'job-d' });
    expect(dlq(w)).toEqual([]);
    expect(left(w)).toEqual([]);
  });

  it('a message released unstarted at its last receive (the invocation ending) is requeued', async () => {
    const w = redriveWorld([flaky]);
    await w.send('urgent', encodeEnvelope({ task: 'flaky', payload: {}, id: 'job-r' }));
    await lostReceives(w, MAX_RECEIVES - 1);
    const stop = new AbortController();
    // The stop arrives as the batch is received: nothing may start.
    const receive = w.queues.receive.bind(w.queues);
    w.queues.receive = async (...args) => {
      const got = await receive(...args);
      if (got.length > 0) stop.abort();
      return got;
    };
    await w.run({ signal: stop.signal });
    expect(w.reports.flatMap((r) => r.jobs.map((j) => j.outcome))).toEqual(['released']);
    expect(left(w).map((m) => [m.receiveCount, JSON.parse(m.body).id])).toEqual([[0, 'job-r']]);
    expect(dlq(w)).toEqual([]);
  });

  it('a job another live worker holds at its last receive is requeued to come back after the lease', async () => {
    const w = redriveWorld([flaky]);
    await w.send('urgent', encodeEnvelope({ task: 'flaky', payload: {}, id: 'job-l' }));
    await lostReceives(w, MAX_RECEIVES - 1);
    const held = await w.jobs.claim({
      jobId: 'job-l',
      task: 'flaky',
      payloadDigest: payloadDigest({}),
      queue: 'urgent',
      version: 'v1',
      publishedAt: 0,
      workerId: 'elsewhere',
      now: w.clock.now(),
      leaseUntil: w.clock.now() + 20_000,
    });
    expect(held.outcome).toBe('claimed');
    await w.run({ forMs: 60_000 });
    // Deferred as a copy delayed past the lease; the copy takes the lapsed lease over and runs.
    expect(w.reports.flatMap((r) => r.jobs.map((j) => j.outcome))).toEqual(['deferred', 'succeeded']);
    expect((await w.jobs.get('job-l'))?.history.map((h) => h.what)).toEqual(['started', 'took-over', 'succeeded']);
    expect(left(w)).toEqual([]);
    expect(dlq(w)).toEqual([]);
  });

  it('far from the limit, a retry is a visibility change of the same message, as before', async () => {
    const w = redriveWorld([flaky]);
    await w.send('urgent', encodeEnvelope({ task: 'flaky', payload: {} }));
    await w.run({ forMs: 60_000 });
    expect(w.sqs.requests.sendBatch).toBe(1);
    expect(w.sqs.requests.changeVisibilityBatch).toBe(1);
  });

  it('untracked queues keep SQS redrive as their end: a message received past its limit goes to the DLQ', async () => {
    const w = redriveWorld([flaky], 'off');
    await w.send('urgent', encodeEnvelope({ task: 'flaky', payload: {} }));
    await lostReceives(w, MAX_RECEIVES);
    await w.run({ forMs: 60_000 });
    expect(w.runs).toEqual([]);
    expect(dlq(w)).toHaveLength(1);
  });
});
