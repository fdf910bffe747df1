import { type Clock, systemClock, VirtualClock } from '../../lib/clock';
import { resolveConfig } from '../../lib/config/app-config';
import { ConfigError } from '../../lib/errors';
import { MemoryLimitStore } from '../../lib/fakes/memory-limits';
import { sqsRecordsOf } from '../../lib/invocation/doorbell';
import { FLEET_KEY, invocationRole } from '../../lib/invocation/scaling';
import type { ReceivedMessage } from '../../lib/ports';
import { createRegistry } from '../../lib/tasks/registry';
import { defineTask } from '../../lib/tasks/task';
import { readArchiveRecord } from '../../lib/wire/archive-record';
import { encodeEnvelope } from '../../lib/wire/envelope';
import { appConfig } from '../helpers/factories';
import { inlineRuntime } from '../helpers/runtime';
import { triggerRecords } from '../helpers/sqs-event';

/** Lambda's SQS event for messages as its trigger received them from `queue`. */
function sqsEvent(queue: string, messages: readonly ReceivedMessage[]) {
  return { Records: triggerRecords(queue, messages) };
}

function setup(clock: Clock = systemClock) {
  const config = appConfig({ queues: [{ name: 'urgent', priority: 90, visibilityTimeoutSeconds: 30, longPollSeconds: 0 }] });
  const ran: string[] = [];
  /** The `slow` task runs until this opens. */
  let open = () => {};
  const gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  const tasks = [
    defineTask({
      name: 'slow',
      queue: 'urgent',
      timeLimitSeconds: 5,
      run: async () => {
        await gate;
        ran.push('slow');
      },
    }),
    defineTask({ name: 'ok', queue: 'urgent', timeLimitSeconds: 5, run: (p: { n: string }) => void ran.push(p.n) }),
    defineTask({
      name: 'flaky',
      queue: 'urgent',
      timeLimitSeconds: 5,
      maxRetries: 3,
      // Back in a minute: after this invocation has ended.
      backoff: { baseSeconds: 60, capSeconds: 60 },
      run: () => {
        throw new Error('later');
      },
    }),
  ];
  /** The doorbells each switch left off (all of them: `*`). */
  const switched: Array<readonly string[]> = [];
  const { runtime, sqs, urls, reports } = inlineRuntime(config, tasks, {
    clock,
    doorbells: { set: async (on, off = []) => void switched.push(on ? off : ['*']) },
  });
  const send = (id: string, body: string) => sqs.sendBatch(urls.queues.urgent, [{ id, body }]);
  /** What the trigger's poller does: receive a batch with the queue's visibility timeout. */
  const triggerReceives = () => sqs.receive(urls.queues.urgent, { maxMessages: 10, waitSeconds: 0, visibilityTimeoutSeconds: 30 });
  return { runtime, sqs, urls, ran, reports, send, triggerReceives, switched, open };
}

