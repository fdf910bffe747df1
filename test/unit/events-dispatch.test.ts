import { MemoryPayloadStore } from '../../lib/fakes/memory-payloads';
import { utcDay } from '../../lib/policy/stat-sums';
import type { TaskOptions } from '../../lib/tasks/task';
import { readArchiveRecord } from '../../lib/wire/archive-record';
import { encodeEventEnvelope, subscriberJobId } from '../../lib/wire/event';
import { world } from '../helpers/world';

const base = { queue: 'urgent', timeLimitSeconds: 5 } as const;
const receipt: TaskOptions = { ...base, name: 'send-receipt', on: 'orders.created', run: () => 'sent' };
const ledger: TaskOptions = { ...base, name: 'post-ledger', on: ['orders.created', 'orders.refunded'], run: () => 'posted' };
const flaky: TaskOptions = {
  ...base,
  name: 'flaky-sub',
  on: 'orders.created',
  maxRetries: 1,
  backoff: { baseSeconds: 1, capSeconds: 1 },
  run: () => {
    throw new Error('always down');
  },
};
const config = { events: [{ name: 'orders.created' }, { name: 'orders.refunded' }] };
const created = (id: string, payload: unknown = { order: id }) =>
  encodeEventEnvelope({ event: 'orders.created', id, source: 'test', emittedAt: 1_700_000_000_000, payload });

describe('events on the dispatcher (fakes)', () => {
  it('an event with one subscriber on its queue runs as that subscriber’s job, named <event id>/<task>, with ctx.event', async () => {
    const w = world([receipt], config, { tracked: true });
    await w.send('urgent', created('e-1'));
    await w.run();
    expect(w.runs.map((r) => r.task)).toEqual(['send-receipt']);
    expect(w.runs[0]?.payload).toEqual({ order: 'e-1' });
    expect(w.runs[0]?.ctx.event).toEqual({ id: 'e-1', name: 'orders.created', source: 'test', emittedAt: 1_700_000_000_000 });
    expect(await w.jobs.get('e-1/send-receipt')).toMatchObject({
      state: 'succeeded',
      task: 'send-receipt',
      event: { id: 'e-1', name: 'orders.created' },
    });
    expect(w.sqs.peek(w.urls.queues.urgent as string)).toHaveLength(0);
  });

  it('several subscribers on one queue: the event is split into one job each, and a failing one is archived alone', async () => {
    const w = world([receipt, ledger, flaky], config, { tracked: true });
    await w.send('urgent', created('e-2'));
    await w.run({ forMs: 60_000 });
    expect((await w.jobs.get(subscriberJobId('e-2', 'send-receipt')))?.state).toBe('succeeded');
    expect((await w.jobs.get(subscriberJobId('e-2', 'post-ledger')))?.state).toBe('succeeded');
    expect(await w.jobs.get(subscriberJobId('e-2', 'flaky-sub'))).toMatchObject({ state: 'archived', attempt: 2 });
    const archived = w.sqs.peek(w.urls.archive);
    expect(archived).toHaveLength(1);
    // The archive holds that subscriber's own job: a replay runs it alone.
    expect(JSON.parse(archived[0]?.body ?? '{}')).toMatchObject({ task: 'flaky-sub', id: 'e-2/flaky-sub', event: { id: 'e-2' } });
    expect(w.reports.flatMap((r) => r.jobs).filter((j) => j.outcome === 'split')).toHaveLength(1);
    const day = await w.stats.get('urgent', utcDay(w.clock.now()));
    expect(day?.counters).toMatchObject({ split: 1, succeeded: 2 });
  });

  it('the same event id delivered again runs no subscriber twice', async () => {
    const w = world([receipt, ledger], config, { tracked: true });
    await w.send('urgent', created('e-3'));
    await w.run();
    await w.send('urgent', created('e-3'));
    await w.run();
    expect(w.runs.map((r) => r.task).sort()).toEqual(['post-ledger', 'send-receipt']);
    expect(w.sqs.peek(w.urls.queues.urgent as string)).toHaveLength(0);
  });

  it('an event nobody on the queue takes, and a malformed event, are archived with the reason, never run or dropped', async () => {
    const w = world(
      [receipt],
      {
        ...config,
        queues: [
          { name: 'urgent', priority: 90 },
          { name: 'routine', priority: 1 },
        ],
      },
      { tracked: true },
    );
    await w.send('routine', created('e-4'));
    await w.send('urgent', JSON.stringify({ event: 'Orders Created!', payload: {} }));
    await w.send('urgent', JSON.stringify({ task: 'send-receipt', event: 'orders.created', payload: {} }));
    await w.run();
    expect(w.runs).toHaveLength(0);
    const records = w.sqs.peek(w.urls.archive).map((m) => readArchiveRecord(m.attributes));
    expect(records.map((r) => r?.reason).sort()).toEqual(['malformed', 'malformed', 'no-subscriber']);
    expect(records.map((r) => r?.detail)).toContainEqual(expect.stringContaining('a body names a task or an event, not both'));
  });

  describe('events whose payload is a claim check', () => {
    const OWN = 'test-v1-000000000000-us-east-1';
    const EMITTER = 'shop-v3-000000000000-us-east-1';
    const pointed = (id: string, payloadRef: unknown) =>
      JSON.stringify({ v: 1, event: 'orders.created', id, source: 'shop', emittedAt: 1_700_000_000_000, payloadRef });

    it('reads a subscribed app’s bucket under payloads/events/ only; a pointer anywhere else is archived once, before any split', async () => {
      const store = new MemoryPayloadStore();
      const text = JSON.stringify({ order: 'big' });
      await store.put(EMITTER, 'payloads/events/e-9/x.json', text, '');
      await store.put(EMITTER, 'payloads/secret/x.json', text, '');
      const w = world([receipt, ledger], config, { tracked: true, payloads: { store, bucket: OWN, eventBuckets: [EMITTER] } });
      const bytes = Buffer.byteLength(text);
      await w.send('urgent', pointed('e-9', { bucket: EMITTER, key: 'payloads/events/e-9/x.json', bytes }));
      await w.send('urgent', pointed('e-10', { bucket: EMITTER, key: 'payloads/secret/x.json', bytes }));
      await w.send('urgent', pointed('e-11', { bucket: 'someone-elses-bucket', key: 'payloads/events/e-11/x.json', bytes }));
      await w.run({ forMs: 60_000 });

      expect(w.runs.map((r) => [r.task, r.payload]).sort()).toEqual([
        ['post-ledger', { order: 'big' }],
        ['send-receipt', { order: 'big' }],
      ]);
      const archived = w.sqs.peek(w.urls.archive).map((m) => readArchiveRecord(m.attributes));
      expect(archived.map((r) => [r?.reason, r?.detail]).sort()).toEqual([
        ['bad-payload-ref', expect.stringMatching(/bucket "someone-elses-bucket"; this version reads only "test-v1-/)],
        ['bad-payload-ref', expect.stringMatching(/key "payloads\/secret\/x.json" in the bucket of an app this one subscribes to/)],
      ]);
      expect(store.calls.delete).toBe(0);
    });
  });
});
