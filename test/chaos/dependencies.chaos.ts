/**
 * Dependencies in every order, under kills (issue 32): flows of a dependent and its N members
 * (N from 1 to 100, skewed small), generated from a seed and sent as raw envelopes the ways SDK
 * publishers produce them — the dependent first, last, in the same SendMessageBatch as members
 * (their order shuffled), in another batch between them, members spread over seconds, members sent
 * twice, the dependent sent twice — with members that fail, are cancelled (parked, or while they
 * run) or expire. Dispatcher processes (the local runtime's, the real Lambda handler) run them
 * through relays that SIGKILL them at the flow's own writes (a dependent recorded waiting, an edge
 * added to a member, a count, a release, a member's end, a dependent's end), before the write lands
 * or after, and at random moments; new ones replace them. Flows are sent while earlier ones run,
 * at most a window of them unfinished at a time, so no flow waits behind the whole run.
 *
 * Then, from the jobs table, its count items and the tasks' own journal (each body notes its start
 * and, as its last act, its effect: fixtures/journal-tasks/journal.ts): a dependent is archived `dependency-failed` exactly when one of its
 * members did not succeed, and then never ran; otherwise it ran exactly once, claimed and started
 * after every member's end; every member that succeeded had its effect exactly once; a body ran
 * again only after a crash or a recorded failure; no count holds a member as failed that succeeded;
 * nothing is left waiting, parked, queued or in the DLQ. Its root cause, before 6feeebe:
 * `addDependent` (lib/adapters/dynamo-job-flows.ts) answered a failed condition with a read, which
 * could see the record a member's first claim had just created (`running`) and took it as ended.
 *
 * CHAOS_FLOWS (500), CHAOS_FLOW_WINDOW (40), CHAOS_MAX_KILLS (24), CHAOS_SEED size and vary a run.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ReceiveMessageCommand, SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import { SqsQueueClient } from '../../lib/adapters/sqs';
import { type LocalStack, startLocalStack } from '../../lib/local/dev';
import { type Random, seededRandom } from '../../lib/random';
import type { JobRecord } from '../../lib/track/job-record';
import { type FlowPlan, planFlows, sendsOf } from './helpers/dependency-flows';
import { type JobJournal, readJournal, unexplainedRerun } from './helpers/journal';
import { assignedState, type Exchange, type Phase } from './helpers/relay';
import { killRelayed, type RelayedDispatcher, startRelayed } from './helpers/relayed';
import { JOURNAL_CONFIG, scanAll } from './helpers/stage';
import { writeTally } from './helpers/tally';

const SEED = Number(process.env.CHAOS_SEED ?? 20_261_127);
const FLOWS = Number(process.env.CHAOS_FLOWS ?? 500);
/** Flows sent and not yet ended (their dependent's record terminal) at most. */
const WINDOW = Number(process.env.CHAOS_FLOW_WINDOW ?? 40);
const DISPATCHERS = 3;
/**
 * Kills, armed one at a time as the work goes on (every so many settled messages, so a slow machine
 * is killed as often per job as a fast one), spread over the run's expected work.
 */
const MAX_KILLS = Number(process.env.CHAOS_MAX_KILLS ?? 24);
/** The run is given up when nothing moved (no record ended, no batch settled) for this long: a stuck system, not a slow one. */
const STALL_MS = 300_000;