describe('the doorbell: an SQS trigger’s batch through the dispatcher', () => {
  it('knows a trigger’s event from any other', () => {
    const event = sqsEvent('urgent', [
      { messageId: 'm', receiptHandle: 'r', body: '{}', receiveCount: 1, sentTimestamp: 0, attributes: {} },
    ]);
    expect(sqsRecordsOf(event)).toHaveLength(1);
    expect(invocationRole(event)).toBe('doorbell');
    expect(sqsRecordsOf({ Records: [] })).toBeUndefined();
    expect(sqsRecordsOf({ Records: [{ eventSource: 'aws:sns' }] })).toBeUndefined();
    expect(invocationRole({ source: 'taskworker.schedule' })).toBe('scheduled');
  });

  it('runs the batch under the dispatcher’s rules and reports as failures exactly the messages it did not delete', async () => {
    const s = setup();
    await s.send('a', encodeEnvelope({ task: 'ok', payload: { n: 'a' } }));
    await s.send('b', encodeEnvelope({ task: 'flaky' }));
    await s.send('c', encodeEnvelope({ task: 'no-such-task' }));
    await s.send('d', 'not json');
    const received = await s.triggerReceives();
    const records = sqsRecordsOf(sqsEvent('urgent', received));
    const summary = await s.runtime.ring(records ?? [], Date.now() + 30_000);

    const retried = received.find((m) => m.body.includes('flaky'))?.messageId;
    expect(summary.batchItemFailures).toEqual([{ itemIdentifier: retried }]);
    expect(s.ran).toEqual(['a']);
    // The dispatcher left the deletes to the trigger (one request fewer); the trigger deletes the rest.
    expect(s.sqs.requests.deleteBatch).toBe(0);
    const done = received.filter((m) => m.messageId !== retried).map((m) => ({ id: m.messageId, receiptHandle: m.receiptHandle }));
    await s.sqs.deleteBatch(s.urls.queues.urgent, done);
    // What SQS holds: the retried message, invisible for its backoff; two archived with their reasons.
    expect(await s.sqs.depth(s.urls.queues.urgent)).toMatchObject({ visible: 0, inFlight: 1 });
    const archived = s.sqs.peek(s.urls.archive).map((m) => readArchiveRecord(m.attributes)?.reason);
    expect(archived.sort()).toEqual(['malformed', 'unknown-task']);
  });

  it('runs its batch and ends: what waits besides is the scheduled dispatcher’s, taken by priority', async () => {
    const s = setup();
    await s.send('a', encodeEnvelope({ task: 'ok', payload: { n: 'rang' } }));
    const received = await s.triggerReceives();
    for (const n of ['x', 'y', 'z']) await s.send(n, encodeEnvelope({ task: 'ok', payload: { n } }));
    // The deadline is far: the invocation ends once its batch is settled, not at the deadline.
    const summary = await s.runtime.ring(sqsRecordsOf(sqsEvent('urgent', received)) ?? [], Date.now() + 10 * 60_000);
    expect(s.ran).toEqual(['rang']);
    expect(summary).toMatchObject({ selections: 0, receives: 0, batchItemFailures: [] });
    // Three wait for the scheduled fleet; the one it ran waits for its trigger's delete.
    expect(await s.sqs.depth(s.urls.queues.urgent)).toEqual({ visible: 3, inFlight: 1, delayed: 0 });
  });

  it('fills its free slots from its queue while its given job runs long: a quick job is not left behind the slow one', async () => {
    const s = setup();
    await s.send('s', encodeEnvelope({ task: 'slow', payload: {} }));
    const received = await s.triggerReceives();
    // Quick jobs arrive while the trigger is at its concurrency with slow ones (this one among them).
    for (const n of ['q1', 'q2']) await s.send(n, encodeEnvelope({ task: 'ok', payload: { n } }));
    const ringing = s.runtime.ring(sqsRecordsOf(sqsEvent('urgent', received)) ?? [], Date.now() + 25_000);
    while (s.ran.length < 2) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(s.ran).toEqual(['q1', 'q2']);
    s.open();
    const summary = await ringing;
    expect(s.ran).toEqual(['q1', 'q2', 'slow']);
    // It deleted what it received itself; the trigger deletes its own batch.
    expect(summary.batchItemFailures).toEqual([]);
    expect(await s.sqs.depth(s.urls.queues.urgent)).toEqual({ visible: 0, inFlight: 1, delayed: 0 });
  });

  it('leaves records of a queue that is not this version’s in their queue, untouched', async () => {
    const s = setup();
    const summary = await s.runtime.ring(
      sqsRecordsOf(
        sqsEvent('other-app-queue', [
          {
            messageId: 'f',
            receiptHandle: 'nope',
            body: encodeEnvelope({ task: 'ok', payload: { n: 'f' } }),
            receiveCount: 1,
            sentTimestamp: 0,
            attributes: {},
          },
        ]),
      ) ?? [],
      Date.now() + 30_000,
    );
    expect(summary.batchItemFailures).toEqual([{ itemIdentifier: 'f' }]);
    expect(s.ran).toEqual([]);
  });
});

