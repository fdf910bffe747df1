/**
 * Stopping on purpose: dispatcher processes (the real handler, as `taskworker dev` runs it) sent
 * SIGTERM mid-work, as Lambda stops a container, and a dispatcher whose resident set passes
 * `dispatcher.rssLimitMb`, as Kale's worker stopped past its RSS limit. Either way running tasks
 * finish, unstarted ones are released at once, every batch is settled, and nothing is lost.
 */
import type { ChildProcess } from 'node:child_process';
import { SqsQueueClient } from '../../lib/adapters/sqs';
import { type LocalStack, startLocalStack } from '../../lib/local/dev';
import { seededRandom } from '../../lib/random';
import type { BatchReport, DispatcherSummary } from '../../lib/settle/report';
import { attemptsUsed } from '../../lib/track/job-record';
import type { EffectPayload } from './fixtures/tasks/effect';
import { auditStack, createEffectsTable, MEMORY_CONFIG, type Published, SIGTERM_CONFIG, scanAll, until } from './helpers/stage';
import { writeTally } from './helpers/tally';

const SEED = Number(process.env.CHAOS_SEED ?? 20_261_106);

let stack: LocalStack | undefined;
afterEach(async () => {
  await stack?.stop();
  stack = undefined;
});

const exited = (child: ChildProcess) =>
  new Promise<void>((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve() : child.once('exit', () => resolve())));

/** Waits until every published job is succeeded or archived and the work queue is empty, then audits. */
async function drainAndAudit(local: LocalStack, published: readonly Published[], effectsTable: string) {
  const queues = new SqsQueueClient(local.sqs);
  const depth = (url: string) => queues.depth(url);
  const drained = await until(
    async () => {
      const jobs = await scanAll(local.dynamo, local.tables.jobs);
      const done = new Set(jobs.filter((j) => j.state === 'succeeded' || j.state === 'archived').map((j) => j.jobId as string));
      if (!published.every((p) => done.has(p.jobId))) return false;
      const d = await depth(local.urls.queues.work as string);
      return d.visible + d.inFlight + d.delayed === 0;
    },
    120_000,
    500,
  );
  await local.stopDispatchers();
  const result = await auditStack(local, { published, effectsTable, depth });
  return { drained, result };
}

