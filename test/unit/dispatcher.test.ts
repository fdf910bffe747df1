import { UnrecoverableError } from '../../lib/errors';
import { readArchiveRecord } from '../../lib/wire/archive-record';
import { encodeEnvelope } from '../../lib/wire/envelope';
import { type World, world } from '../helpers/world';

const ok = { name: 'ok', queue: 'urgent', timeLimitSeconds: 5, run: () => undefined };
const failing = {
  name: 'failing',
  queue: 'urgent',
  timeLimitSeconds: 5,
  maxRetries: 2,
  backoff: { baseSeconds: 10, capSeconds: 10 },
  run: () => Promise.reject(new Error('boom')),
};
const envelope = (task: string, payload: unknown = {}, extra: Record<string, unknown> = {}) => encodeEnvelope({ task, payload, ...extra });
const jobs = (w: World) => w.reports.flatMap((r) => r.jobs);
const archived = (w: World) => w.sqs.peek(w.urls.archive).map((m) => ({ body: m.body, record: readArchiveRecord(m.attributes) }));

describe('dispatcher loop (fakes)', () => {
  it('runs a task and deletes its message', async () => {
    const w = world([ok]);
    await w.send('urgent', envelope('ok', { n: 1 }, { appData: { tenant: 't1' } }));
    const summary = await w.run();
    expect(w.runs.map(({ ctx: _ctx, ...run }) => run)).toEqual([{ task: 'ok', payload: { n: 1 }, attempt: 1, appData: { tenant: 't1' } }]);
    expect(w.sqs.peek(w.urls.queues.urgent as string)).toHaveLength(0);
    expect(summary.queues.urgent?.succeeded).toBe(1);
  });

  it('retries a failure by visibility with backoff, then archives it as exhausted with the error and attempts', async () => {
    const w = world([failing]);
    await w.send('urgent', envelope('failing'));
    await w.run({ forMs: 120_000 });
    expect(w.runs.map((r) => r.attempt)).toEqual([1, 2, 3]);
    expect(jobs(w).map((j) => j.outcome)).toEqual(['retried', 'retried', 'archived']);
    const [entry] = archived(w);
    expect(entry?.record).toMatchObject({
      reason: 'exhausted',
      attempts: 3,
      errorType: 'Error',
      detail: 'boom',
      queue: 'urgent',
      task: 'failing',
      workerId: 'test-worker',
    });
    expect(entry?.body).toBe(envelope('failing'));
    expect(w.sqs.peek(w.urls.queues.urgent as string)).toHaveLength(0);
  });

  it('keeps a retried message invisible for its backoff delay', async () => {
    const w = world([{ ...failing, backoff: { baseSeconds: 20, capSeconds: 20 } }]);
    await w.send('urgent', envelope('failing'));
    await w.run({ forMs: 8_000 });
    const [message] = w.sqs.peek(w.urls.queues.urgent as string);
    expect(message?.receiveCount).toBe(1);
    const depth = await w.sqs.depth(w.urls.queues.urgent as string);
    expect(depth.inFlight + depth.visible).toBe(1);
  });

  it('archives an unrecoverable error at once', async () => {
    const w = world([{ ...failing, run: () => Promise.reject(new UnrecoverableError('card declined')) }]);
    await w.send('urgent', envelope('failing'));
    await w.run();
    expect(w.runs).toHaveLength(1);
    expect(archived(w)[0]?.record).toMatchObject({ reason: 'unrecoverable', errorType: 'UnrecoverableError', detail: 'card declined' });
  });

  it('archives malformed messages and unknown tasks with their reason while the rest of the batch runs', async () => {
    const w = world([ok]);
    await w.send('urgent', 'not json at all');
    await w.send('urgent', envelope('no-such-task'));
    await w.send('urgent', envelope('ok'));
    await w.run();
    expect(w.runs.map((r) => r.task)).toEqual(['ok']);
    const records = archived(w).map((a) => [a.record?.reason, a.record?.code ?? a.record?.task]);
    expect(records).toEqual(
      expect.arrayContaining([
        ['malformed', 'not-json'],
        ['unknown-task', 'no-such-task'],
      ]),
    );
    expect(w.sqs.peek(w.urls.queues.urgent as string)).toHaveLength(0);
  });

  it('retries a delete that partly failed, per entry, and loses nothing', async () => {
    const w = world([ok]);
    for (let i = 0; i < 5; i++) await w.send('urgent', envelope('ok', { i }));
    w.queues.inject({ operation: 'deleteBatch', failEntries: 2, code: 'InternalError' });
    await w.run();
    expect(w.runs).toHaveLength(5);
    expect(w.sqs.peek(w.urls.queues.urgent as string)).toHaveLength(0);
    expect(w.reports[0]?.settleRetries).toBe(2);
    expect(jobs(w).every((j) => !j.unsettled)).toBe(true);
  });

  it('does not delete a message whose archive send failed: it returns and is archived later', async () => {
    const w = world([{ ...failing, maxRetries: 0 }]);
    await w.send('urgent', envelope('failing'));
    w.queues.inject({ operation: 'sendBatch', failEntries: 1, code: 'InternalError', times: 4 });
    await w.run({ forMs: 200_000 });
    expect(jobs(w)[0]).toMatchObject({ outcome: 'archived', unsettled: true });
    expect(archived(w)).toHaveLength(1);
    expect(w.sqs.peek(w.urls.queues.urgent as string)).toHaveLength(0);
    expect(w.runs.length).toBeGreaterThanOrEqual(2);
  });

  it('keeps looping after a failed receive', async () => {
    const w = world([ok]);
    await w.send('urgent', envelope('ok'));
    w.queues.inject({ operation: 'receive', throws: 'ServiceUnavailable', times: 3 });
    const summary = await w.run();
    expect(summary.errors).toBe(3);
    expect(w.runs).toHaveLength(1);
  });

  it('receives no more than its free slots, and nothing a task could not finish in the time left', async () => {
    // One slot and 25.1 s usable: the first task needs 20.1 s and fits; it takes 15 s, so the next
    // two no longer fit: they are never received (a receive would take them only to hand them back).
    const slow = world(
      [
        {
          ...ok,
          timeLimitSeconds: 20,
          run: () => {
            slow.clock.advance(15_000);
          },
        },
      ],
      { dispatcher: { concurrency: 1, settleMarginMs: 500, killGraceMs: 100, timeoutSeconds: 60 } },
    );
    for (let i = 0; i < 3; i++) await slow.send('urgent', envelope('ok', { i }));
    await slow.run({ forMs: 25_600 });
    expect(jobs(slow).map((j) => j.outcome)).toEqual(['succeeded']);
    const left = slow.sqs.peek(slow.urls.queues.urgent as string);
    expect(left.map((m) => m.receiveCount)).toEqual([0, 0]);
  });

  it('does not receive from a queue whose tasks cannot fit the time left', async () => {
    const w = world([{ ...ok, timeLimitSeconds: 20 }]);
    await w.send('urgent', envelope('ok'));
    const summary = await w.run({ forMs: 10_000 });
    expect(summary.queues.urgent).toBeUndefined();
    expect(w.sqs.peek(w.urls.queues.urgent as string)[0]?.receiveCount).toBe(0);
  });

  it('runs the tasks of a batch concurrently up to the limit', async () => {
    let inFlight = 0;
    let peak = 0;
    const w = world([
      {
        ...ok,
        run: async () => {
          inFlight += 1;
          peak = Math.max(peak, inFlight);
          await new Promise((resolve) => setTimeout(resolve, 20));
          inFlight -= 1;
        },
      },
    ]);
    for (let i = 0; i < 10; i++) await w.send('urgent', envelope('ok', { i }));
    await w.run();
    expect(w.runs).toHaveLength(10);
    expect(peak).toBe(w.config.dispatcher.concurrency);
  });

  it('stops at the signal: the running task finishes, and nothing more is received', async () => {
    const stop = new AbortController();
    const w = world([{ ...ok, run: () => stop.abort() }], {
      dispatcher: { concurrency: 1, settleMarginMs: 500, killGraceMs: 100, timeoutSeconds: 60 },
    });
    for (let i = 0; i < 3; i++) await w.send('urgent', envelope('ok', { i }));
    await w.run({ signal: stop.signal });
    expect(jobs(w).map((j) => j.outcome)).toEqual(['succeeded']);
    expect(w.sqs.peek(w.urls.queues.urgent as string).map((m) => m.receiveCount)).toEqual([0, 0]);
  });
});
