/**
 * Bulk operations (lib/operate/bulk.ts, `taskworker jobs bulk`) on the in-memory system the
 * dashboard's routes run on: what a dry run counts is what the dashboard's archive filter counts
 * and what the run then acts on, no more; a rate spaces the actions on the clock; cancel takes the
 * jobs that have not ended by task, tag, key and state and leaves the rest; every run is logged.
 */
import type { ApiResponse } from '../../dashboard/api-types';
import { BulkRequestError, pacer, runBulk } from '../../lib/operate/bulk';
import { encodeEnvelope } from '../../lib/wire/envelope';
import { dashboard, json } from '../helpers/dashboard';

/** The ids of the jobs in the archive (a message that is not a job's envelope by its body). */
const archivedIds = (d: ReturnType<typeof dashboard>) =>
  d.w.sqs.peek(d.w.urls.archive).map((m) => (m.body.startsWith('{"v"') ? (JSON.parse(m.body).id as string) : m.body));
const queuedIds = (d: ReturnType<typeof dashboard>, queue: 'urgent' | 'routine') =>
  d.w.sqs.peek(d.w.urls.queues[queue] as string).map((m) => JSON.parse(m.body).id as string);

/** Eight `broken` jobs archived `exhausted` (task always throws) and two malformed messages. */
async function archiveSome(d: ReturnType<typeof dashboard>) {
  for (let i = 0; i < 8; i++) await d.w.send('routine', encodeEnvelope({ task: 'broken', payload: i, id: `b${i}` }));
  await d.w.send('urgent', '{"not":"an envelope"}');
  await d.w.send('urgent', 'not json');
  await d.w.run();
}

describe('jobs bulk replay and delete (the archive)', () => {
  it('a dry run counts what the dashboard filter counts and changes nothing; the run replays exactly those, at most --rate a second, and is logged', async () => {
    const d = dashboard();
    await archiveSome(d);
    const shown = await json<ApiResponse<'/api/archive/count'>>(await d.get('/api/archive/count?reason=exhausted'));
    const dry = await runBulk(d.ctx, 'replay', { reason: 'exhausted' }, { dryRun: true, who: 'ops@test' });
    expect(dry).toMatchObject({ matched: shown.count, done: 0, capped: false });
    expect(dry.matched).toBe(8);
    expect(dry.sample).toHaveLength(5);
    expect(dry.sample.every((s) => s.task === 'broken' && s.what === 'exhausted')).toBe(true);
    expect(archivedIds(d)).toHaveLength(10);
    expect(await d.ctx.operations?.day(new Date(d.w.clock.now()).toISOString().slice(0, 10))).toEqual([]);

    const startedAt = d.w.clock.now();
    const run = await runBulk(d.ctx, 'replay', { reason: 'exhausted' }, { ratePerSecond: 2, who: 'ops@test' });
    expect(run).toMatchObject({ matched: 8, done: 8, skipped: [] });
    // Eight replays at 2 a second: the last no sooner than 3.5 s after the first (the clock is virtual).
    expect(d.w.clock.now() - startedAt).toBeGreaterThanOrEqual(3_500);
    expect(queuedIds(d, 'routine').sort()).toEqual(['b0', 'b1', 'b2', 'b3', 'b4', 'b5', 'b6', 'b7']);
    // The malformed two stay: they were not selected.
    expect(archivedIds(d)).toHaveLength(2);
    for (let i = 0; i < 8; i++) expect(await d.w.jobs.get(`b${i}`)).toMatchObject({ state: 'queued', attempt: 0 });
    const [logged] = (await d.ctx.operations?.day(new Date(startedAt).toISOString().slice(0, 10))) ?? [];
    expect(logged).toMatchObject({
      who: 'ops@test',
      action: 'bulk replay',
      filter: { reason: 'exhausted' },
      matched: 8,
      done: 8,
      skipped: 0,
      ratePerSecond: 2,
    });
  });

  it('delete takes the selected messages out of the archive (by reason and time) and leaves their records', async () => {
    const d = dashboard();
    await archiveSome(d);
    const later = d.w.clock.now() + 1;
    expect((await runBulk(d.ctx, 'delete', { reason: 'malformed', since: later }, { dryRun: true, who: 't' })).matched).toBe(0);
    const deleted = await runBulk(d.ctx, 'delete', { reason: 'malformed' }, { who: 't' });
    expect(deleted).toMatchObject({ matched: 2, done: 2 });
    expect(archivedIds(d).sort()).toEqual(['b0', 'b1', 'b2', 'b3', 'b4', 'b5', 'b6', 'b7']);
    expect(await d.w.jobs.get('b0')).toMatchObject({ state: 'archived' });
  });

  it('stops at --limit and says more match; a second run does the rest', async () => {
    const d = dashboard();
    await archiveSome(d);
    const first = await runBulk(d.ctx, 'replay', { task: 'broken' }, { limit: 5, who: 't' });
    expect(first).toMatchObject({ matched: 5, capped: true, done: 5 });
    const second = await runBulk(d.ctx, 'replay', { task: 'broken' }, { who: 't' });
    expect(second).toMatchObject({ matched: 3, capped: false, done: 3 });
    expect(queuedIds(d, 'routine')).toHaveLength(8);
  });
});

