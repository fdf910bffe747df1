import type { LambdaClient } from '@aws-sdk/client-lambda';
import { doorbellMappingsFromEnv, LambdaDoorbellSwitch } from '../../lib/adapters/lambda-doorbells';
import { VirtualClock } from '../../lib/clock';
import type { TaskworkerConfig } from '../../lib/config/app-config';
import { MemoryControlStore } from '../../lib/fakes/memory-controls';
import { MemoryQueueService } from '../../lib/fakes/memory-queue';
import { createInvocation } from '../../lib/invocation/invocation';
import { silentLogger } from '../../lib/ports';
import { seededRandom } from '../../lib/random';
import { InlineExecutor } from '../../lib/run/inline-executor';
import { createRegistry } from '../../lib/tasks/registry';
import { defineTask } from '../../lib/tasks/task';
import {
  ControlsCache,
  ControlValueError,
  effectiveQueues,
  NO_CONTROLS,
  parsePriority,
  parseSlaSeconds,
  pauseHolding,
  pauseScopeId,
} from '../../lib/track/operator-controls';
import { encodeEnvelope } from '../../lib/wire/envelope';
import { appConfig } from '../helpers/factories';

/** Two queues on fakes, one task on each, a controls store, and the one invocation (strict priority, so the order is the selector's). */
function setup(selector: 'strict' | 'sla-aware' = 'strict') {
  const clock = new VirtualClock();
  const sqs = new MemoryQueueService(clock);
  const config: TaskworkerConfig = appConfig({
    queues: [
      { name: 'urgent', priority: 90, visibilityTimeoutSeconds: 30, longPollSeconds: 0, batchSize: 1 },
      { name: 'routine', priority: 10, visibilityTimeoutSeconds: 30, longPollSeconds: 0, batchSize: 1 },
    ],
    dispatcher: { concurrency: 1, timeoutSeconds: 60, settleMarginMs: 500, killGraceMs: 100, selector },
  });
  const urls = { queues: { urgent: sqs.createQueue('urgent'), routine: sqs.createQueue('routine') }, archive: sqs.createQueue('archive') };
  const started: string[] = [];
  const tasks = ['urgent', 'routine'].map((queue) =>
    defineTask({ name: `on-${queue}`, queue, timeLimitSeconds: 1, run: () => void started.push(queue) }),
  );
  const registry = createRegistry(tasks, config);
  const receivesFrom: Record<string, number> = { urgent: 0, routine: 0 };
  const queues = {
    ...sqs,
    receive: (url: string, ...rest: Parameters<MemoryQueueService['receive']> extends [string, ...infer R] ? R : never) => {
      const name = Object.entries(urls.queues).find(([, u]) => u === url)?.[0] as string;
      receivesFrom[name] = (receivesFrom[name] ?? 0) + 1;
      return sqs.receive(url, ...rest);
    },
    sendBatch: sqs.sendBatch.bind(sqs),
    deleteBatch: sqs.deleteBatch.bind(sqs),
    changeVisibilityBatch: sqs.changeVisibilityBatch.bind(sqs),
    depth: sqs.depth.bind(sqs),
  };
  const controls = new MemoryControlStore();
  const switched: Array<{ on: boolean; off: readonly string[] }> = [];
  const invocation = createInvocation({
    config,
    registry,
    queues,
    urls,
    executor: new InlineExecutor(registry, config.dispatcher.killGraceMs),
    clock,
    random: seededRandom(3),
    logger: silentLogger,
    workerId: 'w',
    tracking: { version: 'v1', controls },
    doorbells: { set: async (on, off = []) => void switched.push({ on, off }) },
  });
  const send = (queue: 'urgent' | 'routine', n: number) =>
    sqs.sendBatch(
      urls.queues[queue],
      Array.from({ length: n }, (_, i) => ({ id: `${i}`, body: encodeEnvelope({ task: `on-${queue}` }) })),
    );
  return { clock, sqs, urls, controls, invocation, started, receivesFrom, switched, send };
}

