/**
 * Starvation (issue 32, items 2 and 4): far more messages than slots on a tracked `full` queue whose
 * messages go to the DLQ at their fourth receive, worked by dispatcher processes of the local
 * runtime that share one core with CPU-bound neighbours (busy loops), whose tasks bundle takes each
 * thread a CPU-bound 300 ms to load (seconds, starved), and whose bodies keep their threads busy
 * too. Some bodies overrun their limit on purpose, so threads are stopped and replaced (and load
 * again) while others wait. Messages wait in slow dispatchers past their visibility and come back.
 * Nothing is killed.
 *
 * Then, from the jobs table, the queue, its DLQ and the tasks' own journal: every record terminal
 * as its job was meant to end, the queue and the DLQ empty; no worker lost (nothing crashed, so no
 * attempt was taken over); every claim started its body or was handed back before it (no time
 * limit spent before the body began, no attempt used by a claim that did not start); an attempt was retried only after its body failed on purpose or was still running at
 * its deadline, never after it reached its effect; each job's effect exactly once.
 *
 * CHAOS_STARVED_JOBS (400), CHAOS_BUSY_LOOPS (3), CHAOS_SEED size and vary a run.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import { SqsQueueClient } from '../../lib/adapters/sqs';
import { type LocalStack, startLocalStack } from '../../lib/local/dev';
import { seededRandom } from '../../lib/random';
import type { JobRecord } from '../../lib/track/job-record';
import type { JournalPayload } from './fixtures/journal-tasks/journal';
import { readJournal, unexplainedRerun } from './helpers/journal';
import { drainArchive, STARVED_CONFIG, scanAll } from './helpers/stage';
import { writeTally } from './helpers/tally';

const SEED = Number(process.env.CHAOS_SEED ?? 20_261_127);
const JOBS = Number(process.env.CHAOS_STARVED_JOBS ?? 400);
/** Jobs whose body overruns its limit (task `overrun`, one retry): each stops and replaces a thread twice. */
const OVERRUNS = 10;
const DISPATCHERS = 3;
/** CPU-bound neighbours on the dispatchers' core for the whole run. */
const BUSY_LOOPS = Number(process.env.CHAOS_BUSY_LOOPS ?? 3);
/** The run is given up when nothing moved (no record ended, no batch settled) for this long: a stuck system, not a slow one. */
const STALL_MS = 300_000;
const TERMINAL = new Set(['succeeded', 'archived', 'cancelled']);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** How a job is meant to end: its task, payload, final state (and reason) and the attempts that fail on purpose. */
interface Planned {
  readonly id: string;
  readonly task: 'journal' | 'overrun';
  readonly payload: JournalPayload;
  readonly end: 'succeeded' | 'archived:unrecoverable' | 'archived:timed-out';
  readonly failing: number;
}

/**
 * The dispatchers' core: the last one, when there are two or more and `taskset` is there. Pinned
 * there with the busy loops, the dispatchers starve while the emulators (in this process) and the
 * rest of the machine keep the other cores.
 */
const CORE = availableParallelism() > 1 && spawnSync('taskset', ['-V']).status === 0 ? String(availableParallelism() - 1) : undefined;
const pin = (pid: number | undefined) => {
  if (CORE !== undefined && pid !== undefined) spawnSync('taskset', ['-a', '-p', '-c', CORE, String(pid)], { stdio: 'ignore' });
};

