/**
 * Crash suite: the local runtime (dispatcher processes running the real Lambda handler, the
 * emulators in this process) under a seeded schedule of SIGKILLs. Each dispatcher talks to the
 * emulators through its own loopback relay (test/chaos/helpers/relay.ts), which sees every call it
 * makes and kills it at the scheduled point: as a receive is made or has just handed out messages,
 * as it claims a job, while its task writes its side effect, and at every step of the settle
 * (archive send, job record, delete, visibility change, stats), before the call lands or after it
 * landed but before the process hears the answer. A new dispatcher replaces each one killed.
 * Then the system drains, and the tables and queues must show: nothing lost, every job record
 * terminal, nothing in the DLQs (at the default maxReceiveCount, with messages waiting for slots),
 * no job completed twice, the fenced side effect applied once per job, and stats that differ from
 * the jobs table by no more than what the killed processes had recorded but not yet counted.
 * Assertions read the tables and queues: the relay's own observations die with a killed process.
 */
import type { ChildProcess } from 'node:child_process';
import { hostname } from 'node:os';
import { ChangeMessageVisibilityBatchCommand, ReceiveMessageCommand, SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import { SqsQueueClient } from '../../lib/adapters/sqs';
import { type LocalStack, startLocalStack } from '../../lib/local/dev';
import { type Random, seededRandom } from '../../lib/random';
import type { BatchReport } from '../../lib/settle/report';
import { subscriberJobId } from '../../lib/wire/event';
import type { EffectPayload } from './fixtures/tasks/effect';
import { addedCounters, isQueueStatsWrite } from './helpers/faults';
import { assignedState, type Exchange, type Phase, takesArchiveFence } from './helpers/relay';
import { killRelayed, type RelayedDispatcher, startRelayed } from './helpers/relayed';
import {
  auditStack,
  CHAOS_CONFIG,
  createEffectsTable,
  daysSince,
  ONE_SLOT_CONFIG,
  type Published,
  scanAll,
  statsOver,
  until,
} from './helpers/stage';
import { writeTally } from './helpers/tally';

const SEED = Number(process.env.CHAOS_SEED ?? 20_261_106);
const JOBS = 1000;
const WAVES = 10;
/** Events a wave sends as SNS's raw delivery would put them in the queue: each split into effect's and effect-echo's job. */
const EVENTS_PER_WAVE = 5;
const SUBSCRIBERS = ['effect', 'effect-echo'] as const;
const DISPATCHERS = 3;
/** Every kill point, before the call lands and after; each this many times. */
const KILL_POINTS: readonly Phase[] = [
  'receive',
  'claim',
  'task',
  'settle-archive',
  'settle-record',
  'settle-delete',
  'settle-visibility',
  'settle-stats',
];
const REPEATS = 2;
/** Kills at a random moment, wherever each process happens to be. */
const ANYTIME_KILLS = 4;

type When = 'before' | 'after';
interface Target {
  readonly phase: Phase | 'anytime';
  readonly when: When;
}

/** One dispatcher process with its relays and what they saw it write. */
interface Dispatcher extends RelayedDispatcher {
  readonly id: number;
  /** Terminal job records it wrote that landed, and the stats it added that landed. */
  readonly recorded: { succeeded: number; archived: number };
  readonly counted: { succeeded: number; archived: number };
  /**
   * Archive fences it took over that landed: a job a killed dispatcher had ended `archived` (its
   * completion opens the fence) and died before sending. This one sends the archive and counts it,
   * without a record write of its own (lib/policy/archive-fences.ts).
   */
  tookOverArchives: number;
}

let stack: LocalStack | undefined;
afterEach(async () => {
  await stack?.stop();
  stack = undefined;
});

describe('crash suite: dispatcher processes killed at every point of the loop', () => {
  it(`loses nothing, completes nothing twice and applies each fenced effect once over ${JOBS} jobs`, async () => {
    const random = seededRandom(SEED);
    const startedAt = Date.now();
    const reports: BatchReport[] = [];
    stack = await startLocalStack({
      configFile: CHAOS_CONFIG,
      version: 'crash',
      dispatchers: 0,
      // This suite starts and stops dispatcher processes itself.
      replaceDeadDispatchers: false,
      logLevel: 'ERROR',
      onBatch: (report) => reports.push(report),
    });
    const local = stack;
    const effectsTable = await createEffectsTable(local.dynamo, 'chaos-crash-effects');
    const terminalWrites = new Map<string, number>();
    const dispatchers: Dispatcher[] = [];
    const schedule = new KillSchedule(random, plan(random));

    const classify = (target: string, body: Record<string, unknown>): Phase => {
      const table = body.TableName;
      switch (target) {
        case 'AmazonSQS.ReceiveMessage':
          return 'receive';
        case 'AmazonSQS.SendMessageBatch':
          return body.QueueUrl === local.urls.archive ? 'settle-archive' : 'other';
        case 'AmazonSQS.DeleteMessageBatch':
          return 'settle-delete';
        case 'AmazonSQS.ChangeMessageVisibilityBatch':
          return 'settle-visibility';
        case 'DynamoDB_20120810.GetItem':
          return table === effectsTable ? 'task' : 'other';
        case 'DynamoDB_20120810.UpdateItem': {
          if (table === effectsTable) return 'task';
          if (table === local.tables.stats) return 'settle-stats';
          const state = assignedState(body);
          if (state === 'running') return 'claim';
          if (state !== undefined || JSON.stringify(body).includes('skipped-duplicate')) return 'settle-record';
          return 'heartbeat';
        }
        default:
          return 'other';
      }
    };

    /** What landed: terminal job records and stats ADDs, per dispatcher. */
    const account = (d: Dispatcher, x: Exchange, status: number) => {
      if (status !== 200 || x.target !== 'DynamoDB_20120810.UpdateItem') return;
      if (x.phase === 'settle-stats') {
        if (!isQueueStatsWrite(x.body)) return;
        const added = addedCounters(x.body);
        d.counted.succeeded += added.succeeded ?? 0;
        d.counted.archived += Object.entries(added)
          .filter(([k]) => k.startsWith('archived_'))
          .reduce((n, [, value]) => n + value, 0);
      } else if (x.phase === 'heartbeat' && takesArchiveFence(x.body)) {
        d.tookOverArchives += 1;
      } else if (x.phase === 'settle-record') {
        const state = assignedState(x.body);
        if (state !== 'succeeded' && state !== 'archived') return;
        d.recorded[state] += 1;
        const jobId = (x.body.Key as { jobId: { S: string } }).jobId.S;
        terminalWrites.set(jobId, (terminalWrites.get(jobId) ?? 0) + 1);
      }
    };

    const launch = async (): Promise<Dispatcher> => {
      const d: Dispatcher = {
        id: dispatchers.length,
        relays: [],
        killed: false,
        recorded: { succeeded: 0, archived: 0 },
        counted: { succeeded: 0, archived: 0 },
        tookOverArchives: 0,
      };
      const hooks = {
        classify,
        before: (x: Exchange) => schedule.offer(d, x, 'before'),
        landed: (x: Exchange, status: number) => account(d, x, status),
        after: (x: Exchange, _status: number, answer: Record<string, unknown>) => schedule.offer(d, x, 'after', answer),
        kill: () => kill(d),
      };
      await startRelayed(local, d, hooks);
      dispatchers.push(d);
      return d;
    };
    const kill = async (d: Dispatcher) => {
      if (!(await killRelayed(d))) return;
      // A new container takes its place, as Lambda starts one on the next schedule.
      setTimeout(() => void launch(), Math.floor(random() * 500));
    };
    schedule.onAnytime = () => {
      const alive = dispatchers.filter((d) => !d.killed);
      const d = alive[Math.floor(random() * alive.length)];
      if (d) void kill(d);
    };

    for (let i = 0; i < DISPATCHERS; i++) await launch();
    schedule.start();
    const progress = setInterval(() => {
      void scanAll(local.dynamo, local.tables.jobs).then((jobs) => {
        const states: Record<string, number> = {};
        for (const j of jobs) states[j.state as string] = (states[j.state as string] ?? 0) + 1;
        process.stderr.write(
          `crash progress: ${Math.round((Date.now() - startedAt) / 1000)} s, kills ${schedule.kills.length}, missed ${schedule.missed.length}, alive ${dispatchers.filter((d) => !d.killed).length}, jobs ${JSON.stringify(states)}\n`,
        );
      });
    }, 10_000);

    // Publish in waves while the kills go on: most through the library, some as any SDK would.
    const published: Published[] = [];
    const perWave = JOBS / WAVES;
    for (let wave = 0; wave < WAVES; wave++) {
      const items = Array.from({ length: perWave }, (_, i) => {
        const roll = random();
        if (roll < 0.05) return { task: 'doomed', payload: { wave, i } };
        const payload: EffectPayload = {
          table: effectsTable,
          ms: 20 + Math.floor(random() * 380),
          ...(roll < 0.15 ? { failBelow: 2 } : {}),
        };
        return { task: 'effect', payload };
      });
      const viaSdk = items.slice(0, 10);
      const sent = await local.sqs.send(
        new SendMessageBatchCommand({
          QueueUrl: local.urls.queues.work,
          Entries: viaSdk.map((item, j) => ({ Id: String(j), MessageBody: JSON.stringify({ task: item.task, payload: item.payload }) })),
        }),
      );
      expect(sent.Failed ?? []).toEqual([]);
      for (const s of sent.Successful ?? []) published.push({ jobId: s.MessageId as string, task: viaSdk[Number(s.Id)]?.task as string });
      const events = Array.from({ length: EVENTS_PER_WAVE }, (_, i) => {
        const payload: EffectPayload = { table: effectsTable, ms: 20 + Math.floor(random() * 380) };
        return { id: `fanned-${wave}-${i}`, payload };
      });
      const delivered = await local.sqs.send(
        new SendMessageBatchCommand({
          QueueUrl: local.urls.queues.work,
          Entries: events.map((e, j) => ({
            Id: String(j),
            MessageBody: JSON.stringify({ event: 'chaos.fanned', id: e.id, payload: e.payload }),
          })),
        }),
      );
      expect(delivered.Failed ?? []).toEqual([]);
      // The fenced effect is the same body under both names: the audit counts each subscriber's job as an effect job.
      for (const e of events) for (const task of SUBSCRIBERS) published.push({ jobId: subscriberJobId(e.id, task), task: 'effect' });
      const rest = items.slice(10);
      const viaLibrary = await local.publisher.publishBatch(rest);
      viaLibrary.forEach((p, j) => {
        published.push({ jobId: p.jobId, task: rest[j]?.task as string });
      });
      await new Promise((resolve) => setTimeout(resolve, 2500));
    }

    const queues = new SqsQueueClient(local.sqs);
    const depth = (url: string) => queues.depth(url);
    const terminal = new Set(['succeeded', 'archived']);
    const drained = await until(
      async () => {
        const jobs = await scanAll(local.dynamo, local.tables.jobs);
        const done = new Set(jobs.filter((j) => terminal.has(j.state as string)).map((j) => j.jobId as string));
        if (!published.every((p) => done.has(p.jobId))) return false;
        const d = await depth(local.urls.queues.work as string);
        return d.visible + d.inFlight + d.delayed === 0;
      },
      180_000,
      2000,
    );
    clearInterval(progress);
    // Kill points the drained system never reached again are reported as missed.
    schedule.stop();
    // The survivors stop as Lambda stops a container (SIGTERM): their last batches settle.
    const children = dispatchers.map((d) => d.child as ChildProcess);
    await local.stopDispatchers();
    await Promise.all(dispatchers.flatMap((d) => d.relays.map((r) => r.close())));

    const result = await auditStack(local, { published, effectsTable, depth });
    const stats = await statsOver(local.stats, 'work', daysSince(startedAt));
    const killed = dispatchers.filter((d) => d.killed);
    const survivors = dispatchers.filter((d) => !d.killed);
    const uncounted = (ds: Dispatcher[], key: 'succeeded' | 'archived') => ds.reduce((n, d) => n + d.recorded[key] - d.counted[key], 0);
    const killsBy: Record<string, number> = {};
    for (const k of schedule.kills)
      killsBy[`${k.phase}${k.phase === 'anytime' ? '' : `:${k.when}`}`] =
        (killsBy[`${k.phase}${k.phase === 'anytime' ? '' : `:${k.when}`}`] ?? 0) + 1;
    const outcomes = reports.flatMap((r) => r.jobs.map((j) => j.outcome));
    const details = {
      seed: SEED,
      dispatchersStarted: dispatchers.length,
      kills: schedule.kills.length,
      killsBy,
      missedKillPoints: schedule.missed.map((t) => `${t.phase}:${t.when}`),
      restartedJobs: result.restartedJobs,
      rerunBodies: result.effects?.rerunBodies,
      effectsOnce: result.effects?.once,
      skippedDuplicates: result.skippedDuplicates,
      archiveCopies: result.archiveMessages,
      reportedOutcomes: Object.fromEntries([...new Set(outcomes)].map((o) => [o, outcomes.filter((x) => x === o).length])),
      stats: {
        table: { succeeded: stats.succeeded, archived: stats.archivedTotal },
        jobs: { succeeded: result.succeeded, archived: result.archived },
        uncountedByKilled: { succeeded: uncounted(killed, 'succeeded'), archived: uncounted(killed, 'archived') },
        archivesTakenOver: dispatchers.reduce((n, d) => n + d.tookOverArchives, 0),
      },
    };
    // Durable truth: every record in the jobs table (not only the published jobs') is terminal, and
    // which worker wrote each job's end, from its history.
    const records = await scanAll(local.dynamo, local.tables.jobs);
    const nonTerminal = records.filter((r) => !terminal.has(r.state as string)).map((r) => `${r.jobId}:${r.state}`);
    const killedWorkers = new Set(killed.map((d) => `${hostname()}-${d.child?.pid}`));
    const endedByKilled = records.filter((r) => {
      const end = (r.history as Array<{ what: string; worker?: string }>).findLast((h) => terminal.has(h.what));
      return end?.worker !== undefined && killedWorkers.has(end.worker);
    }).length;
    writeTally({
      suite: 'crash',
      published: result.published,
      succeeded: result.succeeded,
      archived: result.archived,
      lost: result.lost.length + nonTerminal.length,
      duplicates:
        result.completedTwice.length + (result.effects?.overApplied.length ?? 0) + [...terminalWrites.values()].filter((n) => n > 1).length,
      details: { ...details, endedByKilled, requeued: countLogged(reports) },
    });
    process.stdout.write(`crash: ${JSON.stringify(details)}\n`);

    expect(drained).toBe(true);
    // Nothing lost: every published job succeeded or was archived with a reason; nothing left anywhere.
    expect(result.published).toBe(JOBS + WAVES * EVENTS_PER_WAVE * SUBSCRIBERS.length);
    expect(result.lost).toEqual([]);
    expect(result.archivedWithoutMessage).toEqual([]);
    expect(result.archiveMessagesWithoutReason).toBe(0);
    expect(result.leftInQueues + result.leftInDeadLetterQueues).toBe(0);
    expect(nonTerminal).toEqual([]);
    expect(result.archivedByReason).toEqual({ exhausted: published.filter((p) => p.task === 'doomed').length });
    // Completed once: one terminal record per job (the writes that landed, and the history).
    expect(result.completedTwice).toEqual([]);
    expect(result.truncatedHistories).toBe(0);
    // The relay saw no job ended twice. (It may miss a write that landed as a killed process's
    // sockets were torn down, so it is not asked to have seen them all: the history above is.)
    expect([...terminalWrites.values()].filter((n) => n > 1)).toEqual([]);
    // The fenced effect landed exactly once per effect job, though bodies were killed and ran again.
    expect(result.effects?.overApplied).toEqual([]);
    expect(result.effects?.missing).toEqual([]);
    expect(result.effects?.once).toBe(published.filter((p) => p.task === 'effect').length);
    expect(result.effects?.rerunBodies).toBeGreaterThan(0);
    // The schedule hit every kill point, before and after the call landed.
    expect(schedule.kills.length).toBeGreaterThanOrEqual(KILL_POINTS.length * 2);
    for (const phase of ['receive', 'claim', 'task', 'settle-record', 'settle-delete', 'settle-stats'] as const)
      expect((killsBy[`${phase}:before`] ?? 0) + (killsBy[`${phase}:after`] ?? 0)).toBeGreaterThan(0);
    expect(killed.map((d) => d.child?.signalCode)).toEqual(killed.map(() => 'SIGKILL'));
    expect(survivors.map((d) => [d.child?.exitCode, d.child?.signalCode])).toEqual(survivors.map(() => [0, null]));
    expect(children.length).toBe(dispatchers.length);
    // Stats: a dispatcher that stopped cleanly counted everything it recorded, and the archives it
    // took over from killed ones. The jobs table and the stats differ by what killed dispatchers had
    // recorded and not yet counted: never more than the jobs whose end a killed dispatcher wrote
    // (read from the table), never less than nothing.
    for (const d of survivors)
      expect([d.id, d.recorded.succeeded, d.recorded.archived + d.tookOverArchives]).toEqual([
        d.id,
        d.counted.succeeded,
        d.counted.archived,
      ]);
    const notCounted = result.succeeded + result.archived - stats.succeeded - stats.archivedTotal;
    expect(notCounted).toBeGreaterThanOrEqual(0);
    expect(notCounted).toBeLessThanOrEqual(endedByKilled);
  });
});

describe('crash suite: receives used up without attempts never leave a tracked job in the DLQ', () => {
  it('jobs whose receives were spent by lost processes and a kill while they wait for a slot all end terminal', async () => {
    const jobsCount = 20;
    const reports: BatchReport[] = [];
    stack = await startLocalStack({
      configFile: ONE_SLOT_CONFIG,
      version: 'crash-wait',
      dispatchers: 0,
      // This suite starts and stops dispatcher processes itself.
      replaceDeadDispatchers: false,
      logLevel: (process.env.CHAOS_LOG_LEVEL as 'ERROR' | undefined) ?? 'ERROR',
      onBatch: (report) => reports.push(report),
    });
    const local = stack;
    const maxReceiveCount = local.bundle.config.queues[0]?.maxReceiveCount as number;
    const effectsTable = await createEffectsTable(local.dynamo, 'chaos-wait-effects');
    const published = (
      await local.publisher.publishBatch(
        Array.from({ length: jobsCount }, (_, i) => ({
          task: 'effect',
          payload: { table: effectsTable, ms: 150, ...(i % 2 === 0 ? { failBelow: 2 } : {}) } satisfies EffectPayload,
        })),
      )
    ).map((p) => ({ jobId: p.jobId, task: 'effect' }));
    const url = local.urls.queues.work as string;

    // Receives lost with processes that died before they ran anything: all but two of each message's.
    for (let round = 0; round < maxReceiveCount - 2; round++) {
      const seen = new Map<string, string>();
      while (seen.size < jobsCount) {
        const got = await local.sqs.send(new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10, VisibilityTimeout: 60 }));
        for (const m of got.Messages ?? []) seen.set(m.MessageId as string, m.ReceiptHandle as string);
      }
      const handles = [...seen.values()];
      for (let i = 0; i < handles.length; i += 10)
        await local.sqs.send(
          new ChangeMessageVisibilityBatchCommand({
            QueueUrl: url,
            Entries: handles.slice(i, i + 10).map((ReceiptHandle, j) => ({ Id: String(j), ReceiptHandle, VisibilityTimeout: 0 })),
          }),
        );
    }

    // A dispatcher takes a batch (the next-to-last receive of ten messages, nine of them waiting
    // for its one slot) and is killed while they wait.
    const first = local.dispatchers[local.startDispatcher()] as ChildProcess;
    const running = await until(
      async () => (await scanAll(local.dynamo, local.tables.jobs)).some((j) => j.state === 'running'),
      30_000,
      50,
    );
    first.kill('SIGKILL');
    await new Promise((resolve) => first.once('exit', resolve));

    // Two healthy dispatchers take over: every hand-back now happens at the last receives.
    local.startDispatcher();
    local.startDispatcher();
    const terminal = new Set(['succeeded', 'archived']);
    const drained = await until(
      async () => {
        const jobs = await scanAll(local.dynamo, local.tables.jobs);
        const done = new Set(jobs.filter((j) => terminal.has(j.state as string)).map((j) => j.jobId as string));
        const d = await new SqsQueueClient(local.sqs).depth(url);
        return published.every((p) => done.has(p.jobId)) && d.visible + d.inFlight + d.delayed === 0;
      },
      120_000,
      500,
    );
    if (!drained) {
      const jobs = await scanAll(local.dynamo, local.tables.jobs);
      process.stderr.write(
        `spent receives, not drained: ${JSON.stringify({
          alive: local.alive(),
          depth: await new SqsQueueClient(local.sqs).depth(url),
          jobs: jobs.map((j) => [j.jobId, j.state, j.attempt, (j.history as Array<{ what: string }>).map((h) => h.what).join('>')]),
          reports: reports.flatMap((r) => r.jobs).filter((j) => jobs.some((x) => x.jobId === j.jobId && x.state !== 'succeeded')),
        })}\n`,
      );
    }
    await local.stopDispatchers();
    const result = await auditStack(local, { published, effectsTable, depth: (u) => new SqsQueueClient(local.sqs).depth(u) });
    const records = await scanAll(local.dynamo, local.tables.jobs);
    writeTally({
      suite: 'crash',
      published: result.published,
      succeeded: result.succeeded,
      archived: result.archived,
      lost: result.lost.length + result.leftInDeadLetterQueues,
      duplicates: result.completedTwice.length + (result.effects?.overApplied.length ?? 0),
      details: { scenario: 'spent receives', requeued: countLogged(reports), leftInDeadLetterQueues: result.leftInDeadLetterQueues },
      file: 'crash-spent-receives',
    });

    expect(running).toBe(true);
    expect(first.signalCode).toBe('SIGKILL');
    expect(drained).toBe(true);
    expect(result.lost).toEqual([]);
    expect(result.leftInDeadLetterQueues).toBe(0);
    expect(result.leftInQueues).toBe(0);
    expect(records.filter((r) => !terminal.has(r.state as string))).toEqual([]);
    // Every job succeeded: the failing first attempts were retried through fresh copies.
    expect(result.succeeded).toBe(jobsCount);
    expect(result.effects?.once).toBe(jobsCount);
    expect(result.completedTwice).toEqual([]);
    // Failing first attempts at the last receives went out as fresh copies (counted from the
    // survivors' reports; the killed one's are lost with it).
    expect(countLogged(reports)).toBeGreaterThan(0);
  });
});