describe('jobs bulk cancel', () => {
  it("cancels the selected jobs that have not ended (parked and queued), by task and tag; leaves other tasks' and ended jobs", async () => {
    const d = dashboard();
    const later = { delaySeconds: 3_600 };
    const nightly = await Promise.all([1, 2, 3].map((n) => d.publisher.publish('ok', { n }, { ...later, tags: ['nightly'] })));
    const queued = await d.publisher.publish('ok', { n: 4 }, { tags: ['nightly'] });
    const other = await d.publisher.publish('strict', { to: 'x' }, { ...later, tags: ['nightly'] });
    const untagged = await d.publisher.publish('ok', { n: 5 }, later);
    const dry = await runBulk(d.ctx, 'cancel', { task: 'ok', tag: 'nightly' }, { dryRun: true, who: 't' });
    expect(dry.matched).toBe(4);
    const run = await runBulk(d.ctx, 'cancel', { task: 'ok', tag: 'nightly' }, { who: 't' });
    expect(run).toMatchObject({ matched: 4, done: 4, skipped: [] });
    for (const { jobId } of [...nightly, queued]) expect(await d.w.jobs.get(jobId)).toMatchObject({ state: 'cancelled' });
    for (const { jobId } of [other, untagged]) expect((await d.w.jobs.get(jobId))?.state).not.toBe('cancelled');
    // The queued one's message is deleted when a dispatcher next receives it: it never runs.
    await d.w.run();
    expect(d.w.runs.filter((r) => JSON.stringify(r.payload) === JSON.stringify({ n: 4 }))).toEqual([]);
    expect(await d.w.jobs.get(queued.jobId)).toMatchObject({ state: 'cancelled' });
  });

  it('names a filter that does not fit the action, and a bad rate or limit', async () => {
    const d = dashboard();
    await expect(runBulk(d.ctx, 'cancel', { reason: 'exhausted' }, { who: 't' })).rejects.toThrow(BulkRequestError);
    await expect(runBulk(d.ctx, 'replay', { tag: 'x' }, { who: 't' })).rejects.toThrow('--tag "x": expected no --tag for replay');
    await expect(runBulk(d.ctx, 'cancel', { state: 'succeeded' }, { who: 't' })).rejects.toThrow('--state "succeeded": expected one of');
    await expect(runBulk(d.ctx, 'cancel', { queue: 'nope' }, { who: 't' })).rejects.toThrow(
      '--queue "nope": expected one of urgent, routine',
    );
    await expect(runBulk(d.ctx, 'cancel', {}, { who: 't', ratePerSecond: 0 })).rejects.toThrow('--rate 0');
    await expect(runBulk(d.ctx, 'cancel', { since: 5, until: 5 }, { who: 't' })).rejects.toThrow('--since');
  });
});

describe('pacer', () => {
  it('spaces actions 1/rate apart from the first, and never waits without a rate', async () => {
    let now = 0;
    const slept: number[] = [];
    const clock = {
      now: () => now,
      sleep: async (ms: number) => {
        slept.push(ms);
        now += ms;
      },
    };
    const pace = pacer(clock, 4);
    for (let i = 0; i < 5; i++) await pace();
    expect(now).toBe(1_000);
    expect(slept).toEqual([250, 250, 250, 250]);
    const free = pacer(clock, undefined);
    await free();
    expect(now).toBe(1_000);
  });
});