/** The flow's own writes, where a targeted kill lands. */
type FlowPoint = 'wait' | 'add-dependent' | 'count' | 'release' | 'member-end' | 'dependent-end';
const POINTS: readonly FlowPoint[] = ['wait', 'add-dependent', 'count', 'release', 'member-end', 'dependent-end'];
const TERMINAL = new Set(['succeeded', 'archived', 'cancelled']);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let stack: LocalStack | undefined;
let dir: string | undefined;
afterEach(async () => {
  await stack?.stop();
  stack = undefined;
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('dependency suite: dependents and members in every order, dispatchers killed', () => {
  it(`fails a dependent exactly when a member did not succeed, else runs it once after its last member (${FLOWS} flows)`, async () => {
    const plan = planFlows(seededRandom(SEED), FLOWS);
    const random = seededRandom(SEED + 1);
    const startedAt = Date.now();
    const outcomes: Record<string, number> = {};
    stack = await startLocalStack({
      configFile: JOURNAL_CONFIG,
      version: 'deps',
      dispatchers: 0,
      replaceDeadDispatchers: false,
      logLevel: 'ERROR',
      onBatch: (report) => {
        for (const j of report.jobs) outcomes[j.outcome] = (outcomes[j.outcome] ?? 0) + 1;
      },
    });
    const local = stack;
    const url = local.urls.queues.work as string;
    dir = mkdtempSync(join(tmpdir(), 'taskworker-deps-'));
    const journalFile = join(dir, 'journal.jsonl');
    // Each flow settles its members' messages and its dependent's two (held, then run), and some more (duplicates, kills).
    const expectedWork = plan.reduce((n, f) => n + f.members.length + 2, 0);
    const work = () => Object.values(outcomes).reduce((a, b) => a + b, 0);
    const killer = await startKiller(local, plan, random, work, Math.max(20, Math.floor(expectedWork / MAX_KILLS)));

    // Send the flows, each in its order, at most WINDOW of them unfinished; cancel the members that are to be cancelled.
    const ids = plan.flatMap((f) => [f.id, ...f.members.map((m) => m.id)]);
    const queues = new SqsQueueClient(local.sqs);
    const recordsOf = async (of: readonly string[]) => {
      const found: JobRecord[] = [];
      for (let i = 0; i < of.length; i += 100) found.push(...(await local.jobs.getMany(of.slice(i, i + 100))));
      return found;
    };
    const ended = new Set<string>();
    const sent: FlowPlan[] = [];
    const pending: Array<Promise<void>> = [];
    const cancels: Array<Promise<void>> = [];
    let cancelsStopped = false;
    let sendFailures = 0;
    const sendFlow = async (flow: FlowPlan) => {
      const t0 = Date.now();
      for (const s of sendsOf(flow, journalFile, t0, random)) {
        const wait = t0 + s.atMs - Date.now();
        if (wait > 0) await sleep(wait);
        const out = await local.sqs.send(
          new SendMessageBatchCommand({ QueueUrl: url, Entries: s.bodies.map((MessageBody, i) => ({ Id: String(i), MessageBody })) }),
        );
        sendFailures += out.Failed?.length ?? 0;
      }
      for (const m of flow.members.filter((m) => m.kind === 'cancel-parked' || m.kind === 'cancel-running'))
        cancels.push(cancelWhen(local, m.id, m.kind === 'cancel-parked' ? 'scheduled' : 'running', () => cancelsStopped));
    };
    const refreshEnded = async () => {
      const open = sent.filter((f) => !ended.has(f.id)).map((f) => f.id);
      for (const r of await recordsOf(open)) if (TERMINAL.has(r.state)) ended.add(r.jobId);
    };
    let lastReport = 0;
    const report = async (dependents: readonly JobRecord[]) => {
      if (Date.now() - lastReport < 15_000) return;
      lastReport = Date.now();
      const states: Record<string, number> = {};
      for (const r of dependents) states[r.state] = (states[r.state] ?? 0) + 1;
      process.stderr.write(
        `dependencies progress: ${Math.round((Date.now() - startedAt) / 1000)} s, flows sent ${sent.length}/${plan.length}, kills ${killer.kills().length}, dependents ${JSON.stringify(states)}, queue ${JSON.stringify(await queues.depth(url))}, outcomes ${JSON.stringify(outcomes)}\n`,
      );
    };
    for (const flow of plan) {
      while (sent.length - ended.size >= WINDOW) {
        await sleep(1000);
        await refreshEnded();
        await report(await recordsOf(sent.map((f) => f.id)));
      }
      sent.push(flow);
      pending.push(sendFlow(flow));
      await sleep(Math.floor(random() * 200));
    }
    await Promise.all(pending);

    // Drained: every record terminal and the queue empty. Given up only when nothing moves for STALL_MS.
    let progress = '';
    let movedAt = Date.now();
    let drained = false;
    while (!drained && Date.now() - movedAt < STALL_MS) {
      await sleep(3000);
      const dependents = await recordsOf(plan.map((f) => f.id));
      await report(dependents);
      const open = dependents.filter((r) => !TERMINAL.has(r.state));
      if (open.length > 0 && open.length <= 3 && Date.now() - movedAt > 30_000 && Date.now() - lastReport < 3500) {
        // The last few, stuck a while: what they and their members' records say.
        for (const r of open) {
          const members = await recordsOf(plan.find((f) => f.id === r.jobId)?.members.map((m) => m.id) ?? []);
          process.stderr.write(
            `dependencies: still open ${r.jobId} ${r.state} ${JSON.stringify(r.history.slice(-6))}; members ${JSON.stringify(countBy(members.map((m) => m.state)))}\n`,
          );
        }
      }
      const all = open.length === 0 ? await recordsOf(ids) : dependents;
      const terminal = all.filter((r) => TERMINAL.has(r.state)).length;
      const now = `${terminal} ${Object.values(outcomes).reduce((a, b) => a + b, 0)}`;
      if (now !== progress) [progress, movedAt] = [now, Date.now()];
      if (all.length < ids.length || terminal < ids.length) continue;
      const d = await queues.depth(url);
      drained = d.visible + d.inFlight + d.delayed === 0;
    }
    cancelsStopped = true;
    killer.stop();
    await Promise.all(cancels);
    await local.stopDispatchers();
    await killer.closeRelays();

    // The durable state: the jobs table (records and counts), the journal, the queue and its DLQ.
    const items = await scanAll(local.dynamo, local.tables.jobs);
    const records = new Map(items.filter((r) => !String(r.jobId).includes(' ')).map((r) => [String(r.jobId), r as unknown as JobRecord]));
    const counts = new Map(items.filter((r) => / w\d*$/.test(String(r.jobId))).map((r) => [String(r.jobId), r]));
    const journal = readJournal(journalFile);
    const left = await queues.depth(url);
    const dead = await queues.depth(local.urls.deadLetter.work as string);
    for (const [name, at] of [
      ['queue', url],
      ['dlq', local.urls.deadLetter.work as string],
    ] as const) {
      const got = await local.sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: at,
          MaxNumberOfMessages: 10,
          VisibilityTimeout: 60,
          MessageSystemAttributeNames: ['ApproximateReceiveCount'],
        }),
      );
      for (const m of got.Messages ?? [])
        process.stdout.write(`dependencies: left in ${name}: receives ${m.Attributes?.ApproximateReceiveCount} ${m.Body?.slice(0, 300)}\n`);
    }
    const found = checkFlows(plan, records, counts, journal, killer.killedAt);
    const nonTerminal = [...records.values()].filter((r) => !TERMINAL.has(r.state)).map((r) => `${r.jobId}:${r.state}`);
    const missing = ids.filter((id) => !records.has(id));
    const kindCount = (kind: string) => plan.reduce((n, f) => n + f.members.filter((m) => m.kind === kind).length, 0);
    const journalTotals = ids.reduce(
      (t, id) => ({ starts: t.starts + journal.of(id).starts.length, effects: t.effects + journal.of(id).ends.length }),
      { starts: 0, effects: 0 },
    );
    const details = {
      seed: SEED,
      flows: plan.length,
      members: plan.reduce((n, f) => n + f.members.length, 0),
      membersPerFlow: {
        1: plan.filter((f) => f.members.length === 1).length,
        '2-8': plan.filter((f) => f.members.length > 1 && f.members.length <= 8).length,
        '9-30': plan.filter((f) => f.members.length > 8 && f.members.length <= 30).length,
        '31-100': plan.filter((f) => f.members.length > 30).length,
      },
      kills: killer.kills().length,
      ...Object.fromEntries(Object.entries(found).map(([name, list]) => [name, list.length])),
      dependents: found.byOutcome,
      bodyStarts: journalTotals.starts,
      effects: journalTotals.effects,
      orders: Object.fromEntries(
        ['dependent-first', 'dependent-last', 'same-batch', 'other-batch', 'spread'].map((o) => [
          o,
          plan.filter((f) => f.order === o).length,
        ]),
      ),
      memberKinds: Object.fromEntries(
        ['fail', 'cancel-parked', 'cancel-running', 'expired', 'expiring'].map((k) => [k, kindCount(k)] as const),
      ),
      duplicatedMembers: plan.reduce((n, f) => n + f.duplicated.length, 0),
      dependentsSentTwice: plan.filter((f) => f.dependentTwice).length,
      killsBy: countBy(killer.kills()),
      missedKillPoints: killer.missed(),
      dispatchersStarted: killer.started(),
      outcomes,
      seconds: Math.round((Date.now() - startedAt) / 1000),
    };
    process.stdout.write(`dependencies: ${JSON.stringify(details)}\n`);
    // What went wrong, with the durable evidence of the first few: their records' histories and their journals.
    // `dependent#i` is the dependent's member i; `id: why` a job and what its journal shows.
    const evidence = (id: string) => {
      const r = records.get(id.replace(/#(\d+)$/, '.m$1').replace(/:.*$/, ''));
      const history = (r?.history ?? []).map(
        (h) => `${h.what}${h.attempt ? `#${h.attempt}` : ''}@${h.when}${h.worker ? ` ${h.worker}` : ''}`,
      );
      return { id, state: r?.state, attempt: r?.attempt, lastError: r?.lastError?.message, history, journal: journal.of(r?.jobId ?? '') };
    };
    for (const [name, list] of Object.entries({ ...found, nonTerminal, missing })) {
      if (!Array.isArray(list) || list.length === 0) continue;
      process.stdout.write(`dependencies: ${name}: ${JSON.stringify(list.slice(0, 10))}\n`);
      for (const id of list.slice(0, 3)) {
        process.stdout.write(`dependencies:   ${JSON.stringify(evidence(id))}\n`);
        // A member named: its dependent too, and the dependent's count items.
        const dependent = /#\d+$/.test(id) ? id.replace(/#\d+$/, '') : undefined;
        if (dependent === undefined) continue;
        const count = [...counts.entries()].filter(([k]) => k.startsWith(`${dependent} w`));
        process.stdout.write(`dependencies:   ${JSON.stringify({ ...evidence(dependent), count: Object.fromEntries(count) })}\n`);
      }
    }
    const retryCauses = countBy(
      [...records.values()]
        .filter((r) => r.history.some((h) => h.what === 'retrying'))
        .map((r) => `${r.lastError?.type}: ${r.lastError?.message?.replace(/\d+/g, 'N').slice(0, 80)}`),
    );
    process.stdout.write(`dependencies: retried jobs by last error: ${JSON.stringify(retryCauses)}\n`);
    const states = [...records.values()];
    writeTally({
      suite: 'dependencies',
      published: ids.length,
      succeeded: states.filter((r) => r.state === 'succeeded').length,
      archived: states.filter((r) => r.state === 'archived').length,
      lost: nonTerminal.length + missing.length,
      duplicates: found.doubleRuns.length + found.memberDoubleRuns.length,
      details,
    });

    expect(sendFailures).toBe(0);
    expect(drained).toBe(true);
    expect(missing).toEqual([]);
    expect(nonTerminal).toEqual([]);
    expect(left.visible + left.inFlight + left.delayed + dead.visible + dead.inFlight + dead.delayed).toBe(0);
    expect(found.wrongDependencyFailed).toEqual([]);
    expect(found.countedFailedThoughSucceeded).toEqual([]);
    expect(found.missedFailures).toEqual([]);
    expect(found.failedButRan).toEqual([]);
    expect(found.earlyRuns).toEqual([]);
    expect(found.notRun).toEqual([]);
    expect(found.doubleRuns).toEqual([]);
    expect(found.memberEffectMissing).toEqual([]);
    expect(found.memberDoubleRuns).toEqual([]);
    // The run covered what it claims: both ends of N, kills, and (a full run's plan) every order and member kind.
    expect(plan.some((f) => f.members.length === 100) && plan.some((f) => f.members.length === 1)).toBe(true);
    expect(details.kills).toBeGreaterThan(0);
    if (FLOWS >= 500) {
      expect(Object.values(details.orders).every((n) => n > 0)).toBe(true);
      expect(Object.values(details.memberKinds).every((n) => n > 0)).toBe(true);
    }
  }, 3_600_000);
});

/** What the tables and the journal must not hold, each a list of job ids (or `dependent#member`). */
function checkFlows(
  plan: readonly FlowPlan[],
  records: ReadonlyMap<string, JobRecord>,
  counts: ReadonlyMap<string, Record<string, unknown>>,
  journal: { readonly of: (jobId: string) => JobJournal },
  killedAt: ReadonlyMap<number, number>,
) {
  const journalOf = journal.of;
  const retried = (r: JobRecord | undefined) =>
    new Set((r?.history ?? []).filter((h) => h.what === 'retrying').map((h) => h.attempt as number));
  const found = {
    /** Every member succeeded, the dependent archived `dependency-failed` (issue 32 item 1). */
    wrongDependencyFailed: [] as string[],
    /** A count item holds as failed a member whose record succeeded. */
    countedFailedThoughSucceeded: [] as string[],
    /** A member did not succeed (`dependent#member`, the first such), the dependent was not archived `dependency-failed`. */
    missedFailures: [] as string[],
    /** Archived `dependency-failed`, yet its body started. */
    failedButRan: [] as string[],
    /** The dependent was claimed, or its body started, before its last member's end. */
    earlyRuns: [] as string[],
    /** Every member succeeded, and the dependent did not succeed with its effect. */
    notRun: [] as string[],
    /** The dependent's body ran again without a crash or a recorded failure (its effect twice, or a second start): `id: why`. */
    doubleRuns: [] as string[],
    /** A member succeeded without its effect. */
    memberEffectMissing: [] as string[],
    /** A member's body ran again without a crash or a recorded failure: `id: why`. */
    memberDoubleRuns: [] as string[],
    byOutcome: {} as Record<string, number>,
  };
  for (const flow of plan) {
    const dependent = records.get(flow.id);
    const members = flow.members.map((m) => records.get(m.id));
    const failed = members.filter((m) => m?.state !== 'succeeded');
    const ran = journalOf(flow.id);
    const outcome = `${dependent?.state}${dependent?.reason ? `:${dependent.reason}` : ''}`;
    found.byOutcome[outcome] = (found.byOutcome[outcome] ?? 0) + 1;
    if (failed.length === 0 && dependent?.reason === 'dependency-failed') found.wrongDependencyFailed.push(flow.id);
    if (failed.length > 0 && dependent?.reason !== 'dependency-failed')
      found.missedFailures.push(`${flow.id}#${members.indexOf(failed[0])}`);
    if (dependent?.reason === 'dependency-failed' && ran.starts.length > 0) found.failedButRan.push(flow.id);
    if (failed.length === 0 && (dependent?.state !== 'succeeded' || ran.ends.length === 0)) found.notRun.push(flow.id);
    const lastEnd = Math.max(...members.map((m) => Number(m?.finishedAt ?? Number.POSITIVE_INFINITY)));
    const claims = (dependent?.history ?? []).filter((h) => h.what === 'started' || h.what === 'took-over').map((h) => h.when);
    if ([...claims, ...ran.starts.map((s) => s.at)].some((at) => at < lastEnd)) found.earlyRuns.push(flow.id);
    const rerun = unexplainedRerun(ran, retried(dependent), killedAt);
    if (rerun) found.doubleRuns.push(`${flow.id}: ${rerun}`);
    for (const m of flow.members) {
      const record = records.get(m.id);
      if (record?.state === 'succeeded' && journalOf(m.id).ends.length === 0) found.memberEffectMissing.push(m.id);
      const memberRerun = unexplainedRerun(journalOf(m.id), retried(record), killedAt);
      if (memberRerun) found.memberDoubleRuns.push(`${m.id}: ${memberRerun}`);
    }
    // The count: no shard holds as failed a member whose record succeeded (the chord symptom of issue 32).
    for (let shard = 0; shard * 50 < flow.members.length; shard++) {
      const failedIndices = (counts.get(`${flow.id} w${shard}`)?.failed ?? []) as number[];
      for (const i of failedIndices) if (members[i]?.state === 'succeeded') found.countedFailedThoughSucceeded.push(`${flow.id}#${i}`);
    }
  }
  return found;
}

/**
 * The kill schedule: dispatcher processes behind DynamoDB relays and, every `every` settled
 * messages (`work`), a kill armed at one of the flow's writes (before it lands or after; missed if
 * no such write comes within as many messages more) or made at once at a random process, a
 * replacement started within half a second of each kill. `killedAt` maps a killed process's pid
 * to when it had exited.
 */
async function startKiller(local: LocalStack, plan: readonly FlowPlan[], random: Random, work: () => number, every: number) {
  const dependents = new Set(plan.map((f) => f.id));
  const kills: string[] = [];
  const missed: string[] = [];
  const killedAt = new Map<number, number>();
  const dispatchers: RelayedDispatcher[] = [];
  let armed: { point: FlowPoint; when: 'before' | 'after' } | undefined;
  let stopped = false;

  const pointOf = (x: Exchange): FlowPoint | undefined => {
    if (x.target !== 'DynamoDB_20120810.UpdateItem' || x.body.TableName !== local.tables.jobs) return undefined;
    const key = (x.body.Key as { jobId?: { S?: string } } | undefined)?.jobId?.S ?? '';
    if (/ w\d*$/.test(key)) return 'count';
    const update = String(x.body.UpdateExpression ?? '');
    if (update.startsWith('ADD ') && Object.values(x.body.ExpressionAttributeNames ?? {}).includes('dependents')) return 'add-dependent';
    const state = assignedState(x.body);
    if (state === 'waiting') return 'wait';
    if (state === 'scheduled' && JSON.stringify(x.body.ExpressionAttributeValues ?? {}).includes('released')) return 'release';
    if (state !== undefined && TERMINAL.has(state)) return dependents.has(key) ? 'dependent-end' : 'member-end';
    return undefined;
  };
  const offer = (d: RelayedDispatcher, x: Exchange, when: 'before' | 'after') => {
    const target = armed;
    if (stopped || !target || d.killed || target.when !== when || pointOf(x) !== target.point) return false;
    armed = undefined;
    kills.push(`${target.point}:${when}`);
    return true;
  };
  const launch = async (): Promise<void> => {
    if (stopped) return;
    const d: RelayedDispatcher = { relays: [], killed: false };
    const hooks = {
      classify: (): Phase => 'other',
      before: (x: Exchange) => offer(d, x, 'before'),
      landed: () => {},
      after: (x: Exchange) => offer(d, x, 'after'),
      kill: () => kill(d),
    };
    // Every kill point is a DynamoDB write: SQS calls go straight to the emulator.
    await startRelayed(local, d, hooks, true);
    dispatchers.push(d);
  };
  const kill = async (d: RelayedDispatcher) => {
    const pid = d.child?.pid;
    if (!(await killRelayed(d))) return;
    if (pid !== undefined) killedAt.set(pid, Date.now());
    setTimeout(() => void launch(), Math.floor(random() * 500));
  };
  // Every `every` settled messages (give or take half): a kill at once (3 in 10), else one armed at a flow point.
  let nextAt = every;
  let armedAt = 0;
  const turn: Array<{ point: FlowPoint; when: 'before' | 'after' }> = [];
  const tick = () => {
    const done = work();
    if (armed && done - armedAt > every) {
      missed.push(`${armed.point}:${armed.when}`);
      armed = undefined;
    }
    if (stopped || kills.length >= MAX_KILLS || armed || done < nextAt) return;
    nextAt = done + Math.floor(every * (0.5 + random()));
    if (random() < 0.3) {
      const alive = dispatchers.filter((d) => !d.killed);
      const d = alive[Math.floor(random() * alive.length)];
      if (d) {
        kills.push('anytime');
        void kill(d);
      }
      return;
    }
    // The points in turns, each turn in a random order: every point and side gets its kill before any gets a second.
    if (turn.length === 0)
      turn.push(
        ...shuffled(
          POINTS.flatMap((point) => [
            { point, when: 'before' as const },
            { point, when: 'after' as const },
          ]),
          random,
        ),
      );
    armedAt = done;
    armed = turn.shift();
  };
  for (let i = 0; i < DISPATCHERS; i++) await launch();
  const timer = setInterval(tick, 250);
  return {
    killedAt,
    kills: () => [...kills],
    missed: () => missed.length,
    started: () => dispatchers.length,
    stop: () => {
      stopped = true;
      armed = undefined;
      clearInterval(timer);
    },
    closeRelays: () => Promise.all(dispatchers.flatMap((d) => d.relays.map((r) => r.close()))),
  };
}

const shuffled = <T>(items: readonly T[], random: Random): T[] => {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
};

const countBy = (items: readonly string[]) => {
  const out: Record<string, number> = {};
  for (const x of items) out[x] = (out[x] ?? 0) + 1;
  return out;
};

/** Cancels job `id` once its record reaches `state` (parked, or running); gives up once it has ended, or when told to stop. */
async function cancelWhen(local: LocalStack, id: string, state: 'scheduled' | 'running', stopped: () => boolean): Promise<void> {
  while (!stopped()) {
    const record = await local.jobs.get(id);
    if (record && TERMINAL.has(record.state)) return;
    if (record?.state === state) {
      const result = await local.publisher.cancel(id);
      if (result.outcome === 'cancelled' || result.outcome === 'requested') return;
    }
    await sleep(500);
  }
}