/** Messages the dispatchers replaced by a fresh copy near their redrive limit, as their batch reports show. */
function countLogged(reports: readonly BatchReport[]): number {
  return reports.reduce((n, r) => n + r.jobs.filter((j) => j.requeued).length, 0);
}

/** The kill points in a seeded order. */
function plan(random: Random): Target[] {
  const targets: Target[] = [];
  for (const phase of KILL_POINTS)
    for (const when of ['before', 'after'] as const) for (let i = 0; i < REPEATS; i++) targets.push({ phase, when });
  for (let i = 0; i < ANYTIME_KILLS; i++) targets.push({ phase: 'anytime', when: 'before' });
  for (let i = targets.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [targets[i], targets[j]] = [targets[j] as Target, targets[i] as Target];
  }
  return targets;
}

/**
 * Arms one kill point at a time: the k-th matching call (k random, 1..4) from any live
 * dispatcher triggers it. A point not reached within 15 s is recorded as missed and skipped, as
 * are those left when the system has drained.
 */
class KillSchedule {
  readonly kills: Array<Target & { dispatcher: number }> = [];
  readonly missed: Target[] = [];
  onAnytime: () => void = () => undefined;
  private armed: { target: Target; skip: number; timer: NodeJS.Timeout } | undefined;
  private stopped = false;

