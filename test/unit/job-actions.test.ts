import type { ApiResponse } from '../../dashboard/api-types';
import { retryJob, runJobNow } from '../../lib/operate/job-actions';
import { dueShardOf } from '../../lib/policy/due-times';
import { encodeEnvelope } from '../../lib/wire/envelope';
import { dashboard, json, parked } from '../helpers/dashboard';

/** The ids of the job messages waiting in `queue`. */
const inQueue = (d: ReturnType<typeof dashboard>, queue: 'urgent' | 'routine') =>
  d.w.sqs.peek(d.w.urls.queues[queue] as string).map((m) => JSON.parse(m.body).id);

describe('retrying one archived job (the job page: POST /api/job/retry, lib/operate/job-actions.ts)', () => {
  it('sends its archived message back to its queue with its attempts reset, and leaves the rest of the archive', async () => {
    const d = dashboard();
    for (const id of ['a', 'b']) await d.w.send('routine', encodeEnvelope({ task: 'broken', payload: id, id }));
    await d.w.run();
    const answer = await json<ApiResponse<'/api/job/retry'>>(await d.post('/api/job/retry', { version: 'v1', id: 'b' }));
    expect(answer).toMatchObject({ outcome: 'retried', queue: 'routine', record: { state: 'queued', attempt: 0 } });
    expect(inQueue(d, 'routine')).toEqual(['b']);
    expect(d.w.sqs.peek(d.w.urls.archive)).toHaveLength(1);
    expect(d.logged).toContain('retry b in v1: retried');
    // It runs again, as the replay's job does (and fails again: the task always does).
    await d.w.run();
    expect(d.w.runs.filter((r) => r.payload === 'b')).toHaveLength(2);
  });

  it('says why it did not: a job in another state, one whose message left the archive, an unknown id', async () => {
    const d = dashboard();
    await d.w.send('urgent', encodeEnvelope({ task: 'ok', payload: 1, id: 'fine' }));
    await d.w.send('routine', encodeEnvelope({ task: 'broken', payload: 2, id: 'gone' }));
    await d.w.run();
    expect(await retryJob(d.ctx, 'fine')).toMatchObject({ outcome: 'not-archived', record: { state: 'succeeded' } });
    // Its message taken out of the archive (replayed by someone, or past retention) while its record stays archived.
    const [message] = await d.w.sqs.receive(d.w.urls.archive, { maxMessages: 1, waitSeconds: 0, visibilityTimeoutSeconds: 30 });
    await d.w.sqs.deleteBatch(d.w.urls.archive, [{ id: 'x', receiptHandle: message?.receiptHandle as string }]);
    expect(await retryJob(d.ctx, 'gone')).toMatchObject({ outcome: 'not-in-archive', record: { state: 'archived' } });
    expect(await retryJob(d.ctx, 'nobody')).toEqual({ outcome: 'unknown' });
    expect(inQueue(d, 'routine')).toEqual([]);
  });

  it('read-only refuses it and nothing moves', async () => {
    const d = dashboard({ readOnly: true });
    await d.w.send('routine', encodeEnvelope({ task: 'broken', payload: 1, id: 'r' }));
    await d.w.run();
    const response = await d.post('/api/job/retry', { version: 'v1', id: 'r' });
    expect(response.status).toBe(403);
    expect((await json(response)).error).toContain('read-only');
    expect(d.w.sqs.peek(d.w.urls.archive)).toHaveLength(1);
    expect(await d.w.jobs.get('r')).toMatchObject({ state: 'archived' });
  });
});

describe('running a delayed job now (the job page: POST /api/job/run-now, lib/operate/job-actions.ts)', () => {
  it('sends a parked job to its queue at once, due now (its body without runAt), and it runs', async () => {
    const d = dashboard();
    await parked(d, 'later');
    const answer = await json<ApiResponse<'/api/job/run-now'>>(await d.post('/api/job/run-now', { version: 'v1', id: 'later' }));
    const now = d.w.clock.now();
    expect(answer).toMatchObject({ outcome: 'sent', queue: 'urgent', record: { state: 'queued', runAt: now } });
    const [message] = d.w.sqs.peek(d.w.urls.queues.urgent as string);
    expect(JSON.parse(message?.body ?? '{}')).toEqual({ v: 1, task: 'ok', payload: 1, id: 'later' });
    expect((await d.w.jobs.get('later'))?.history.map((h) => h.detail)).toEqual([
      expect.stringContaining('due '),
      `run now (was due ${new Date(now + 3_600_000).toISOString()})`,
      'due: sent to its queue',
    ]);
    expect(d.logged).toContain('run now later in v1: sent');
    await d.w.run();
    expect(await d.w.jobs.get('later')).toMatchObject({ state: 'succeeded', result: JSON.stringify({ echo: 1 }) });
  });

  it('a failed send leaves it parked and due now, for the next sweep', async () => {
    const d = dashboard();
    await parked(d, 'later');
    const down = {
      ...d.ctx,
      queues: {
        ...d.ctx.queues,
        sendBatch: async () => {
          throw new Error('SQS is down');
        },
      },
    };
    const answer = await runJobNow(down, 'later');
    const now = d.w.clock.now();
    expect(answer).toMatchObject({ outcome: 'due', record: { state: 'scheduled' } });
    expect((await d.w.jobs.get('later'))?.runAt).toBeLessThanOrEqual(now);
    // Due for the sweep once its lease lapses, with the body made due now.
    d.w.clock.advance(61_000);
    const due = await d.w.jobs.dueJobs(dueShardOf('later'), d.w.clock.now(), d.w.clock.now(), 10);
    expect(due.map((j) => [j.jobId, JSON.parse(j.body).runAt])).toEqual([['later', undefined]]);
  });

  it('says why it did not: a job delayed in SQS (its message cannot be brought forward), one a sweep is sending, one not scheduled, an unknown id', async () => {
    const d = dashboard();
    await d.publisher.publish('ok', 'soon', { id: 'soon', delaySeconds: 600 });
    expect(await runJobNow(d.ctx, 'soon')).toMatchObject({ outcome: 'announced', record: { state: 'scheduled', announced: true } });
    // Its one message still waits in SQS for its time.
    expect(await d.w.sqs.depth(d.w.urls.queues.urgent as string)).toEqual({ visible: 0, inFlight: 0, delayed: 1 });
    await parked(d, 'swept');
    await d.w.jobs.leaseForSweep('swept', d.w.clock.now(), d.w.clock.now() + 60_000);
    expect(await runJobNow(d.ctx, 'swept')).toMatchObject({ outcome: 'sweeping', record: { state: 'scheduled' } });
    await d.w.send('urgent', encodeEnvelope({ task: 'ok', payload: 2, id: 'done' }));
    await d.w.run();
    expect(await runJobNow(d.ctx, 'done')).toMatchObject({ outcome: 'not-scheduled', record: { state: 'succeeded' } });
    expect(await runJobNow(d.ctx, 'nobody')).toEqual({ outcome: 'unknown' });
  });

  it('read-only refuses it and the job stays parked', async () => {
    const d = dashboard({ readOnly: true });
    await parked(d, 'later');
    const response = await d.post('/api/job/run-now', { version: 'v1', id: 'later' });
    expect(response.status).toBe(403);
    expect((await json(response)).error).toContain('read-only');
    expect(await d.w.jobs.get('later')).toMatchObject({ state: 'scheduled', runAt: d.w.clock.now() + 3_600_000 });
  });
});
