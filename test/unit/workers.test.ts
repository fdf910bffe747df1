/**
 * Who is working, on what (issue 23): the worker registry's rules (live, vanished, ended), what
 * became of a vanished worker's jobs as their records say, and an invocation's presence — nothing
 * written while it only looks for work, its item from its first batch with the job its slot holds,
 * a beat every 15 s, its end marked.
 */
import { VirtualClock } from '../../lib/clock';
import { resolveConfig } from '../../lib/config/app-config';
import { MemoryJobStore } from '../../lib/fakes/memory-job-store';
import { MemoryLimitStore } from '../../lib/fakes/memory-limits';
import { MemoryQueueService } from '../../lib/fakes/memory-queue';
import { MemoryWorkerRegistry } from '../../lib/fakes/memory-workers';
import { createInvocation } from '../../lib/invocation/invocation';
import { processUsage, WorkerPresence } from '../../lib/invocation/presence';
import { listWorkers, renderWorkers } from '../../lib/operate/worker-views';
import { silentLogger } from '../../lib/ports';
import { seededRandom } from '../../lib/random';
import { InlineExecutor } from '../../lib/run/inline-executor';
import { createRegistry } from '../../lib/tasks/registry';
import { defineTask } from '../../lib/tasks/task';
import type { JobRecord } from '../../lib/track/job-record';
import { BEAT_INTERVAL_MS, fitItem, jobFate, VANISHED_AFTER_MS, type WorkerItem, workerStatus } from '../../lib/track/worker-registry';
import { inlineRuntime } from '../helpers/runtime';

const record = (over: Partial<JobRecord>): JobRecord => ({
  jobId: 'j1',
  task: 'slow',
  queue: 'urgent',
  version: 'v1',
  state: 'running',
  attempt: 1,
  updatedAt: 0,
  history: [],
  ...over,
});

describe('worker status', () => {
  it('is live while heard from within three beats, vanished after, ended once it said so', () => {
    expect(workerStatus({ heardAt: 1000 }, 1000 + VANISHED_AFTER_MS)).toBe('live');
    expect(workerStatus({ heardAt: 1000 }, 1001 + VANISHED_AFTER_MS)).toBe('vanished');
    expect(workerStatus({ heardAt: 1000, endedAt: 1000 }, 10_000_000)).toBe('ended');
  });
});

describe('what became of a held job', () => {
  it('reads the record: still leased by the worker, taken over, ended by another, retrying, missing', () => {
    expect(jobFate('j1', record({ leaseOwner: 'w1' }), 'w1')).toMatchObject({ heldByWorker: true, fate: 'running (lease held by w1)' });
    expect(jobFate('j1', record({ leaseOwner: 'w2', attempt: 2 }), 'w1')).toMatchObject({
      heldByWorker: false,
      fate: 'running, taken over by w2 (attempt 2)',
    });
    const done = record({
      state: 'succeeded',
      history: [
        { what: 'took-over', when: 1, worker: 'w2' },
        { what: 'succeeded', when: 2, worker: 'w2' },
      ],
    });
    expect(jobFate('j1', done, 'w1')).toMatchObject({ state: 'succeeded', fate: 'succeeded by w2' });
    expect(jobFate('j1', record({ state: 'retrying', attempt: 1 }), 'w1').fate).toBe('retrying (attempt 1 failed)');
    expect(jobFate('j1', undefined, 'w1')).toMatchObject({ state: 'unknown', fate: 'no job record' });
  });
});

describe('a worker item', () => {
  it('carries the job ids that fit one write unit and counts them all', () => {
    const ids = Array.from({ length: 60 }, (_, i) => `job-${String(i).padStart(30, '0')}`);
    const item = fitItem({ id: 'w@1', workerId: 'w', role: 'scheduled', place: {}, startedAt: 1, deadline: 2, heardAt: 1, jobs: ids });
    expect(item.held).toBe(60);
    expect(item.jobs.length).toBeGreaterThan(10);
    expect(item.jobs.length).toBeLessThan(60);
    expect(JSON.stringify(item).length).toBeLessThan(1024);
  });
});