  constructor(
    private readonly random: Random,
    private readonly targets: Target[],
  ) {}

  start(): void {
    this.next(1000);
  }

  /** Ends the schedule: the armed point and those not yet armed count as missed. */
  stop(): void {
    this.stopped = true;
    if (this.armed) {
      clearTimeout(this.armed.timer);
      this.missed.push(this.armed.target);
      this.armed = undefined;
    }
    this.missed.push(...this.targets.filter((t) => t.phase !== 'anytime').splice(0));
    this.targets.length = 0;
  }

  offer(d: Dispatcher, x: Exchange, when: When, answer?: Record<string, unknown>): boolean {
    const armed = this.armed;
    if (!armed || d.killed || armed.target.phase !== x.phase || armed.target.when !== when) return false;
    // "Mid-receive" after the answer means messages were handed out: only then is it worth a kill.
    if (x.phase === 'receive' && when === 'after' && !((answer?.Messages as unknown[] | undefined)?.length ?? 0)) return false;
    if (armed.skip-- > 0) return false;
    clearTimeout(armed.timer);
    this.armed = undefined;
    this.kills.push({ ...armed.target, dispatcher: d.id });
    this.next();
    return true;
  }

  private next(delayMs = 200 + Math.floor(this.random() * 500)): void {
    setTimeout(() => {
      if (this.stopped) return;
      const target = this.targets.shift();
      if (!target) return;
      if (target.phase === 'anytime') {
        this.kills.push({ ...target, dispatcher: -1 });
        this.onAnytime();
        return this.next();
      }
      const timer = setTimeout(() => {
        this.missed.push(target);
        this.armed = undefined;
        this.next(0);
      }, 15_000);
      this.armed = { target, skip: Math.floor(this.random() * 4), timer };
    }, delayMs);
  }
}
