import { createServer, type Server } from 'node:net';
import { API_SHAPES } from '../../dashboard/api-shapes';
import { API_ROUTES, type ApiPath, type ApiRequest, type ApiResponse, TOKEN_HEADER } from '../../dashboard/api-types';
import { cachedFor, serveUi } from '../../dashboard/server/serve';
import { recentInvocationsOf } from '../../lib/adapters/cloudwatch';
import { jobRelations } from '../../lib/operate/flow-commands';
import { payloadDigest } from '../../lib/policy/job-rules';
import { orderTag } from '../../lib/settle/key-order';
import { encodeEnvelope } from '../../lib/wire/envelope';
import { dashboard, json, parked, running, TOKEN } from '../helpers/dashboard';

/** Where a JSON value holds an empty list: a shape check over an empty list checks nothing. */
function emptyLists(value: unknown, at: string): string[] {
  if (Array.isArray(value)) return value.length === 0 ? [at] : value.flatMap((v, i) => emptyLists(v, `${at}[${i}]`));
  if (typeof value !== 'object' || value === null) return [];
  return Object.entries(value).flatMap(([k, v]) => emptyLists(v, `${at}.${k}`));
}

describe('taskworker ui: the server routes (in-memory system)', () => {
  it('status: queue depths, dead letters and the archive of the version, with a strict CSP', async () => {
    const d = dashboard();
    await d.w.send('urgent', encodeEnvelope({ task: 'ok', payload: 1 }));
    await d.w.send('urgent', encodeEnvelope({ task: 'ok', payload: 2 }));
    const response = await d.get('/api/status');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-security-policy')).toContain("script-src 'self'");
    const status = await json<ApiResponse<'/api/status'>>(response);
    expect(status.queues.find((q) => q.queue === 'urgent')?.depth.visible).toBe(2);
    expect(status.drained).toBe(false);
    expect(status.archive).toBe(0);
  });

  it("status on AWS: the dispatcher's recent invocations from CloudWatch, and the overview still answers when CloudWatch refuses", async () => {
    const seen: string[] = [];
    const fine = dashboard({
      invocations: async (version) => {
        seen.push(version);
        return recentInvocationsOf(`test-${version}-dispatcher`, 60, [
          { Id: 'inv', Values: [3, 4] },
          { Id: 'conc', Values: [1, 2] },
        ]);
      },
    });
    expect((await json(await fine.get('/api/status'))).invocations).toEqual({
      functionName: 'test-v1-dispatcher',
      minutes: 60,
      invocations: 7,
      errors: 0,
      maxConcurrent: 2,
    });
    expect(seen).toEqual(['v1']);
    const refused = dashboard({
      invocations: async () => {
        throw Object.assign(new Error('not authorized to perform cloudwatch:GetMetricData'), { name: 'AccessDenied' });
      },
    });
    const response = await refused.get('/api/status');
    expect(response.status).toBe(200);
    expect((await json(response)).invocations).toEqual({ unavailable: 'AccessDenied: not authorized to perform cloudwatch:GetMetricData' });
  });

  it('meta: the versions, queues and tasks, and whether each task validates', async () => {
    const meta = await json<ApiResponse<'/api/meta'>>(await dashboard().get('/api/meta'));
    expect(meta.versions).toEqual(['v0', 'v1']);
    expect(meta.tasks).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ name: 'strict', validates: true }),
        expect.objectContaining({ name: 'ok', validates: false }),
      ]),
    );
  });

  it('pages jobs newest first without skipping or repeating jobs updated in the same millisecond', async () => {
    const d = dashboard();
    for (let i = 0; i < 7; i++) {
      await d.w.send('routine', encodeEnvelope({ task: 'broken', payload: { i }, id: `job-${i}` }));
    }
    await d.w.run();
    // Every archived record updated at one of two instants: ties across the page boundary.
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 10; page++) {
      const body = await json<ApiResponse<'/api/jobs'>>(
        await d.get(`/api/jobs?state=archived&limit=3${cursor ? `&cursor=${cursor}` : ''}`),
      );
      seen.push(...body.jobs.map((j) => j.jobId));
      if (!body.next) break;
      cursor = body.next;
    }
    expect(seen.sort()).toEqual(Array.from({ length: 7 }, (_, i) => `job-${i}`));
  });

  it('succeeded jobs of queues that list them page newest first; a state without an index is one page of what a scan found, marked so, with no cursor', async () => {
    const d = dashboard();
    for (let i = 0; i < 4; i++) await d.w.send('urgent', encodeEnvelope({ task: 'ok', payload: i, id: `s-${i}` }));
    await d.w.run();
    const listed = await json<ApiResponse<'/api/jobs'>>(await d.get('/api/jobs?state=succeeded&limit=2'));
    expect(listed.jobs).toHaveLength(2);
    expect(listed.scanned).toBeUndefined();
    expect(listed.next).toBeDefined();
    // Queued jobs have no index: the page says it scanned.
    await d.ctx.controls?.change('routine', { paused: true }, d.w.clock.now());
    for (let i = 0; i < 3; i++) await d.publisher.publish('ok', i, { queue: 'routine', id: `q-${i}` });
    const scanned = await json<ApiResponse<'/api/jobs'>>(await d.get('/api/jobs?state=queued&limit=2'));
    expect(scanned.scanned).toBe(true);
    expect(scanned.next).toBeUndefined();
  });

  it('a job page carries the archived message of an archived job (its payload), as data', async () => {
    const d = dashboard();
    const payload = { note: '<img src=x onerror=alert(1)>' };
    await d.w.send('routine', encodeEnvelope({ task: 'broken', payload, id: 'job-x' }));
    await d.w.run();
    const view = await json<ApiResponse<'/api/job'>>(await d.get('/api/job?id=job-x'));
    expect(view.job).toMatchObject({ state: 'archived', reason: 'exhausted' });
    expect(view.job?.lastError?.message).toContain('<img src=x onerror=alert(1)>');
    expect(JSON.parse(view.archived?.body ?? '{}').payload).toEqual(payload);
    // Looking did not take the message out of the archive.
    expect(d.w.sqs.peek(d.w.urls.archive)).toHaveLength(1);
    expect((await d.get('/api/job?id=nope')).status).toBe(404);
  });

  it('a job page reads a result kept in the bucket back into job.result, up to 1 MiB; a larger one is named with its size and why', async () => {
    const d = dashboard();
    await d.publisher.publish('ok', { text: 'r'.repeat(5_000) }, { id: 'kept' });
    await d.publisher.publish('ok', { text: 'R'.repeat(1_100_000) }, { id: 'huge' });
    await d.w.run();
    const kept = await json<ApiResponse<'/api/job'>>(await d.get('/api/job?id=kept'));
    expect(kept.job?.resultRef?.key).toMatch(/^results\/kept\//);
    expect(JSON.parse(kept.job?.result ?? 'null')).toEqual({ echo: { text: 'r'.repeat(5_000) } });
    expect(kept.resultUnread).toBeUndefined();
    const huge = await json<ApiResponse<'/api/job'>>(await d.get('/api/job?id=huge'));
    expect(huge.job?.result).toBeUndefined();
    expect(huge.job?.resultRef?.bytes).toBeGreaterThan(1_100_000);
    expect(huge.resultUnread).toBe(`${huge.job?.resultRef?.bytes} bytes: more than the page shows`);
    // A kept result gone from the bucket (expired, deleted by hand): the page says what S3 said.
    d.payloads.store.objects.clear();
    const gone = await json<ApiResponse<'/api/job'>>(await d.get('/api/job?id=kept'));
    expect(gone.job?.result).toBeUndefined();
    expect(gone.resultUnread).toMatch(/^No object s3:\/\/test-v1-000000000000-us-east-1\/results\/kept\//);
  });

  it('finds a job whose id holds URL syntax (/ ? & # %), as the page encodes it', async () => {
    const d = dashboard();
    const id = 'orders/42?retry=1&x=#a%2Fb';
    await d.w.send('routine', encodeEnvelope({ task: 'broken', payload: 1, id }));
    await d.w.run();
    const view = await json<ApiResponse<'/api/job'>>(await d.get(`/api/job?id=${encodeURIComponent(id)}`));
    expect(view.job?.jobId).toBe(id);
  });

  it('replays one selected archived message: back in its queue, attempts reset, the others left in the archive; the action is logged', async () => {
    const d = dashboard();
    for (const id of ['a', 'b', 'c']) await d.w.send('routine', encodeEnvelope({ task: 'broken', payload: id, id }));
    await d.w.run();
    const archived = await json<ApiResponse<'/api/archive'>>(await d.get('/api/archive?task=broken'));
    expect(archived).toHaveLength(3);
    expect(await json(await d.get('/api/archive/count?reason=exhausted'))).toEqual({ count: 3, capped: false });
    const chosen = archived.find((m) => m.record?.jobId === 'b');
    const result = await json(await d.post('/api/archive/replay', { version: 'v1', messageIds: [chosen?.messageId] }));
    expect(result).toEqual({ replayed: 1, skipped: [] });
    expect(d.w.sqs.peek(d.w.urls.archive)).toHaveLength(2);
    expect(d.w.sqs.peek(d.w.urls.queues.routine as string).map((m) => JSON.parse(m.body).id)).toEqual(['b']);
    expect(await d.w.jobs.get('b')).toMatchObject({ state: 'queued', attempt: 0 });
    expect(d.logged.join('\n')).toContain('replay');
  });

  it('cancels a scheduled job, and says so for one that is not', async () => {
    const d = dashboard();
    const parked = await d.w.jobs.park({
      jobId: 'later',
      task: 'ok',
      payloadDigest: payloadDigest(1),
      queue: 'urgent',
      version: 'v1',
      publishedAt: d.w.clock.now(),
      runAt: d.w.clock.now() + 3_600_000,
      body: encodeEnvelope({ task: 'ok', payload: 1, id: 'later' }),
      workerId: 'test',
      now: d.w.clock.now(),
    });
    expect(parked.outcome).toBe('parked');
    expect(await json(await d.post('/api/job/cancel', { version: 'v1', id: 'later' }))).toMatchObject({ outcome: 'cancelled' });
    expect(await d.w.jobs.get('later')).toMatchObject({ state: 'cancelled' });
    expect(await json(await d.post('/api/job/cancel', { version: 'v1', id: 'later' }))).toMatchObject({ outcome: 'not-scheduled' });
  });

  it("publishes through the library, refusing a payload the task's validate refuses (naming it) before anything is sent", async () => {
    const d = dashboard();
    const refused = await d.post('/api/publish', { version: 'v1', task: 'strict', payload: { to: 42 } });
    expect(refused.status).toBe(400);
    expect((await json(refused)).error).toBe("payload refused by strict's validate: to must be a string, got 42");
    expect(d.w.sqs.peek(d.w.urls.queues.urgent as string)).toHaveLength(0);
    const published = await json<ApiResponse<'/api/publish'>>(
      await d.post('/api/publish', { version: 'v1', task: 'strict', payload: { to: 'a@b.c' } }),
    );
    expect(published.queue).toBe('urgent');
    expect(d.w.sqs.peek(d.w.urls.queues.urgent as string).map((m) => JSON.parse(m.body).id)).toEqual([published.jobId]);
    expect(await d.w.jobs.get(published.jobId)).toMatchObject({ state: 'queued' });
  });

  it('redrives a dead-letter queue back to its queue (by the client where the service has no move task)', async () => {
    const d = dashboard();
    await d.w.sqs.sendBatch(d.ctx.urls.deadLetter.urgent as string, [{ id: '0', body: encodeEnvelope({ task: 'ok', payload: 1 }) }]);
    const [result] = await json<ApiResponse<'/api/dlq/redrive'>>(await d.post('/api/dlq/redrive', { version: 'v1', queue: 'urgent' }));
    expect(result).toMatchObject({ queue: 'urgent', messages: 1, via: 'client' });
    expect(d.w.sqs.peek(d.w.urls.queues.urgent as string)).toHaveLength(1);
  });

  describe('jobs that wait for other jobs', () => {
    it('a job page lists what it waits for and what waits for it, each with its state; the flow view counts the whole flow', async () => {
      const d = dashboard();
      await d.publisher.publishBatch([
        { task: 'ok', payload: 'p', options: { id: 'p' } },
        { task: 'broken', payload: 'a', options: { id: 'a', dependsOn: ['p'] } },
        { task: 'ok', payload: 'z', options: { id: 'z', dependsOn: ['a'] } },
        { task: 'ok', payload: 'side', options: { id: 'side', dependsOn: ['p'], onDependencyFailure: 'ignore' } },
      ]);
      await d.w.run();
      const view = await json<ApiResponse<'/api/job'>>(await d.get('/api/job?id=a'));
      expect(view.relations?.dependencies).toEqual({
        total: 1,
        read: 1,
        counts: { succeeded: 1 },
        jobs: [{ jobId: 'p', state: 'succeeded', task: 'ok' }],
        complete: true,
      });
      expect(view.relations?.dependents?.jobs).toEqual([{ jobId: 'z', state: 'archived', task: 'ok', reason: 'dependency-failed' }]);
      // A job in no flow carries no relations.
      await d.w.send('urgent', encodeEnvelope({ task: 'ok', payload: 0, id: 'alone' }));
      await d.w.run();
      expect((await json<ApiResponse<'/api/job'>>(await d.get('/api/job?id=alone'))).relations).toBeUndefined();
      // From any of its jobs, the flow is the same four, as the table has them.
      const flow = await json<ApiResponse<'/api/flow'>>(await d.get('/api/flow?id=z'));
      expect(flow.jobs.map((j) => j.jobId).sort()).toEqual(['a', 'p', 'side', 'z']);
      expect(flow.counts).toEqual({ succeeded: 2, archived: 2 });
      expect(flow.complete).toBe(true);
      for (const j of flow.jobs) expect((await d.w.jobs.get(j.jobId))?.state).toBe(j.state);
      expect((await d.get('/api/flow?id=nope')).status).toBe(404);
    });

    it('a fan-in callback counts its members by state and names only the first of them', async () => {
      const d = dashboard();
      const members = Array.from({ length: 30 }, (_, i) => ({ task: 'ok', payload: i }));
      await d.publisher.chord(members, { task: 'ok', payload: 'done', options: { id: 'cb' } });
      const view = await json<ApiResponse<'/api/job'>>(await d.get('/api/job?id=cb'));
      expect(view.job?.state).toBe('waiting');
      expect(view.relations?.dependencies).toMatchObject({ total: 30, read: 30, counts: { queued: 30 }, complete: false });
      expect(view.relations?.dependencies?.jobs).toHaveLength(20);
      expect(view.relations?.dependencies?.jobs[0]).toEqual({ jobId: 'cb.0', state: 'queued', task: 'ok' });
      // Read up to a bound: the rest are not read, and the answer says how many were.
      const record = await d.w.jobs.get('cb');
      const bounded = await jobRelations(d.w.jobs, record as NonNullable<typeof record>, { readLimit: 10, listed: 3 });
      expect(bounded.dependencies).toMatchObject({ total: 30, read: 10, counts: { queued: 10 } });
      await d.w.run();
      const done = await json<ApiResponse<'/api/job'>>(await d.get('/api/job?id=cb'));
      expect(done.job?.state).toBe('succeeded');
      expect(done.relations?.dependencies).toMatchObject({ counts: { succeeded: 30 }, complete: true });
      const member = await json<ApiResponse<'/api/job'>>(await d.get('/api/job?id=cb.7'));
      expect(member.job?.memberOf).toEqual({ id: 'cb', size: 30, index: 7 });
      expect(member.relations?.dependents?.jobs).toEqual([{ jobId: 'cb', state: 'succeeded', task: 'ok' }]);
    });

    it("cancelling a waiting job tells the jobs waiting for it: 'fail' ones are archived, 'ignore' ones go to their queue", async () => {
      const d = dashboard();
      await parked(d, 'x');
      await d.publisher.publish('ok', 'w', { id: 'w', dependsOn: ['x'] });
      await d.publisher.publishBatch([
        { task: 'ok', payload: 'f', options: { id: 'f', dependsOn: ['w'] } },
        { task: 'ok', payload: 'g', options: { id: 'g', dependsOn: ['w'], onDependencyFailure: 'ignore' } },
      ]);
      await d.w.run();
      expect((await d.w.jobs.get('w'))?.dependents?.map((e) => e.id).sort()).toEqual(['f', 'g']);
      const cancelled = await json<ApiResponse<'/api/job/cancel'>>(await d.post('/api/job/cancel', { version: 'v1', id: 'w' }));
      expect(cancelled).toMatchObject({ outcome: 'cancelled', record: { state: 'cancelled' } });
      expect(await d.w.jobs.get('w')).toMatchObject({ state: 'cancelled' });
      expect(await d.w.jobs.get('f')).toMatchObject({ state: 'archived', reason: 'dependency-failed' });
      expect((await d.w.jobs.get('g'))?.state).toMatch(/^(scheduled|queued)$/);
      expect(d.w.sqs.peek(d.w.urls.queues.urgent as string).map((m) => JSON.parse(m.body).id)).toContain('g');
      expect(await d.w.jobs.get('x')).toMatchObject({ state: 'scheduled' });
      await d.w.run();
      expect(await d.w.jobs.get('g')).toMatchObject({ state: 'succeeded' });
      expect(d.w.runs.map((r) => r.payload)).toEqual(['g']);
    });

    it('cancels a flow: the job and every job waiting for it, transitively; a running one is reported, not cancelled', async () => {
      const d = dashboard();
      await parked(d, 'x');
      await running(d, 'r');
      await d.publisher.publish('ok', 'w', { id: 'w', dependsOn: ['x', 'r'] });
      await d.publisher.publish('ok', 'f', { id: 'f', dependsOn: ['w'] });
      await d.publisher.publish('ok', 'g', { id: 'g', dependsOn: ['f'], onDependencyFailure: 'ignore' });
      await d.w.run();
      const refused = await json<ApiResponse<'/api/flow/cancel'>>(await d.post('/api/flow/cancel', { version: 'v1', id: 'r' }));
      expect(refused).toEqual({
        root: 'r',
        cancelled: ['w', 'f', 'g'],
        notCancelled: [{ jobId: 'r', state: 'running' }],
        unknown: false,
        complete: true,
      });
      for (const id of ['w', 'f', 'g']) expect((await d.w.jobs.get(id))?.state).toBe('cancelled');
      expect(await d.w.jobs.get('r')).toMatchObject({ state: 'running' });
      expect(await d.w.jobs.get('x')).toMatchObject({ state: 'scheduled' });
      // Nothing of the flow was released to a queue on the way.
      expect(d.w.sqs.peek(d.w.urls.queues.urgent as string)).toHaveLength(0);
      expect(await json(await d.post('/api/flow/cancel', { version: 'v1', id: 'nope' }))).toMatchObject({ unknown: true, cancelled: [] });
      expect(d.logged.join('\n')).toContain('cancel flow of r in v1: 3 cancelled, 1 not cancelled');
    });

    it('the jobs page filters by tag: every state, newest first, paged without skipping a batch published in one millisecond', async () => {
      const d = dashboard();
      await d.publisher.publishBatch(
        Array.from({ length: 7 }, (_, i) => ({ task: 'ok', payload: i, options: { id: `t-${i}`, tags: ['nightly'] } })),
      );
      d.w.clock.advance(5);
      await d.publisher.publish('broken', 'late', { id: 't-late', tags: ['nightly', 'other'] });
      await d.publisher.publish('ok', 'untagged', { id: 'untagged' });
      await d.w.run();
      const seen: string[] = [];
      let cursor: string | undefined;
      for (let page = 0; page < 10; page++) {
        const body = await json<ApiResponse<'/api/jobs'>>(await d.get(`/api/jobs?tag=nightly&limit=3${cursor ? `&cursor=${cursor}` : ''}`));
        seen.push(...body.jobs.map((j) => j.jobId));
        if (!body.next) break;
        cursor = body.next;
      }
      expect(seen[0]).toBe('t-late');
      expect(seen.sort()).toEqual(['t-0', 't-1', 't-2', 't-3', 't-4', 't-5', 't-6', 't-late']);
      const states = (await json<ApiResponse<'/api/jobs'>>(await d.get('/api/jobs?tag=nightly&limit=50'))).jobs.map((j) => j.state);
      expect(new Set(states)).toEqual(new Set(['succeeded', 'archived']));
      expect((await json<ApiResponse<'/api/jobs'>>(await d.get('/api/jobs?tag=none-such'))).jobs).toEqual([]);
    });

    it.each([
      ['/api/jobs?tag=has%20space', 'tag "has space"'],
      [`/api/jobs?tag=${'x'.repeat(65)}`, 'expected 1..64 printable ASCII characters'],
      ['/api/jobs?tag=ok&cursor=AAAA', 'cursor'],
      ['/api/flow', 'id: required'],
      ['/api/key?task=ok', 'key is ""; expected 1..128 printable characters'],
      ['/api/key?key=k', 'task is empty'],
    ])('GET %s → 400 naming the bad value', async (path, named) => {
      const response = await dashboard().get(path);
      expect(response.status).toBe(400);
      expect((await json(response)).error).toContain(named);
    });
  });

  describe('the shared API table (dashboard/api-types.ts): the server answers what the page is typed to read', () => {
    it('the server registers every route of the table with its method, and no /api route the table lacks', () => {
      const registered = dashboard()
        .app.routes.filter((r) => r.path.startsWith('/api/') && r.method !== 'ALL')
        .map((r) => `${r.method} ${r.path}`);
      expect(registered.sort()).toEqual(
        Object.entries(API_ROUTES)
          .map(([path, method]) => `${method} ${path}`)
          .sort(),
      );
    });

    it("every route's JSON has the shape the table declares (checked on data that fills every list)", async () => {
      const d = dashboard({
        invocations: async (version) => recentInvocationsOf(`test-${version}-dispatcher`, 60, [{ Id: 'inv', Values: [3] }]),
        dispatchers: () => ({ pid: 1, alive: 2, died: 0 }),
      });
      // routine: archived jobs (the day's stats, the archive) and a message that is not an envelope
      // (skipped by a replay); urgent: nothing run today (its wait quantiles are NaN, null on the
      // wire), a parked job, a dead letter.
      // A flow through `a` (p → a → z, a fails) and a running `q` with a job waiting for it.
      await running(d, 'q');
      await d.publisher.publishBatch([
        { task: 'ok', payload: 'p', options: { id: 'p', tags: ['batch-1'] } },
        { task: 'broken', payload: 'a', options: { id: 'a', dependsOn: ['p'], tags: ['batch-1'] } },
        { task: 'ok', payload: 'z', options: { id: 'z', dependsOn: ['a'] } },
        { task: 'ok', payload: 'y', options: { id: 'y', dependsOn: ['q'] } },
      ]);
      await d.w.send('routine', encodeEnvelope({ task: 'broken', payload: 'b', id: 'b' }));
      await d.w.send('routine', 'not an envelope');
      await d.w.run();
      expect(await d.w.jobs.get('z')).toMatchObject({ state: 'archived', reason: 'dependency-failed' });
      await d.w.jobs.park({
        jobId: 'later',
        task: 'ok',
        payloadDigest: payloadDigest(1),
        queue: 'urgent',
        version: 'v1',
        publishedAt: d.w.clock.now(),
        runAt: d.w.clock.now() + 3_600_000,
        body: encodeEnvelope({ task: 'ok', payload: 1, id: 'later' }),
        workerId: 'test',
        now: d.w.clock.now(),
      });
      await d.w.sqs.sendBatch(d.ctx.urls.deadLetter.urgent as string, [{ id: '0', body: encodeEnvelope({ task: 'ok', payload: 2 }) }]);
      // An ordered key's item and line (lib/settle/key-order.ts): three numbered, the turn at #1; #2 the parked job, #3 not yet received.
      await d.w.jobs.takeNumbers('ok', 'acct 7', 3, d.w.clock.now());
      await d.w.jobs.tagJob('later', [orderTag('ok', 'acct 7')], 2);
      await d.w.jobs.tagJob('unseen', [orderTag('ok', 'acct 7')], 3);

      // Both queues under an operator's override, so status lists what was overridden.
      for (const queue of ['urgent', 'routine']) await d.ctx.controls?.change(queue, { priority: 50, slaSeconds: 10 }, d.w.clock.now());
      // A message in the archive without an archive record (sent there by hand): a bulk replay skips it, saying why.
      await d.w.sqs.sendBatch(d.w.urls.archive, [{ id: 'bare', body: 'no record' }]);
      // A task a 429 paused (RateLimitedError), so status lists the pauses in force.
      await d.ctx.controls?.pause('task:ok', d.w.clock.now() + 60_000, d.w.clock.now());
      // A dispatcher invocation that held job a and vanished (so the job is listed whatever its state).
      const now = d.w.clock.now();
      await d.ctx.workers?.beat({
        id: `w1@${now - 120_000}`,
        workerId: 'w1',
        role: 'scheduled',
        place: { function: 'fn', requestId: 'r1', container: 'c1' },
        startedAt: now - 120_000,
        deadline: now + 60_000,
        heardAt: now - 60_000,
        jobs: ['a'],
        held: 1,
        weights: { urgent: 0.9, routine: 0.1 },
      });
      d.jobLogLines.set('a', [
        { time: new Date(now).toISOString(), level: 'info', message: 'hello', source: 'task', attempt: 1, fields: { n: 1 } },
      ]);
      // Typed by the table, as the page sends them; the GETs run first, then the actions.
      const requests: { readonly [P in ApiPath]: ApiRequest<P> } = {
        '/api/meta': {},
        '/api/status': {},
        '/api/history': { queue: 'routine', days: 2 },
        '/api/jobs': { state: 'archived', queue: 'routine' },
        '/api/jobs/counts': { queue: 'routine' },
        '/api/job': { id: 'a' },
        '/api/flow': { id: 'a' },
        '/api/key': { task: 'ok', key: 'acct 7' },
        '/api/job/logs': { id: 'a' },
        '/api/archive': {},
        '/api/archive/count': { reason: 'exhausted' },
        // Before the replay below takes every archived message back to its queue.
        '/api/job/retry': { version: 'v1', id: 'b' },
        '/api/archive/replay': { version: 'v1' },
        '/api/dlq/redrive': { version: 'v1', queue: 'urgent' },
        // After the replay above: what is left in the archive (a message without an archive record) is skipped.
        '/api/bulk': { version: 'v1', action: 'replay', ratePerSecond: 100 },
        '/api/bulk/log': {},
        '/api/job/run-now': { version: 'v1', id: 'later' },
        // No job waits for it: refused as unknown (a completion's path is shown in test/unit/steps.test.ts and the Chromium test).
        '/api/token/complete': { version: 'v1', token: 'later:0:AAAAAAAAAAAAAAAA', value: { ok: true } },
        '/api/job/cancel': { version: 'v1', id: 'later' },
        '/api/flow/cancel': { version: 'v1', id: 'q' },
        '/api/publish': { version: 'v1', task: 'ok', payload: { n: 1 }, delaySeconds: 60 },
        '/api/queue/control': { version: 'v1', queue: 'routine', action: 'pause' },
        '/api/workers': {},
        '/api/throughput': { minutes: 5 },
        '/api/events': {},
      };
      const ask = <P extends ApiPath>(path: P, request: ApiRequest<P>) =>
        API_ROUTES[path] === 'GET'
          ? d.get(`${path}?${new URLSearchParams(Object.entries(request).map(([k, v]): [string, string] => [k, String(v)])).toString()}`)
          : d.post(path, request);
      for (const path of Object.keys(API_ROUTES) as ApiPath[]) {
        const response = await ask(path, requests[path]);
        const answer: unknown = await response.json();
        expect({ path, status: response.status, problems: API_SHAPES[path](answer, path) }).toEqual({ path, status: 200, problems: [] });
        expect(emptyLists(answer, path)).toEqual([]);
      }
    });

    it('a refusal is the error body the page reads', async () => {
      const response = await dashboard().get('/api/jobs?state=bogus');
      expect(Object.keys(await json(response))).toEqual(['error']);
    });
  });

  describe('guards', () => {
    it('refuses a state-changing request without the token, or with another one, and changes nothing', async () => {
      const d = dashboard();
      for (const headers of [{}, { [TOKEN_HEADER]: 'guess' }]) {
        const response = await d.post('/api/publish', { version: 'v1', task: 'ok', payload: 1 }, headers);
        expect(response.status).toBe(403);
        expect((await json(response)).error).toContain(TOKEN_HEADER);
      }
      expect(d.w.sqs.peek(d.w.urls.queues.urgent as string)).toHaveLength(0);
    });

    it('read-only: every action is refused, reads still work', async () => {
      const d = dashboard({ readOnly: true });
      await d.w.send('routine', encodeEnvelope({ task: 'broken', payload: 1, id: 'r' }));
      await d.w.run();
      for (const [path, body] of [
        ['/api/publish', { version: 'v1', task: 'ok', payload: 1 }],
        ['/api/archive/replay', { version: 'v1' }],
        ['/api/dlq/redrive', { version: 'v1' }],
        ['/api/job/cancel', { version: 'v1', id: 'r' }],
        ['/api/flow/cancel', { version: 'v1', id: 'r' }],
      ] as const) {
        const response = await d.post(path, body);
        expect(response.status).toBe(403);
        expect((await json(response)).error).toContain('read-only');
      }
      expect(d.w.sqs.peek(d.w.urls.archive)).toHaveLength(1);
      expect(d.w.sqs.peek(d.w.urls.queues.urgent as string)).toHaveLength(0);
      expect((await d.get('/api/archive')).status).toBe(200);
      expect(await (await d.get('/')).text()).toContain('content="read-only"');
    });

    it('refuses a Host it does not serve (DNS rebinding)', async () => {
      const d = dashboard({ acceptsHost: (host) => host === '127.0.0.1:8470' });
      expect((await d.get('/api/status', { host: 'attacker.example:8470' })).status).toBe(403);
      expect((await d.get('/api/status', { host: '127.0.0.1:8470' })).status).toBe(200);
    });

    it('bound beyond loopback: reads need the token too, which the printed URL sets as a cookie', async () => {
      const d = dashboard({ tokenForReads: true });
      expect((await d.get('/api/status')).status).toBe(401);
      expect((await d.get('/?token=wrong')).status).toBe(401);
      const opened = await d.get(`/?token=${TOKEN}`);
      expect(opened.status).toBe(303);
      const cookie = opened.headers.get('set-cookie') ?? '';
      expect(cookie).toContain('HttpOnly');
      expect(cookie).toContain('SameSite=Strict');
      expect((await d.get('/api/status', { cookie: cookie.split(';')[0] as string })).status).toBe(200);
    });

    it.each([
      ['/api/jobs?state=bogus', 400, 'state "bogus"'],
      ['/api/jobs?state=archived&queue=nope', 400, 'queue "nope"'],
      ['/api/jobs?state=archived&limit=0', 400, 'limit 0'],
      ['/api/jobs?state=archived&cursor=AAAA', 400, 'cursor'],
      ['/api/archive?reason=sad', 400, 'reason "sad"'],
      ['/api/status?version=..%2Fx', 400, 'version "../x"'],
      ['/api/status?version=v0', 500, 'no v0'],
    ])('GET %s → %d naming the bad value', async (path, status, named) => {
      const response = await dashboard().get(path);
      expect(response.status).toBe(status);
      expect((await json(response)).error).toContain(named);
    });

    it.each([
      ['not json', 'not JSON'],
      ['[1]', 'JSON object'],
      [JSON.stringify({ version: 'v1' }), 'task: required'],
      [JSON.stringify({ version: 'v1', task: 'nope', payload: 1 }), 'task "nope"'],
      [JSON.stringify({ version: 'v1', task: 'ok', payload: 1, delaySeconds: -1 }), 'delaySeconds -1'],
    ])('POST /api/publish %s → 400 naming it', async (body, named) => {
      const response = await dashboard().post('/api/publish', body);
      expect(response.status).toBe(400);
      expect((await json(response)).error).toContain(named);
    });
  });

  it('asks CloudWatch at most once a minute for the same metrics, and again after a failure', async () => {
    let clock = 0;
    const asked: string[] = [];
    let fail = false;
    const ask = cachedFor(
      60_000,
      async (name: string) => {
        asked.push(name);
        if (fail) throw new Error('throttled');
        return name.length;
      },
      () => clock,
    );
    await ask('a');
    clock += 3_000;
    await ask('a');
    await ask('b');
    expect(asked).toEqual(['a', 'b']);
    clock += 60_000;
    fail = true;
    await expect(ask('a')).rejects.toThrow('throttled');
    fail = false;
    expect(await ask('a')).toBe(1);
    expect(asked).toEqual(['a', 'b', 'a', 'a']);
  });

  it('serving on a port already taken rejects with EADDRINUSE (the command turns it into one line naming --port)', async () => {
    const busy: Server = createServer();
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
    const port = (busy.address() as { port: number }).port;
    try {
      const d = dashboard();
      await expect(
        serveUi({
          app: 'test',
          defaultVersion: 'v1',
          versions: async () => ['v1'],
          contextFor: async () => d.ctx,
          tasks: async () => [],
          readOnly: false,
          port,
          log: () => {},
        }),
      ).rejects.toMatchObject({ code: 'EADDRINUSE' });
    } finally {
      busy.close();
    }
  });
});