let stack: LocalStack | undefined;
let dir: string | undefined;
const neighbours: ChildProcess[] = [];
afterEach(async () => {
  for (const n of neighbours.splice(0)) n.kill('SIGKILL');
  await stack?.stop();
  stack = undefined;
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('starvation suite: more messages than slots, a starved core, a slow bundle, maxReceiveCount 3', () => {
  it(`ends every tracked job by the dispatchers with each body once, none in the DLQ (${JOBS} jobs)`, async () => {
    const random = seededRandom(SEED);
    const startedAt = Date.now();
    const outcomes: Record<string, number> = {};
    let requeued = 0;
    stack = await startLocalStack({
      configFile: STARVED_CONFIG,
      version: 'starved',
      dispatchers: 0,
      replaceDeadDispatchers: false,
      logLevel: 'ERROR',
      onBatch: (report) => {
        for (const j of report.jobs) {
          outcomes[j.outcome] = (outcomes[j.outcome] ?? 0) + 1;
          if (j.requeued) requeued += 1;
        }
      },
    });
    const local = stack;
    const url = local.urls.queues.work as string;
    const dlq = local.urls.deadLetter.work as string;
    dir = mkdtempSync(join(tmpdir(), 'taskworker-starved-'));
    const journalFile = join(dir, 'journal.jsonl');

    for (let i = 0; i < BUSY_LOOPS; i++) {
      const n = spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' });
      pin(n.pid);
      neighbours.push(n);
    }
    for (let i = 0; i < DISPATCHERS; i++) pin(local.dispatchers[local.startDispatcher()]?.pid);

    // All at once: far more than the fleet's six slots. Bodies spin their thread, some are slow, some fail once, a few for good, a few overrun.
    const plan: Planned[] = Array.from({ length: JOBS + OVERRUNS }, (_, i): Planned => {
      const id = `starved-${i}`;
      const base = { journal: journalFile, ms: Math.floor(random() * 200), spinMs: Math.floor(random() * 100) };
      if (i >= JOBS)
        return { id, task: 'overrun', payload: { journal: journalFile, overrun: true }, end: 'archived:timed-out', failing: 2 };
      const roll = random();
      if (roll < 0.2) return { id, task: 'journal', payload: { ...base, failBelow: 2 }, end: 'succeeded', failing: 1 };
      if (roll < 0.25) return { id, task: 'journal', payload: { ...base, fail: true }, end: 'archived:unrecoverable', failing: 1 };
      // Slow ones among quick ones: a dispatcher expecting a slot soon holds messages past their visibility.
      if (roll < 0.4)
        return { id, task: 'journal', payload: { ...base, ms: 1500 + Math.floor(random() * 500) }, end: 'succeeded', failing: 0 };
      return { id, task: 'journal', payload: base, end: 'succeeded', failing: 0 };
    });
    for (let i = 0; i < plan.length; i += 10) {
      const out = await local.sqs.send(
        new SendMessageBatchCommand({
          QueueUrl: url,
          Entries: plan
            .slice(i, i + 10)
            .map((j, k) => ({ Id: String(k), MessageBody: JSON.stringify({ task: j.task, id: j.id, payload: j.payload }) })),
        }),
      );
      expect(out.Failed ?? []).toEqual([]);
    }

    // Drained: every record terminal and the queue empty. Given up only when nothing moves for STALL_MS.
    const queues = new SqsQueueClient(local.sqs);
    const total = (d: { visible: number; inFlight: number; delayed: number }) => d.visible + d.inFlight + d.delayed;
    let progress = '';
    let movedAt = Date.now();
    let reportedAt = 0;
    let drained = false;
    while (!drained && Date.now() - movedAt < STALL_MS) {
      await sleep(3000);
      const records = new Map((await scanAll(local.dynamo, local.tables.jobs)).map((r) => [String(r.jobId), r]));
      const terminal = plan.filter((j) => TERMINAL.has(String(records.get(j.id)?.state))).length;
      const now = `${terminal} ${Object.values(outcomes).reduce((a, b) => a + b, 0)}`;
      if (now !== progress) [progress, movedAt] = [now, Date.now()];
      if (Date.now() - reportedAt > 15_000) {
        reportedAt = Date.now();
        process.stderr.write(
          `starvation progress: ${Math.round((Date.now() - startedAt) / 1000)} s, terminal ${terminal}/${plan.length}, queue ${JSON.stringify(await queues.depth(url))}, dlq ${total(await queues.depth(dlq))}, outcomes ${JSON.stringify(outcomes)}\n`,
        );
      }
      drained = terminal === plan.length && total(await queues.depth(url)) === 0;
    }
    for (const n of neighbours.splice(0)) n.kill('SIGKILL');
    await local.stopDispatchers();

    // The durable state: the queue, its DLQ (what it holds, by job), the jobs table and the journal.
    const left = total(await queues.depth(url));
    const inDlq = (await drainArchive(local.sqs, dlq)).map((m) => (JSON.parse(m.body) as { id?: string }).id ?? m.messageId);
    const records = new Map((await scanAll(local.dynamo, local.tables.jobs)).map((r) => [String(r.jobId), r as unknown as JobRecord]));
    const journal = readJournal(journalFile);
    const found = {
      /** Not ended as planned (its state and reason), or not terminal. */
      wrongEnd: [] as string[],
      /** Attempts taken over: a worker lost, though no process was killed. */
      takenOver: [] as string[],
      /** Claimed attempts whose body never started (a time limit spent before the body began). */
      claimedNotStarted: [] as string[],
      /** Attempts recorded failed though their body had reached its effect (ended in time, taken for a timeout). */
      failedAfterEffect: [] as string[],
      /** A body run again with no crash and no failure recorded. */
      rerun: [] as string[],
      /** Effects other than once for a job that succeeded, or any for one archived. */
      wrongEffects: [] as string[],
    };
    let unplannedFailures = 0;
    /** Claims handed back unstarted (queued again, no attempt used): counted, not a failure. */
    let handedBack = 0;
    for (const j of plan) {
      const r = records.get(j.id);
      const history = r?.history ?? [];
      const ran = journal.of(j.id);
      const started = new Set(ran.starts.map((s) => s.token));
      const failed = new Set(history.filter((h) => h.what === 'retrying').map((h) => h.attempt as number));
      const claims = history.filter((h) => h.what === 'started' || h.what === 'took-over');
      if (`${r?.state}${r?.reason ? `:${r.reason}` : ''}` !== j.end) found.wrongEnd.push(`${j.id}:${r?.state}:${r?.reason ?? ''}`);
      if (claims.some((h) => h.what === 'took-over')) found.takenOver.push(j.id);
      // Claim k has token k (each adds one; nothing here replays). A claim's own entry carries no
      // attempt until a completion rewrites the history: an attempt that never ended keeps none.
      // A claim handed back before its body started (no thread in time, say) used no attempt.
      const handedBackClaims = new Set(history.filter((h) => h.what === 'handed-back').map((h) => h.attempt));
      claims.forEach((_, i) => {
        if (handedBackClaims.has(i + 1)) handedBack += 1;
        else if (!started.has(i + 1)) found.claimedNotStarted.push(`${j.id}#${i + 1}`);
      });
      for (const a of failed) if (ran.ends.some((e) => e.token === a)) found.failedAfterEffect.push(`${j.id}#${a}`);
      const why = unexplainedRerun(ran, failed, new Map());
      if (why) found.rerun.push(`${j.id}: ${why}`);
      if (ran.ends.length !== (j.end === 'succeeded' ? 1 : 0)) found.wrongEffects.push(`${j.id}:${ran.ends.length}`);
      unplannedFailures += [...failed].filter((a) => a > j.failing).length;
    }
    const nonTerminal = [...records.values()].filter((r) => !TERMINAL.has(r.state)).map((r) => `${r.jobId}:${r.state}#${r.attempt}`);
    const details = {
      seed: SEED,
      jobs: plan.length,
      busyLoops: BUSY_LOOPS,
      pinnedToCore: CORE ?? 'no (one core, or no taskset)',
      maxReceiveCount: local.bundle.config.queues[0]?.maxReceiveCount,
      dlq: inDlq.length,
      nonTerminal: nonTerminal.length,
      ...Object.fromEntries(Object.entries(found).map(([name, list]) => [name, list.length])),
      bodyStarts: plan.reduce((n, j) => n + journal.of(j.id).starts.length, 0),
      effects: plan.reduce((n, j) => n + journal.of(j.id).ends.length, 0),
      plannedFailures: plan.reduce((n, j) => n + j.failing, 0),
      /** Bodies still running at their deadline though not meant to overrun (a starved thread): retried, never a bug. */
      unplannedFailures,
      handedBack,
      attempts: [...records.values()].reduce((n, r) => n + r.attempt, 0),
      requeued,
      outcomes,
      seconds: Math.round((Date.now() - startedAt) / 1000),
    };
    process.stdout.write(`starvation: ${JSON.stringify(details)}\n`);
    for (const [name, list] of Object.entries({ ...found, nonTerminal, inDlq })) {
      if (list.length === 0) continue;
      process.stdout.write(`starvation: ${name}: ${JSON.stringify(list.slice(0, 10))}\n`);
      for (const id of list.slice(0, 3)) {
        const r = records.get(id.replace(/[#:].*$/, ''));
        const history = (r?.history ?? []).map(
          (h) => `${h.what}${h.attempt ? `#${h.attempt}` : ''}@${h.when}${h.worker ? ` ${h.worker}` : ''}`,
        );
        process.stdout.write(
          `starvation:   ${JSON.stringify({ id, state: r?.state, lastError: r?.lastError?.message, history, journal: journal.of(r?.jobId ?? '') })}\n`,
        );
      }
    }
    writeTally({
      suite: 'starvation',
      published: plan.length,
      succeeded: plan.filter((j) => records.get(j.id)?.state === 'succeeded').length,
      archived: plan.filter((j) => records.get(j.id)?.state === 'archived').length,
      lost: nonTerminal.length + inDlq.length,
      duplicates: plan.filter((j) => journal.of(j.id).ends.length > 1 || found.rerun.some((x) => x.startsWith(`${j.id}:`))).length,
      details,
    });

    expect(drained).toBe(true);
    expect(left).toBe(0);
    expect(inDlq).toEqual([]);
    expect(nonTerminal).toEqual([]);
    expect(found.wrongEnd).toEqual([]);
    expect(found.takenOver).toEqual([]);
    expect(found.claimedNotStarted).toEqual([]);
    expect(found.failedAfterEffect).toEqual([]);
    expect(found.rerun).toEqual([]);
    expect(found.wrongEffects).toEqual([]);
  }, 3_600_000);
});
