import { renderStats } from '../../cli/render';
import { UsageMeter } from '../../lib/adapters/usage-meter';
import { addCost, attributeUsage, costUsd, gbSeconds, NO_COST, type UsageDelta } from '../../lib/policy/cost-attribution';
import { mergeQueueDay, taskStatsKey, utcDay } from '../../lib/policy/stat-sums';
import type { TaskOptions } from '../../lib/tasks/task';
import { encodeEnvelope } from '../../lib/wire/envelope';
import { world } from '../helpers/world';

describe('attributing usage to the tasks of a batch', () => {
  it('shares requests and write units by messages, billed time by run time, and the shares add up to the whole', () => {
    const shares = attributeUsage({ sqsRequests: 4, writeUnits: 10, elapsedMs: 200 }, 1024, [
      { task: 'a', runMs: 30 },
      { task: 'a', runMs: 30 },
      { task: 'b', runMs: 60 },
      { task: 'c' },
    ]);
    expect(shares.get('a')).toEqual({ sqsRequests: 2, writeUnits: 5, lambdaMbMs: 200 * 1024 * 0.5 });
    expect(shares.get('b')).toEqual({ sqsRequests: 1, writeUnits: 2.5, lambdaMbMs: 200 * 1024 * 0.5 });
    expect(shares.get('c')).toEqual({ sqsRequests: 1, writeUnits: 2.5, lambdaMbMs: 0 });
    const sum = [...shares.values()].reduce(addCost, NO_COST);
    expect(sum).toEqual({ sqsRequests: 4, writeUnits: 10, lambdaMbMs: 200 * 1024 });
  });

  it('shares billed time by messages when nothing ran, and gives an empty batch nothing', () => {
    const shares = attributeUsage({ sqsRequests: 2, writeUnits: 0, elapsedMs: 10 }, 512, [{ task: 'a' }, { task: 'b' }]);
    expect(shares.get('a')?.lambdaMbMs).toBe(2560);
    expect(attributeUsage({ sqsRequests: 2, writeUnits: 2, elapsedMs: 10 }, 512, []).size).toBe(0);
  });

  it('prices GB-seconds, requests and write units at list prices', () => {
    const cost = { lambdaMbMs: 1024 * 1000 * 1_000_000, sqsRequests: 1_000_000, writeUnits: 1_000_000 };
    expect(gbSeconds(cost)).toBe(1_000_000);
    expect(costUsd(cost)).toBeCloseTo(13.3334 + 0.4 + 0.625, 6);
  });

  it('merges a day’s cost by addition, and a day without cost stays without', () => {
    const day = { queue: 'task:a', day: '2026-11-24', counters: {}, archived: {}, wait: empty(), run: empty() };
    expect(mergeQueueDay(day, day).cost).toBeUndefined();
    const one = { ...day, cost: { lambdaMbMs: 1, sqsRequests: 2, writeUnits: 3 } };
    expect(mergeQueueDay(one, one).cost).toEqual({ lambdaMbMs: 2, sqsRequests: 4, writeUnits: 6 });
    expect(renderStats([one])).toContain('cost: Lambda 0.000 GB-s · SQS 2.0 requests · DynamoDB 3.0 WCU');
  });
});

describe('the usage meter', () => {
  it('counts SQS requests and DynamoDB write units through client middleware, and takes them once', async () => {
    let now = 1_000;
    const meter = new UsageMeter(() => now);
    const sqs = fakeClient();
    const dynamo = fakeClient();
    meter.meterSqs(sqs);
    meter.meterSqs(sqs); // once per client
    meter.meterDynamo(dynamo);
    await sqs.send('ReceiveMessageCommand', {});
    await sqs.send('DeleteMessageBatchCommand', {});
    const input: Record<string, unknown> = {};
    await dynamo.send('UpdateItemCommand', input, { ConsumedCapacity: { CapacityUnits: 2 } });
    await dynamo.send('GetItemCommand', {}, { ConsumedCapacity: { CapacityUnits: 0.5 } });
    expect(input.ReturnConsumedCapacity).toBe('TOTAL');
    now = 1_250;
    expect(meter.take()).toEqual({ sqsRequests: 2, writeUnits: 2, elapsedMs: 250 });
    now = 5_000;
    meter.restart(); // the time between invocations is not billed; nothing counted is dropped
    await sqs.send('ReceiveMessageCommand', {});
    now = 5_100;
    expect(meter.take()).toEqual({ sqsRequests: 1, writeUnits: 0, elapsedMs: 100 });
  });

  it('gives each batch its own requests, even when a batch settling beside it took the shared rest first', async () => {
    const meter = new UsageMeter(() => 0);
    const sqs = fakeClient();
    meter.meterSqs(sqs);
    await sqs.send('ReceiveMessageCommand', {}); // outside any batch: shared
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const taken: Record<string, number> = {};
    const settle = (name: string, requests: number, wait?: Promise<void>) =>
      meter.batch(async () => {
        for (let i = 0; i < requests; i++) await sqs.send('DeleteMessageBatchCommand', {});
        if (wait) await wait;
        taken[name] = meter.take().sqsRequests;
      });
    const a = settle('a', 2, gate);
    await settle('b', 3); // takes its own 3 and the shared receive
    // A doorbell's batch: its trigger's receive and delete are added to it.
    await meter.batch(async () => {
      meter.addRequests(2);
      taken.doorbell = meter.take().sqsRequests;
    });
    release();
    await a;
    expect(taken).toEqual({ a: 2, b: 4, doorbell: 2 });
    // A batch that takes nothing (no registered task in it) leaves its requests to the next take.
    await meter.batch(async () => {
      await sqs.send('DeleteMessageBatchCommand', {});
    });
    expect(meter.take().sqsRequests).toBe(1);
    expect(meter.sqsRequests).toBe(9); // every request counted, the trigger's among them
  });
});

