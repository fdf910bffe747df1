/**
 * Cancelling a running job, on fakes: the dispatcher reads the cancellations item (not a call per
 * job), aborts the task's signal, gives up a task that ignores it after the kill grace, ends the job
 * `cancelled` with its message deleted, refuses its heartbeat from the request on, counts it failed
 * into its dependents, and never runs it again.
 */
import { CancelWatch } from '../../lib/dispatch/cancellations';
import { JobCancelledError, LeaseLostError } from '../../lib/errors';
import { MemoryJobStore } from '../../lib/fakes/memory-job-store';
import { cancelJob } from '../../lib/operate/flow-commands';
import { payloadDigest } from '../../lib/policy/job-rules';
import { silentLogger } from '../../lib/ports';
import { decide } from '../../lib/settle/verdict';
import type { TaskOptions } from '../../lib/tasks/task';
import { encodeEnvelope } from '../../lib/wire/envelope';
import { type World, world } from '../helpers/world';

const ok: TaskOptions = { name: 'ok', queue: 'urgent', timeLimitSeconds: 5, run: () => 'done' };
const envelope = (task: string, id: string, extra: Record<string, unknown> = {}) => encodeEnvelope({ task, payload: {}, id, ...extra });
const reportOf = (w: World, jobId: string) => w.reports.flatMap((r) => r.jobs).filter((j) => j.jobId === jobId);
const trackedWorld = (tasks: TaskOptions[]) =>
  world(
    tasks,
    { queues: [{ name: 'urgent', priority: 90, visibilityTimeoutSeconds: 30, batchSize: 10, tracking: 'full' }] },
    { tracked: true },
  );
const flows = (w: World) => ({ jobs: w.jobs, queues: w.queues, urls: w.urls, clock: w.clock, logger: silentLogger });
const until = async (what: () => Promise<boolean> | boolean, ms = 5_000) => {
  const end = Date.now() + ms;
  while (!(await what())) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 10));
  }
};

describe('the verdict of a cancelled attempt', () => {
  it.each([1, 4])('is `cancelled` at attempt %d, never a retry', (attempt) => {
    const outcome = { status: 'cancelled', durationMs: 5, error: { type: 'JobCancelledError', message: 'x' } } as const;
    expect(
      decide(
        outcome,
        attempt,
        { maxRetries: 3, backoff: { baseSeconds: 1, capSeconds: 1 }, retry: { never: [], maxRetryAfters: 10 } },
        () => 0.5,
      ),
    ).toEqual({
      kind: 'cancelled',
    });
  });
});