describe('operator controls in the selection', () => {
  it('leaves a paused queue out: nothing is received from it while the other queue’s work runs, and it drains after resume', async () => {
    const s = setup();
    await s.send('urgent', 3);
    await s.send('routine', 3);
    await s.controls.change('urgent', { paused: true }, s.clock.now());

    await s.invocation.run({ deadline: s.clock.now() + 30_000 });
    expect(s.started).toEqual(['routine', 'routine', 'routine']);
    expect(s.receivesFrom.urgent).toBe(0);
    expect((await s.sqs.depth(s.urls.queues.urgent)).visible).toBe(3);

    await s.controls.change('urgent', { paused: false }, s.clock.now());
    await s.invocation.run({ deadline: s.clock.now() + 30_000 });
    expect(s.started.filter((q) => q === 'urgent')).toHaveLength(3);
  });

  it('reads the controls once at an invocation’s start and at most once per 2 s of selecting, never per message', async () => {
    const s = setup();
    await s.send('routine', 5);
    await s.invocation.run({ deadline: s.clock.now() + 30_000 });
    expect(s.started).toHaveLength(5);
    // 30 s of selection rounds (hundreds of them) read the store once at the start and once per 2 s at most.
    expect(s.controls.reads).toBeGreaterThanOrEqual(2);
    expect(s.controls.reads).toBeLessThanOrEqual(1 + Math.ceil(30_000 / 2000));
  });

  it('serves first the queue whose priority an operator raised, and the config’s order again after a reset', async () => {
    const s = setup();
    await s.controls.change('routine', { priority: 100 }, s.clock.now());
    await s.send('urgent', 2);
    await s.send('routine', 2);
    await s.invocation.run({ deadline: s.clock.now() + 30_000 });
    expect(s.started).toEqual(['routine', 'routine', 'urgent', 'urgent']);

    s.started.length = 0;
    await s.controls.change('routine', { priority: null }, s.clock.now());
    await s.send('urgent', 2);
    await s.send('routine', 2);
    await s.invocation.run({ deadline: s.clock.now() + 30_000 });
    expect(s.started).toEqual(['urgent', 'urgent', 'routine', 'routine']);
  });

  it('a scheduled invocation of a version whose only backlog is paused ends at once on one read, and keeps that queue’s doorbell off', async () => {
    const s = setup();
    await s.send('urgent', 4);
    await s.controls.change('urgent', { paused: true }, s.clock.now());
    const summary = await s.invocation.run({ deadline: s.clock.now() + 60_000, role: 'scheduled' });
    expect(summary.selections).toBe(0);
    expect(s.started).toEqual([]);
    expect(s.controls.reads).toBe(1);
    expect(s.switched).toEqual([{ on: true, off: ['urgent'] }]);
  });

  it('a doorbell invocation of a paused queue runs nothing and hands every record back to its trigger', async () => {
    const s = setup();
    await s.send('urgent', 2);
    await s.controls.change('urgent', { paused: true }, s.clock.now());
    const taken = await s.sqs.receive(s.urls.queues.urgent, { maxMessages: 10, waitSeconds: 0, visibilityTimeoutSeconds: 30 });
    const records = taken.map((m) => ({
      messageId: m.messageId,
      receiptHandle: m.receiptHandle,
      body: m.body,
      attributes: { ApproximateReceiveCount: '1', SentTimestamp: String(m.sentTimestamp) },
      eventSource: 'aws:sqs' as const,
      eventSourceARN: 'arn:aws:sqs:us-east-1:000000000000:urgent',
    }));
    const summary = await s.invocation.ring(records, s.clock.now() + 30_000);
    expect(s.started).toEqual([]);
    expect(summary.batchItemFailures.map((f) => f.itemIdentifier).sort()).toEqual(taken.map((m) => m.messageId).sort());
    expect((await s.sqs.depth(s.urls.queues.urgent)).inFlight).toBe(2);
  });
});

describe('controls: values and cache', () => {
  const queues = appConfig().queues;

  it('overrides priority and SLA on copies, drops paused queues, and returns an uncontrolled queue as it is', () => {
    const [urgent, routine] = queues;
    const out = effectiveQueues(queues, {
      revision: 2,
      queues: { urgent: { pausedAt: 1, updatedAt: 1 }, routine: { priority: 99, slaSeconds: 5, updatedAt: 2 } },
      pauses: {},
    });
    expect(out).toEqual([{ ...routine, priority: 99, slaSeconds: 5 }]);
    expect(effectiveQueues(queues, NO_CONTROLS)[0]).toBe(urgent);
  });

  it('names the bad value', () => {
    expect(() => parsePriority('0')).toThrow(ControlValueError);
    expect(() => parsePriority('high')).toThrow('--priority "high": expected an integer from 1 to 100');
    expect(() => parseSlaSeconds('1.5')).toThrow('--sla "1.5": expected whole seconds from 1 to 1209600 (14 days)');
    expect(parsePriority('100')).toBe(100);
    expect(parseSlaSeconds('30')).toBe(30);
  });

  it('reads once per refresh period, shares a read in flight, and keeps the last controls when a read fails', async () => {
    let now = 0;
    let fail = false;
    const store = new MemoryControlStore();
    const errors: unknown[] = [];
    const cache = new ControlsCache(
      {
        read: () => (fail ? Promise.reject(new Error('throttled')) : store.read()),
        change: (q, c, at) => store.change(q, c, at),
        pause: (scope, until, at) => store.pause(scope, until, at),
      },
      () => now,
      (e) => errors.push(e),
    );
    await store.change('urgent', { paused: true }, 0);
    await Promise.all([cache.get(), cache.get()]);
    await cache.get();
    expect(store.reads).toBe(1);
    now = 2000;
    fail = true;
    expect((await cache.get()).queues.urgent?.pausedAt).toBe(0);
    expect(errors).toHaveLength(1);
    expect(cache.reads).toBe(2);
  });
});