describe('cost in the task stats (fakes)', () => {
  const ok: TaskOptions = { name: 'ok', queue: 'urgent', timeLimitSeconds: 5, run: () => 'done' };
  const other: TaskOptions = { name: 'other', queue: 'urgent', timeLimitSeconds: 5, run: () => 'done' };

  it('rides on the coalesced task-day writes: no extra write, and the tasks’ shares add up to what was taken', async () => {
    const taken: UsageDelta[] = [];
    const usage = {
      take: () => {
        const d = { sqsRequests: 3, writeUnits: 5, elapsedMs: 40 };
        taken.push(d);
        return d;
      },
      restart: () => undefined,
      batch: <T>(work: () => Promise<T>) => work(),
      addRequests: () => undefined,
    };
    const w = world(
      [ok, other],
      { queues: [{ name: 'urgent', priority: 90, visibilityTimeoutSeconds: 30, tracking: 'off' }] },
      { tracked: true, usage },
    );
    for (let i = 0; i < 25; i++) await w.send('urgent', encodeEnvelope({ task: i % 5 === 0 ? 'other' : 'ok', payload: {} }));
    await w.run();
    expect(w.stats.writes).toBe(3); // the queue's day and each task's, as without cost
    const day = utcDay(w.clock.now());
    const a = (await w.stats.get(taskStatsKey('ok'), day))?.cost ?? NO_COST;
    const b = (await w.stats.get(taskStatsKey('other'), day))?.cost ?? NO_COST;
    expect(taken.length).toBeGreaterThan(1);
    const whole = taken.reduce((n, d) => ({ s: n.s + d.sqsRequests, u: n.u + d.writeUnits }), { s: 0, u: 0 });
    expect(a.sqsRequests + b.sqsRequests).toBeCloseTo(whole.s, 9);
    expect(a.writeUnits + b.writeUnits).toBeCloseTo(whole.u, 9);
    // Each settled batch's requests go to its tasks by their share of its messages.
    expect(w.reports).toHaveLength(taken.length);
    const okShare = w.reports.reduce((n, r) => n + (3 * r.jobs.filter((j) => j.task === 'ok').length) / r.jobs.length, 0);
    expect(a.sqsRequests).toBeCloseTo(okShare, 9);
    expect(a.lambdaMbMs + b.lambdaMbMs).toBeCloseTo(taken.length * 40 * w.config.dispatcher.memoryMb, 6);
  });
});

function empty() {
  return { count: 0, sum: 0, sumSquares: 0, buckets: {} };
}

/** An SDK-like client: a middleware stack with the steps the meter uses, and `send` through it. */
function fakeClient() {
  const stack: Array<{ mw: (next: (a: unknown) => Promise<unknown>, ctx: { commandName: string }) => (a: unknown) => Promise<unknown> }> =
    [];
  return {
    middlewareStack: {
      add: (mw: never) => {
        stack.push({ mw });
      },
    },
    send: async (commandName: string, input: Record<string, unknown>, output: Record<string, unknown> = {}) => {
      let handler = async (_: unknown): Promise<unknown> => ({ output });
      for (const { mw } of [...stack].reverse()) handler = mw(handler, { commandName });
      return handler({ input });
    },
  };
}
