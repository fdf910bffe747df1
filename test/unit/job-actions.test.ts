import type { ApiResponse } from '../../dashboard/api-types';
import { retryJob } from '../../lib/operate/job-actions';
import { encodeEnvelope } from '../../lib/wire/envelope';
import { dashboard, json } from '../helpers/dashboard';

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