describe('cancelling a running job (fakes)', () => {
  it('its signal aborts from the cancellations item, its heartbeat is refused, it ends cancelled; the rest of the batch succeeds', async () => {
    let reason: unknown;
    let beat: unknown;
    let cancelled: unknown;
    const w: World = trackedWorld([
      ok,
      {
        name: 'slow',
        queue: 'urgent',
        timeLimitSeconds: 20,
        async run(_payload, ctx) {
          cancelled = await cancelJob(flows(w), ctx.jobId, w.config.queues);
          await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
          reason = ctx.signal.reason;
          beat = await ctx.heartbeat().catch((e: unknown) => e);
          return 'finished anyway';
        },
      },
    ]);
    await w.send('urgent', envelope('slow', 'job-c'));
    await w.send('urgent', envelope('ok', 'job-ok'));
    await w.run({ forMs: 120_000 });

    expect(cancelled).toMatchObject({ outcome: 'requested', record: { state: 'running', cancelRequestedAt: expect.any(Number) } });
    expect(reason).toBeInstanceOf(JobCancelledError);
    expect(beat).toBeInstanceOf(LeaseLostError);
    // (The world's virtual clock runs ahead while the task waits in real time, so a second delivery
    // may take the lapsed lease over first: it finds the request on the record and does not run.)
    expect(await w.jobs.get('job-c')).toMatchObject({ state: 'cancelled', lastError: { type: 'JobCancelledError' } });
    expect((await w.jobs.get('job-c'))?.history.map((h) => h.what)).toEqual(expect.arrayContaining(['started', 'cancel-requested']));
    expect((await w.jobs.get('job-c'))?.history.at(-1)?.what).toBe('cancelled');
    expect(reportOf(w, 'job-c').map((j) => j.outcome)).toContain('cancelled');
    expect(await w.jobs.get('job-ok')).toMatchObject({ state: 'succeeded' });
    expect(w.sqs.peek(w.urls.queues.urgent as string)).toHaveLength(0);
    expect(w.runs.filter((r) => r.task === 'slow')).toHaveLength(1);
    // One read of the cancellations item per poll, shared by the batch's jobs (not one per job).
    expect(w.jobs.cancellationReads).toBeGreaterThanOrEqual(1);
    expect(w.jobs.cancellationReads).toBeLessThanOrEqual(3);
  });

  it('a task that ignores its signal is given up after the kill grace and ends cancelled', async () => {
    const w: World = trackedWorld([
      {
        name: 'stubborn',
        queue: 'urgent',
        timeLimitSeconds: 20,
        async run(_payload, ctx) {
          await cancelJob(flows(w), ctx.jobId, w.config.queues);
          const end = Date.now() + 1_800;
          while (Date.now() < end) await new Promise((r) => setTimeout(r, 20));
          return 'too late';
        },
      },
    ]);
    await w.send('urgent', envelope('stubborn', 'job-s'));
    const started = Date.now();
    await w.run({ forMs: 120_000 });
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(await w.jobs.get('job-s')).toMatchObject({ state: 'cancelled' });
    expect(w.sqs.peek(w.urls.queues.urgent as string)).toHaveLength(0);
  });

  it('counts into its dependents as a failed dependency', async () => {
    const w: World = trackedWorld([
      ok,
      {
        name: 'slow',
        queue: 'urgent',
        timeLimitSeconds: 20,
        async run(_payload, ctx) {
          await w.send('urgent', envelope('ok', 'dependent', { dependsOn: [ctx.jobId] }));
          await until(async () => (await w.jobs.get('dependent'))?.state === 'waiting');
          await cancelJob(flows(w), ctx.jobId, w.config.queues);
          await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
        },
      },
    ]);
    await w.send('urgent', envelope('slow', 'job-d'));
    await w.run({ forMs: 120_000 });
    expect(await w.jobs.get('job-d')).toMatchObject({ state: 'cancelled' });
    expect(await w.jobs.get('dependent')).toMatchObject({ state: 'archived', reason: 'dependency-failed' });
    expect(w.runs.filter((r) => r.task === 'ok')).toHaveLength(0);
  });

  it('a job whose cancel was asked before its claim (it ended retrying first) is ended cancelled without running', async () => {
    const w = trackedWorld([ok]);
    const now = w.clock.now();
    const ref = { jobId: 'job-r', task: 'ok', payloadDigest: payloadDigest({}), queue: 'urgent', version: 'v1', publishedAt: now };
    const claim = await w.jobs.claim({ ...ref, workerId: 'elsewhere', now, leaseUntil: now + 60_000 });
    expect(await w.jobs.cancel('job-r', now + 1)).toMatchObject({ outcome: 'requested' });
    expect(await w.jobs.extendLease('job-r', 1, now + 90_000, now + 2)).toBe(false);
    const ended = await w.jobs.complete(
      { jobId: 'job-r', token: 1, state: 'retrying', workerId: 'elsewhere', now: now + 3 },
      claim.outcome === 'claimed' ? claim.record : (undefined as never),
    );
    expect(ended.landed).toBe(true);
    await w.send('urgent', envelope('ok', 'job-r'));
    await w.run();
    expect(w.runs).toHaveLength(0);
    expect(await w.jobs.get('job-r')).toMatchObject({ state: 'cancelled', attempt: 2 });
    expect(w.sqs.peek(w.urls.queues.urgent as string)).toHaveLength(0);
  });
});

describe('the cancel watch', () => {
  it('reads the cancellations item once per poll while it watches any number of jobs, and never when it watches none', async () => {
    const jobs = new MemoryJobStore({ historyLimit: 50, retentionDays: 1 });
    const watch = new CancelWatch(jobs, silentLogger, 50);
    await new Promise((r) => setTimeout(r, 200));
    expect(jobs.cancellationReads).toBe(0);
    const fired: string[] = [];
    const unwatch = Array.from({ length: 20 }, (_, i) => watch.watch(`job-${i}`, () => fired.push(`job-${i}`)));
    await new Promise((r) => setTimeout(r, 280));
    const reads = jobs.cancellationReads;
    expect(reads).toBeGreaterThanOrEqual(3);
    expect(reads).toBeLessThanOrEqual(6);
    for (const stop of unwatch) stop();
    await new Promise((r) => setTimeout(r, 200));
    expect(jobs.cancellationReads).toBe(reads);
    expect(fired).toEqual([]);
  });

  it('fires for a job cancelled after a read, and at once for one registered after the read that saw its cancel', async () => {
    const jobs = new MemoryJobStore({ historyLimit: 50, retentionDays: 1 });
    const ref = { task: 't', payloadDigest: 'd', queue: 'q', version: 'v', publishedAt: 0, workerId: 'w', now: 0, leaseUntil: 1e12 };
    await jobs.claim({ ...ref, jobId: 'a' });
    const watch = new CancelWatch(jobs, silentLogger, 20);
    const fired: string[] = [];
    const stopA = watch.watch('a', () => fired.push('a'));
    await jobs.cancel('a', 1);
    await until(() => fired.length === 1, 1_000);
    const stopB = watch.watch('a', () => fired.push('a again'));
    expect(fired).toEqual(['a', 'a again']);
    stopA();
    stopB();
  });
});