describe("a worker's memory and CPU", () => {
  it('samples its own process: resident set against the limit, CPU used per wall time since the previous sample', () => {
    const sample = processUsage(() => 300 * 1_048_576, 1536);
    const spinUntil = process.cpuUsage().user + 30_000;
    while (process.cpuUsage().user < spinUntil) {
      // 30 ms of CPU: the next sample must see it.
    }
    const usage = sample();
    expect(usage).toMatchObject({ rssMb: 300, limitMb: 1536 });
    expect(usage?.cpuPercent).toBeGreaterThan(0);
  });

  it('says nothing in a process shared with others (its resident set is not its own)', () => {
    expect(processUsage(() => 0, 1536)()).toBeUndefined();
  });

  it('is carried by its beat and printed by taskworker workers', async () => {
    const workers = new MemoryWorkerRegistry();
    const presence = new WorkerPresence({
      registry: workers,
      clock: new VirtualClock(),
      logger: silentLogger,
      workerId: 'box-2',
      role: 'plain',
      place: {},
      startedAt: Date.UTC(2026, 0, 1),
      deadline: Date.UTC(2026, 0, 1) + 60_000,
      usage: () => ({ rssMb: 512, limitMb: 1536, cpuPercent: 61 }),
    });
    presence.working();
    await new Promise((resolve) => setImmediate(resolve));
    const [item] = await workers.list();
    expect(item?.usage).toEqual({ rssMb: 512, limitMb: 1536, cpuPercent: 61 });
    const clock = new VirtualClock(Date.UTC(2026, 0, 1) + 1_000);
    const view = await listWorkers({ workers, jobs: new MemoryJobStore({ historyLimit: 5, retentionDays: 1 }), clock });
    expect(renderWorkers(view)).toContain('  memory 512 MB of 1536 MB (rssLimitMb), CPU 61% of a core since its previous beat');
    await presence.end();
  });
});

describe('an invocation in the worker registry', () => {
  const config = resolveConfig({ app: 't', queues: [{ name: 'urgent', priority: 1, visibilityTimeoutSeconds: 30 }] });

  it('writes nothing while a scheduled invocation finds no work', async () => {
    const workers = new MemoryWorkerRegistry();
    const { runtime } = inlineRuntime(config, [], { tracking: { workers, limits: new MemoryLimitStore() } });
    await runtime.invoke(Date.now() + 2_000, undefined, 'scheduled');
    expect(workers.writes).toBe(0);
    expect(await workers.list()).toEqual([]);
    await runtime.close();
  });

  it('is listed from its first batch with where it runs, its deadline and the job its slot holds, and marked ended at its end', async () => {
    const workers = new MemoryWorkerRegistry();
    const jobs = new MemoryJobStore({ historyLimit: 50, retentionDays: 7 });
    let release = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const slow = defineTask({ name: 'slow', queue: 'urgent', timeLimitSeconds: 2, run: () => gate });
    const { runtime, sqs, urls } = inlineRuntime(config, [slow], { tracking: { workers, jobs }, workerId: 'box-1' });
    await sqs.sendBatch(urls.queues.urgent, [{ id: '0', body: JSON.stringify({ task: 'slow', id: 'job-1' }) }]);
    const deadline = Date.now() + 15_000;
    const stop = new AbortController();
    const running = runtime.invoke(deadline, stop.signal, 'plain', [], { function: 'fn', requestId: 'req-1', container: 'local/7' });
    let listed: WorkerItem | undefined;
    for (let i = 0; i < 100 && !listed?.jobs.length; i++) {
      await new Promise((r) => setTimeout(r, 20));
      listed = (await workers.list())[0];
    }
    expect(listed).toMatchObject({ workerId: 'box-1', role: 'plain', place: { function: 'fn', requestId: 'req-1', container: 'local/7' } });
    expect(listed?.jobs).toEqual(['job-1']);
    expect(listed?.deadline).toBeLessThanOrEqual(deadline);
    expect(listed?.weights?.urgent).toBe(1);
    const view = await listWorkers({ workers, jobs, clock: { now: () => Date.now(), sleep: async () => {} } });
    expect(view.workers[0]).toMatchObject({ status: 'live', jobs: [{ jobId: 'job-1', state: 'running', heldByWorker: true }] });
    expect(renderWorkers(view)).toContain('job-1 slow: running (lease held by box-1)');
    release();
    stop.abort();
    await running;
    const [ended] = await workers.list();
    expect(ended?.endedAt).toBeDefined();
    expect(workers.writes).toBe(2);
    expect((await listWorkers({ workers, jobs, clock: { now: () => Date.now(), sleep: async () => {} } })).workers).toEqual([]);
    await runtime.close();
  });

  it('beats every 15 s with the jobs its slots hold now', async () => {
    const workers = new MemoryWorkerRegistry();
    const clock = new VirtualClock(1_000_000);
    const presence = new WorkerPresence({
      registry: workers,
      clock,
      logger: silentLogger,
      workerId: 'w',
      role: 'scale-out',
      place: {},
      startedAt: clock.now(),
      deadline: clock.now() + 60_000,
      weights: () => ({ at: 1_000_000, shares: { urgent: 2 / 3, routine: 1 / 3 } }),
    });
    const observer = presence.observer();
    observer.onBatchStart?.({
      queue: 'urgent',
      jobs: [
        { messageId: 'm1', jobId: 'a' },
        { messageId: 'm2', jobId: 'b' },
      ],
    });
    observer.onBatch({ queue: 'urgent', jobs: [{ messageId: 'm1', jobId: 'a', outcome: 'succeeded', attempt: 1 }], settleRetries: 0 });
    clock.advance(BEAT_INTERVAL_MS);
    observer.onBatchStart?.({ queue: 'urgent', jobs: [{ messageId: 'm3', jobId: 'c' }] });
    observer.onBatch({ queue: 'urgent', jobs: [{ messageId: 'm3', jobId: 'c', outcome: 'succeeded', attempt: 1 }], settleRetries: 0 });
    await presence.end();
    expect(workers.writes).toBe(3);
    const [item] = await workers.list();
    expect(item).toMatchObject({ id: 'w@1000000', endedAt: 1_015_000, weights: { urgent: 0.667, routine: 0.333 }, weightsAt: 1_000_000 });
  });
});