describe('graceful stops', () => {
  it('SIGTERM mid-work: running tasks finish and are recorded, unstarted ones are released, nothing is lost', async () => {
    const random = seededRandom(SEED);
    const reports: Array<BatchReport & { dispatcher: number }> = [];
    stack = await startLocalStack({
      configFile: SIGTERM_CONFIG,
      version: 'sigterm',
      dispatchers: 2,
      // This suite starts and stops dispatcher processes itself.
      replaceDeadDispatchers: false,
      logLevel: 'ERROR',
      onBatch: (report, dispatcher) => reports.push({ ...report, dispatcher }),
    });
    const local = stack;
    const effectsTable = await createEffectsTable(local.dynamo, 'chaos-sigterm-effects');
    const items = Array.from({ length: 200 }, () => {
      const payload: EffectPayload = { table: effectsTable, ms: 300 + Math.floor(random() * 600) };
      return { task: 'effect', payload };
    });
    const published: Published[] = (await local.publisher.publishBatch(items)).map((p) => ({ jobId: p.jobId, task: 'effect' }));
    const succeeded = () => reports.flatMap((r) => r.jobs).filter((j) => j.outcome === 'succeeded').length;
    await until(() => succeeded() >= 40, 60_000, 50);

    // Lambda's shutdown: SIGTERM to every dispatcher while tasks run.
    const first = [...local.dispatchers] as ChildProcess[];
    for (const child of first) child.kill('SIGTERM');
    await Promise.all(first.map(exited));
    expect(first.map((c) => [c.exitCode, c.signalCode])).toEqual(first.map(() => [0, null]));

    // Every task that started finished and was recorded; none is left running.
    const states = (await scanAll(local.dynamo, local.tables.jobs)).map((j) => j.state);
    expect(states.filter((s) => s === 'running')).toEqual([]);
    const jobs = reports.flatMap((r) => r.jobs);
    // A dispatcher receives no more than would start within a moment (lib/dispatch/loop.ts), so how
    // many it held unstarted when the signal came depends on timing (zero is right too); those it
    // held are released unstarted, no attempt spent on them: never claimed, or claimed while they
    // waited for a slot and handed back (queued again, the claim counted in `parks`).
    const released = jobs.filter((j) => j.outcome === 'released');
    for (const j of released) {
      const record = await local.jobs.get(j.jobId as string);
      if (!record || record.attempt === 0) continue;
      expect({ state: record.state, last: record.history.at(-1)?.what, used: attemptsUsed(record) }).toEqual({
        state: 'queued',
        last: 'handed-back',
        used: 0,
      });
    }

    // Fresh dispatchers take the rest.
    local.startDispatcher();
    local.startDispatcher();
    const { drained, result } = await drainAndAudit(local, published, effectsTable);
    writeTally({
      suite: 'sigterm',
      published: result.published,
      succeeded: result.succeeded,
      archived: result.archived,
      lost: result.lost.length,
      duplicates: result.completedTwice.length + (result.effects?.overApplied.length ?? 0),
      details: { succeededBeforeStop: jobs.filter((j) => j.outcome === 'succeeded').length, released: released.length },
    });
    expect(drained).toBe(true);
    expect(result.lost).toEqual([]);
    expect(result.succeeded).toBe(200);
    expect(result.completedTwice).toEqual([]);
    expect(result.effects?.overApplied).toEqual([]);
    // A graceful stop never cuts a body short, so no body ran twice.
    expect(result.effects?.rerunBodies).toBe(0);
    expect(result.leftInQueues + result.leftInDeadLetterQueues).toBe(0);
  });

  it('memory guard: past dispatcher.rssLimitMb the dispatcher releases its unstarted batch and its process exits cleanly', async () => {
    const reports: BatchReport[] = [];
    const invocations: DispatcherSummary[] = [];
    stack = await startLocalStack({
      configFile: MEMORY_CONFIG,
      version: 'memory',
      dispatchers: 0,
      // This suite starts and stops dispatcher processes itself.
      replaceDeadDispatchers: false,
      logLevel: 'ERROR',
      onBatch: (report) => reports.push(report),
      onInvocation: (summary) => invocations.push(summary),
    });
    const local = stack;
    expect(local.bundle.config.dispatcher).toMatchObject({ concurrency: 1, rssLimitMb: 400 });
    const effectsTable = await createEffectsTable(local.dynamo, 'chaos-memory-effects');
    // A task that holds 500 MB, and nine that wait for the single slot (in SQS: it receives no more than it can start).
    const items = [
      { task: 'hog', payload: { mb: 500, ms: 1000 } },
      ...Array.from({ length: 9 }, () => ({ task: 'effect', payload: { table: effectsTable, ms: 100 } satisfies EffectPayload })),
    ];
    const published: Published[] = (await local.publisher.publishBatch(items)).map((p, i) => ({
      jobId: p.jobId,
      task: items[i]?.task as string,
    }));
    local.startDispatcher();
    const guarded = local.dispatchers[0] as ChildProcess;
    await exited(guarded);

    // It stopped by itself (no signal was sent), cleanly, and said why.
    expect([guarded.exitCode, guarded.signalCode]).toEqual([0, null]);
    const stop = invocations.find((s) => s.memoryStop)?.memoryStop;
    expect(stop?.limitMb).toBe(400);
    expect(stop?.rssMb).toBeGreaterThan(400);
    const jobs = reports.flatMap((r) => r.jobs);
    const hog = jobs.find((j) => j.task === 'hog');
    expect(JSON.stringify(hog)).toContain('"outcome":"succeeded"');
    // With its one slot held by the hog, the dispatcher received nothing more (it receives no more
    // than would start within a moment), and what it had received unstarted it released at once
    // (visibility 0), not left to time out: every job it did not run is visible now, none in flight.
    const released = jobs.filter((j) => j.outcome === 'released');
    for (const j of released) expect((await local.jobs.get(j.jobId as string))?.attempt ?? 0).toBe(0);
    const queues = new SqsQueueClient(local.sqs);
    const depth = await queues.depth(local.urls.queues.work as string);
    expect(depth.inFlight).toBe(0);
    const ranEffects = jobs.filter((j) => j.task === 'effect' && j.outcome === 'succeeded').length;
    expect(depth.visible).toBe(9 - ranEffects);

    // A fresh dispatcher (a new container) runs the rest.
    local.startDispatcher();
    const { drained, result } = await drainAndAudit(local, published, effectsTable);
    writeTally({
      suite: 'memory',
      published: result.published,
      succeeded: result.succeeded,
      archived: result.archived,
      lost: result.lost.length,
      duplicates: result.completedTwice.length + (result.effects?.overApplied.length ?? 0),
      details: { memoryStop: stop, released: released.length },
    });
    expect(drained).toBe(true);
    expect(result.lost).toEqual([]);
    expect(result.succeeded).toBe(10);
    expect(result.completedTwice).toEqual([]);
    expect(result.effects?.overApplied).toEqual([]);
  });
});