describe('the scheduled invocation in an idle version', () => {
  it('asks each queue’s depth once and ends without a single receive', async () => {
    const s = setup();
    const summary = await s.runtime.invoke(Date.now() + 60_000, undefined, 'scheduled');
    expect(summary).toMatchObject({ selections: 0, receives: 0 });
    expect(s.sqs.requests).toMatchObject({ depth: 1, receive: 0 });
    // Nothing to do: the doorbells keep watch.
    expect(s.switched).toEqual([[]]);
  });

  it('turns the doorbells off while it works, and on again when it ends for lack of work', async () => {
    const clock = new VirtualClock();
    const s = setup(clock);
    const ids = Array.from({ length: 12 }, (_, i) => `m${i}`);
    for (const id of ids) await s.send(id, encodeEnvelope({ task: 'ok', payload: { n: id } }));
    await s.runtime.invoke(clock.now() + 7_000, undefined, 'scheduled');
    expect([...s.ran].sort()).toEqual([...ids].sort());
    // A backlog (more than one dispatcher's 10 slots): its queue's doorbell steps aside while the
    // fleet works it by priority, and comes back once the fleet has been idle for its allowance (2 s).
    expect(s.switched).toEqual([['urgent'], []]);
  });

  it('takes a trickle in passing, leaving the doorbells on', async () => {
    const clock = new VirtualClock();
    const s = setup(clock);
    await s.send('a', encodeEnvelope({ task: 'ok', payload: { n: 'a' } }));
    const summary = await s.runtime.invoke(clock.now() + 7_000, undefined, 'scheduled');
    expect(s.ran).toEqual(['a']);
    expect(summary.endedIdle).toBe(true);
    expect(s.switched).toEqual([[], []]);
  });
});

describe('the fleet count', () => {
  it('holds a scheduled invocation working a backlog while it runs, and never a trickle’s', async () => {
    const clock = new VirtualClock();
    const limits = new MemoryLimitStore();
    const seen: number[] = [];
    const config = appConfig({ queues: [{ name: 'urgent', priority: 90, visibilityTimeoutSeconds: 30, longPollSeconds: 0 }] });
    const task = defineTask({
      name: 'ok',
      queue: 'urgent',
      timeLimitSeconds: 5,
      run: async () => void seen.push(await limits.held(FLEET_KEY, clock.now())),
    });
    const { runtime, sqs, urls } = inlineRuntime(config, [task], { clock, tracking: { limits } });
    const send = (n: number) =>
      sqs.sendBatch(
        urls.queues.urgent,
        Array.from({ length: n }, (_, i) => ({ id: `${i}`, body: encodeEnvelope({ task: 'ok' }) })),
      );
    // A backlog (more than the 10 slots): counted while it works, gone when it ends.
    await send(10);
    await send(2);
    await runtime.invoke(clock.now() + 7_000, undefined, 'scheduled');
    expect(seen).toHaveLength(12);
    expect(new Set(seen)).toEqual(new Set([1]));
    expect(await limits.held(FLEET_KEY, clock.now())).toBe(0);
    // A trickle: taken in passing, not counted.
    seen.length = 0;
    await send(1);
    await runtime.invoke(clock.now() + 7_000, undefined, 'scheduled');
    expect(seen).toEqual([0]);
  });
});

describe('wakeUp in the config', () => {
  const queue = { name: 'urgent', priority: 90, visibilityTimeoutSeconds: 10 };

  it('defaults by SLA (a doorbell under 120 s, the schedule from there) and rejects other values by field', () => {
    expect(appConfig().queues.map((q) => q.wakeUp)).toEqual(['doorbell', 'doorbell']);
    const bySla = resolveConfig({
      app: 'a',
      queues: [
        { ...queue, slaSeconds: 119 },
        { ...queue, name: 'slow', slaSeconds: 120 },
      ],
    });
    expect(bySla.queues.map((q) => q.wakeUp)).toEqual(['doorbell', 'schedule']);
    expect(() => resolveConfig({ app: 'a', queues: [{ ...queue, wakeUp: 'bell' }] })).toThrow(
      'Invalid config queues[0].wakeUp = "bell": expected one of doorbell, schedule',
    );
  });

  it('fails the registry for a task a doorbell invocation cannot hold, naming the field, the queue and the fix', () => {
    const config = appConfig({ queues: [queue], dispatcher: { settleMarginMs: 5000, killGraceMs: 1000 } });
    const slow = defineTask({ name: 'slow', queue: 'urgent', timeLimitSeconds: 8, run: () => undefined });
    let error: unknown;
    try {
      createRegistry([slow], config);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect(String((error as Error).message)).toMatch(
      /^Invalid config queues\[0\]\.wakeUp = "doorbell": expected 'schedule', or visibilityTimeoutSeconds 14 or more on queue urgent/,
    );
    // On the schedule, the same task fits: the queue's visibility timeout is the only bound.
    expect(() =>
      createRegistry(
        [slow],
        appConfig({ queues: [{ ...queue, wakeUp: 'schedule' }], dispatcher: { settleMarginMs: 5000, killGraceMs: 1000 } }),
      ),
    ).not.toThrow();
  });
});