/**
 * The weights an invocation's item shows (issue 31): `urgent` (priority 100, SLA 10 s) and `default`
 * (priority 40, SLA 60 s), a `default` job that runs 30 s of virtual time. The weights used to be the
 * selector's age estimates projected to each beat: while nothing was selected they grew fastest for
 * the shortest SLA, and a dispatcher running a default job showed `urgent 99%, default 1%`.
 */
describe("the selector's weights in the worker registry", () => {
  const config = resolveConfig({
    app: 't',
    queues: [
      { name: 'urgent', priority: 100, slaSeconds: 10, visibilityTimeoutSeconds: 60 },
      { name: 'default', priority: 40, slaSeconds: 60, visibilityTimeoutSeconds: 60 },
    ],
    dispatcher: { concurrency: 1, timeoutSeconds: 120, settleMarginMs: 500, killGraceMs: 100 },
  });

  function setup() {
    const clock = new VirtualClock();
    const sqs = new MemoryQueueService(clock);
    const urls = {
      queues: Object.fromEntries(config.queues.map((q) => [q.name, sqs.createQueue(q.name, { visibilityTimeoutSeconds: 60 })])),
      archive: sqs.createQueue('archive'),
    };
    // Runs 30 s of virtual time: two beats' worth while the invocation holds it.
    const report = defineTask({ name: 'report', queue: 'default', timeLimitSeconds: 40, run: () => void clock.advance(30_000) });
    const registry = createRegistry([report], config);
    const workers = new MemoryWorkerRegistry();
    const jobs = new MemoryJobStore({ historyLimit: 50, retentionDays: 7 });
    const invocation = createInvocation({
      config,
      registry,
      queues: sqs,
      urls,
      executor: new InlineExecutor(registry, config.dispatcher.killGraceMs),
      clock,
      random: seededRandom(1),
      logger: silentLogger,
      workerId: 'box-1',
      tracking: { version: 'v1', jobs, workers },
    });
    const sendReport = () =>
      sqs.sendBatch(urls.queues.default as string, [{ id: '0', body: JSON.stringify({ task: 'report', id: 'r-1' }) }]);
    return { clock, sqs, urls, workers, jobs, invocation, sendReport };
  }

  it('a doorbell invocation running a default job shows no weights: it selects no queue, and says so', async () => {
    const s = setup();
    await s.sendReport();
    const received = await s.sqs.receive(s.urls.queues.default as string, {
      maxMessages: 10,
      waitSeconds: 0,
      visibilityTimeoutSeconds: 60,
    });
    const records = received.map((m) => ({
      messageId: m.messageId,
      receiptHandle: m.receiptHandle,
      body: m.body,
      attributes: { ApproximateReceiveCount: String(m.receiveCount), SentTimestamp: String(m.sentTimestamp) },
      eventSource: 'aws:sqs' as const,
      eventSourceARN: 'arn:aws:sqs:us-east-1:000000000000:default',
    }));
    await s.invocation.ring(records, s.clock.now() + 60_000);

    const [item] = await s.workers.list();
    expect(item).toMatchObject({ role: 'doorbell', heardAt: expect.any(Number) });
    expect(s.workers.writes).toBe(3); // its first batch, the beat 30 s later, its end
    expect(item?.weights).toBeUndefined();
    expect(item?.weightsAt).toBeUndefined();
    // What `taskworker workers` printed while it ran (its item as its last beat left it, before its end).
    const { endedAt: _ended, ...beating } = item as WorkerItem;
    const live = new MemoryWorkerRegistry();
    await live.beat({ ...beating, jobs: ['r-1'] });
    const text = renderWorkers(await listWorkers({ workers: live, jobs: s.jobs, clock: s.clock }));
    expect(text).toContain("weights: none, it selects no queue (a doorbell runs the batch its queue's trigger gave it)");
    expect(text).not.toMatch(/urgent \d+%/);
  });
});
