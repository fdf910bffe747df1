import type { ApiResponse } from '../../dashboard/api-types';
import { countJobStates } from '../../lib/operate/job-counts';
import { encodeEnvelope } from '../../lib/wire/envelope';
import { dashboard, json, parked, running } from '../helpers/dashboard';

type Dashboard = ReturnType<typeof dashboard>;

/** A dispatcher invocation that said, `agoMs` ago, it held `jobs` (and `held` in all). */
async function beat(d: Dashboard, workerId: string, jobs: string[], agoMs = 0, held = jobs.length): Promise<void> {
  const now = d.w.clock.now();
  await d.ctx.workers?.beat({
    id: `${workerId}@${now - agoMs - 1000}`,
    workerId,
    role: 'scheduled',
    place: { container: 'local/1' },
    startedAt: now - agoMs - 1000,
    deadline: now + 300_000,
    heardAt: now - agoMs,
    jobs,
    held,
  });
}

/** What the tabs show: state → [count, at least, source]. */
async function counts(d: Dashboard, query = '') {
  const answer = await json<ApiResponse<'/api/jobs/counts'>>(await d.get(`/api/jobs/counts${query}`));
  return Object.fromEntries(answer.states.map((s) => [s.state, [s.count, s.atLeast, s.source]]));
}

describe("taskworker ui: the jobs page's tabs (GET /api/jobs/counts, GET /api/jobs?state=running)", () => {
  it('counts every state from what counts it without a scan: SQS, the live workers, today’s stats, the index', async () => {
    const d = dashboard();
    for (const id of ['s1', 's2', 's3']) await d.w.send('urgent', encodeEnvelope({ task: 'ok', payload: id, id }));
    for (const id of ['b1', 'b2']) await d.w.send('routine', encodeEnvelope({ task: 'broken', payload: id, id }));
    await d.w.run();
    await running(d, 'r1');
    await beat(d, 'w1', ['r1']);
    await parked(d, 'later');
    await parked(d, 'dropped');
    await d.post('/api/job/cancel', { version: 'v1', id: 'dropped' });
    await d.w.send('urgent', encodeEnvelope({ task: 'ok', payload: 'q', id: 'q1' }));

    expect(await counts(d)).toEqual({
      queued: [1, false, 'queue'],
      running: [1, false, 'workers'],
      retrying: [0, false, 'index'],
      succeeded: [3, false, 'today'],
      archived: [2, false, 'index'],
      scheduled: [1, false, 'index'],
      cancelled: [1, false, 'index'],
      waiting: [0, false, 'index'],
      deduplicated: [0, false, 'index'],
      sleeping: [0, false, 'index'],
      'waiting-token': [0, false, 'index'],
      'waiting-event': [0, false, 'index'],
      'waiting-key': [0, false, 'index'],
    });
    // One queue's: the routine queue's archives only.
    expect(await counts(d, '?queue=routine')).toMatchObject({
      queued: [0, false, 'queue'],
      archived: [2, false, 'index'],
      succeeded: [0, false, 'today'],
    });
  });

  it('an index count stops at its cap and says "at least"; running says so for jobs a beat had no room to name', async () => {
    const d = dashboard();
    for (let i = 0; i < 5; i++) await d.w.send('routine', encodeEnvelope({ task: 'broken', payload: i, id: `b${i}` }));
    await d.w.run();
    await running(d, 'r1');
    await beat(d, 'w1', ['r1'], 0, 3);
    const answer = await countJobStates(d.ctx, ['urgent', 'routine'], 3);
    expect(answer.cap).toBe(3);
    expect(answer.states.find((s) => s.state === 'archived')).toEqual({ state: 'archived', count: 3, atLeast: true, source: 'index' });
    expect(answer.states.find((s) => s.state === 'running')).toEqual({ state: 'running', count: 1, atLeast: true, source: 'workers' });
  });

  it("lists running jobs from the live workers' beats, confirmed running now, newest start first: not a vanished worker's, nor one that ended since", async () => {
    const d = dashboard();
    await running(d, 'old');
    d.w.clock.advance(1000);
    await running(d, 'new');
    d.w.clock.advance(1000);
    await running(d, 'orphan');
    await d.w.send('urgent', encodeEnvelope({ task: 'ok', payload: 'done', id: 'done' }));
    await d.w.run();
    await beat(d, 'w1', ['old', 'done']);
    await beat(d, 'w2', ['new'], 10_000, 4);
    // Not heard from for a minute: vanished, its job not listed as running by it.
    await beat(d, 'w3', ['orphan'], 60_000);

    const page = await json<ApiResponse<'/api/jobs'>>(await d.get('/api/jobs?state=running'));
    expect(page.jobs.map((j) => j.jobId)).toEqual(['new', 'old']);
    expect(page.fromWorkers).toEqual({ running: 2, uncarried: 3 });
    expect(page.scanned).toBeUndefined();
    expect(page.next).toBeUndefined();
    // A page holds the newest `limit`, and says how many there are.
    const one = await json<ApiResponse<'/api/jobs'>>(await d.get('/api/jobs?state=running&limit=1'));
    expect(one.jobs.map((j) => j.jobId)).toEqual(['new']);
    expect(one.fromWorkers?.running).toBe(2);
    // Filtered by queue like any state.
    expect((await json<ApiResponse<'/api/jobs'>>(await d.get('/api/jobs?state=running&queue=routine'))).jobs).toEqual([]);
  });
});
