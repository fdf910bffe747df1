/**
 * A fan-in under the crash suite's kills: a chord of 200 members and its callback, worked by
 * dispatcher processes (the real Lambda handler) that are SIGKILLed at the points a flow can break:
 * as a member's end is written, as it is counted into the callback (before the count lands, and
 * after it landed but before the process hears it), as the callback is released, and at random
 * moments. New processes replace the killed ones. The tables must show: every member and the
 * callback succeeded, the callback released once and started only after every member had ended,
 * its fenced effect applied once, nothing left waiting, nothing left in the queue.
 */
import { SqsQueueClient } from '../../lib/adapters/sqs';
import { type LocalStack, startLocalStack } from '../../lib/local/dev';
import { seededRandom } from '../../lib/random';
import type { EffectPayload } from './fixtures/tasks/effect';
import { assignedState, type Exchange, type Phase } from './helpers/relay';
import { killRelayed, type RelayedDispatcher, startRelayed } from './helpers/relayed';
import { CHAOS_CONFIG, createEffectsTable, scanAll, until } from './helpers/stage';
import { writeTally } from './helpers/tally';

const SEED = Number(process.env.CHAOS_SEED ?? 20_261_124);
const MEMBERS = 200;
const DISPATCHERS = 3;

/** Where a kill lands: the flow's own writes, each before and after the call lands. */
type FlowPoint = 'member-end' | 'count' | 'release';
const POINTS: readonly FlowPoint[] = ['member-end', 'count', 'release'];
/** Kills per point and side; the release is killed once before it lands and once after (then it must go through). */
const KILLS_PER_POINT = 3;

let stack: LocalStack | undefined;
afterEach(async () => {
  await stack?.stop();
  stack = undefined;
});

