import type { TaskOptions } from '../../lib/tasks/task';
import { utcDay } from '../../lib/track/stats';
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
});