describe('the doorbell switch on Lambda and a paused queue', () => {
  it('reads `queue=uuid` (and a bare uuid) and never enables a paused queue’s mapping, calling only for what changes', async () => {
    const mappings = doorbellMappingsFromEnv('urgent=u-1,routine=u-2,u-3');
    expect(mappings).toEqual([{ queue: 'urgent', id: 'u-1' }, { queue: 'routine', id: 'u-2' }, { id: 'u-3' }]);
    const calls: unknown[] = [];
    const client = { send: async (command: { input: unknown }) => void calls.push(command.input) } as unknown as LambdaClient;
    const doorbells = new LambdaDoorbellSwitch(mappings, () => client);
    await doorbells.set(true, ['urgent']);
    expect(calls).toEqual([
      { UUID: 'u-1', Enabled: false },
      { UUID: 'u-2', Enabled: true },
      { UUID: 'u-3', Enabled: true },
    ]);
    calls.length = 0;
    await doorbells.set(true, ['urgent']);
    expect(calls).toEqual([]);
    await doorbells.set(true);
    expect(calls).toEqual([{ UUID: 'u-1', Enabled: true }]);
  });
});

describe('rate-limit pauses in the controls', () => {
  const queues = appConfig().queues;
  const controls = (pauses: Record<string, number>) => ({ ...NO_CONTROLS, pauses });

  it('names scopes, and finds the live pause that holds a job (the one ending last)', () => {
    const target = { task: 'sync', queue: 'urgent', key: 'acct-1' };
    expect(pauseScopeId('task', target)).toBe('task:sync');
    expect(pauseScopeId('key', target)).toBe('key:sync:acct-1');
    expect(pauseScopeId('key', { task: 'sync', queue: 'urgent' })).toBe('task:sync');
    expect(pauseScopeId('queue', target)).toBe('queue:urgent');
    const c = controls({ 'task:sync': 5000, 'key:sync:acct-1': 9000, 'queue:routine': 9999 });
    expect(pauseHolding(c, target, 1000)).toEqual({ scope: 'key:sync:acct-1', until: 9000 });
    expect(pauseHolding(c, { ...target, key: 'acct-2' }, 1000)).toEqual({ scope: 'task:sync', until: 5000 });
    expect(pauseHolding(c, { ...target, key: 'acct-2' }, 5000)).toBeUndefined();
    expect(pauseHolding(c, { task: 'other', queue: 'urgent' }, 1000)).toBeUndefined();
  });

  it('leaves a rate-limited queue out of the selection until its pause ends, only when asked with the time', () => {
    const [urgent, routine] = queues;
    const c = controls({ 'queue:urgent': 5000 });
    expect(effectiveQueues(queues, c, 4999)).toEqual([routine]);
    expect(effectiveQueues(queues, c, 5000)).toEqual([urgent, routine]);
    expect(effectiveQueues(queues, c)).toEqual([urgent, routine]);
  });

  it('keeps its own pause over a read that does not show it yet, and drops it once ended', async () => {
    let now = 0;
    const store = new MemoryControlStore();
    const cache = new ControlsCache(store, () => now);
    cache.notePause('task:sync', 3000);
    // The store never heard of it (its write failed, or a read is eventually consistent).
    expect((await cache.get(true)).pauses).toEqual({ 'task:sync': 3000 });
    await store.pause('task:other', 4000, 0);
    expect((await cache.get(true)).pauses).toEqual({ 'task:sync': 3000, 'task:other': 4000 });
    now = 3500;
    expect((await cache.get(true)).pauses).toEqual({ 'task:other': 4000 });
  });
});