describe('crash suite: a fan-in of 200 under dispatcher kills', () => {
  it('runs the callback once, after every member, and leaves nothing waiting', async () => {
    const random = seededRandom(SEED);
    stack = await startLocalStack({
      configFile: CHAOS_CONFIG,
      version: 'flows',
      dispatchers: 0,
      replaceDeadDispatchers: false,
      logLevel: 'ERROR',
    });
    const local = stack;
    const effectsTable = await createEffectsTable(local.dynamo, 'chaos-flow-effects');
    const kills: string[] = [];
    const planned = new Map<string, number>(POINTS.flatMap((p) => [[`${p}:before`, 0] as const, [`${p}:after`, 0] as const]));
    const limit = (key: string) => (key.startsWith('release') ? 1 : KILLS_PER_POINT);

    const pointOf = (x: Exchange): FlowPoint | undefined => {
      if (x.target !== 'DynamoDB_20120810.UpdateItem' || x.body.TableName !== local.tables.jobs) return undefined;
      const key = (x.body.Key as { jobId?: { S?: string } } | undefined)?.jobId?.S ?? '';
      if (/ w\d*$/.test(key)) return 'count';
      const state = assignedState(x.body);
      // Placeholders are short (`#a`): the attribute names say what the update writes.
      const names = Object.values((x.body.ExpressionAttributeNames ?? {}) as Record<string, string>);
      if (state === 'scheduled' && names.includes('history')) {
        const values = JSON.stringify(x.body.ExpressionAttributeValues ?? {});
        if (values.includes('released')) return 'release';
      }
      if (state === 'succeeded' && key.startsWith('total.')) return 'member-end';
      return undefined;
    };
    // Kills are spread out: a point is hit with probability 1/4 each time it passes, until its quota is used.
    const offer = (d: Dispatcher, x: Exchange, when: 'before' | 'after') => {
      const point = pointOf(x);
      if (!point || d.killed) return false;
      const key = `${point}:${when}`;
      // The release comes once per try: killed every time until both sides have been hit.
      if ((planned.get(key) ?? 0) >= limit(key) || (point !== 'release' && random() > 0.25)) return false;
      if (point === 'release' && when === 'after' && (planned.get('release:before') ?? 0) === 0) return false;
      planned.set(key, (planned.get(key) ?? 0) + 1);
      kills.push(key);
      return true;
    };

    type Dispatcher = RelayedDispatcher;
    const dispatchers: Dispatcher[] = [];
    const launch = async (): Promise<void> => {
      const d: Dispatcher = { relays: [], killed: false };
      const hooks = {
        classify: (): Phase => 'other',
        before: (x: Exchange) => offer(d, x, 'before'),
        landed: () => {},
        after: (x: Exchange) => offer(d, x, 'after'),
        kill: () => kill(d),
      };
      await startRelayed(local, d, hooks);
      dispatchers.push(d);
    };
    const kill = async (d: Dispatcher) => {
      if (!(await killRelayed(d))) return;
      setTimeout(() => void launch(), Math.floor(random() * 500));
    };
    // And at random moments, wherever each process happens to be.
    const anytime = setInterval(() => {
      const alive = dispatchers.filter((d) => !d.killed);
      const d = alive[Math.floor(random() * alive.length)];
      if (d && kills.filter((k) => k === 'anytime').length < 4) {
        kills.push('anytime');
        void kill(d);
      }
    }, 4_000);

    for (let i = 0; i < DISPATCHERS; i++) await launch();
    const effect = (ms: number): EffectPayload => ({ table: effectsTable, ms });
    const members = Array.from({ length: MEMBERS }, () => ({ task: 'effect', payload: effect(20 + Math.floor(random() * 200)) }));
    const { callback } = await local.publisher.chord(members, { task: 'effect', payload: effect(50), options: { id: 'total' } });

    const isJob = (r: Record<string, unknown>) => !String(r.jobId).includes(' ');
    const drained = await until(
      async () => {
        const cb = (await scanAll(local.dynamo, local.tables.jobs)).find((r) => r.jobId === callback.jobId);
        if (cb?.state !== 'succeeded') return false;
        const d = await new SqsQueueClient(local.sqs).depth(local.urls.queues.work as string);
        return d.visible + d.inFlight + d.delayed === 0;
      },
      240_000,
      1000,
    );
    clearInterval(anytime);
    await local.stopDispatchers();
    await Promise.all(dispatchers.flatMap((d) => d.relays.map((r) => r.close())));

    const records = (await scanAll(local.dynamo, local.tables.jobs)).filter(isJob);
    const byId = new Map(records.map((r) => [String(r.jobId), r]));
    const cb = byId.get(callback.jobId) as Record<string, unknown>;
    const history = (cb?.history ?? []) as Array<{ what: string; when: number }>;
    const memberEnds = records.filter((r) => String(r.jobId).startsWith('total.')).map((r) => Number(r.finishedAt));
    const effects = new Map((await scanAll(local.dynamo, effectsTable)).map((e) => [String(e.pk), e]));
    const details = {
      seed: SEED,
      kills,
      dispatchersStarted: dispatchers.length,
      callbackHistory: history.map((h) => h.what),
      callbackBodies: Number(effects.get(callback.jobId)?.runs ?? 0),
      memberBodies: [...effects.entries()].filter(([k]) => k.startsWith('total.')).reduce((n, [, e]) => n + Number(e.runs), 0),
    };
    process.stdout.write(`flows: ${JSON.stringify(details)}\n`);
    const nonTerminal = records.filter((r) => r.state !== 'succeeded').map((r) => `${r.jobId}:${r.state}`);
    writeTally({
      suite: 'flows',
      published: MEMBERS + 1,
      succeeded: records.filter((r) => r.state === 'succeeded').length,
      archived: records.filter((r) => r.state === 'archived').length,
      lost: MEMBERS + 1 - records.length + nonTerminal.length,
      duplicates:
        [...effects.values()].filter((e) => Number(e.applies) > 1).length + history.filter((h) => h.what === 'released').length - 1,
      details,
    });

    expect(drained).toBe(true);
    expect(records).toHaveLength(MEMBERS + 1);
    expect(nonTerminal).toEqual([]);
    // Released once, and started only after the last member had ended.
    expect(history.filter((h) => h.what === 'released')).toHaveLength(1);
    const firstStart = history.find((h) => h.what === 'started' || h.what === 'took-over')?.when as number;
    expect(firstStart).toBeGreaterThanOrEqual(Math.max(...memberEnds));
    // The tasks' own log: every member's and the callback's fenced effect applied exactly once.
    expect(effects.size).toBe(MEMBERS + 1);
    expect([...effects.values()].filter((e) => Number(e.applies) !== 1).map((e) => e.pk)).toEqual([]);
    // The kills hit the flow's own writes, before and after they landed.
    for (const point of ['member-end', 'count', 'release'] as const) {
      expect(kills.filter((k) => k.startsWith(point)).length).toBeGreaterThan(0);
    }
    expect(kills.length).toBeGreaterThanOrEqual(6);
  });
});
