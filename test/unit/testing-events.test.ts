import type { MemoryPayloadStore } from '../../lib/fakes/memory-payloads';
import { defineTask } from '../../lib/tasks/task';
import { createTestSystem } from '../../lib/testing';

/** The test kit runs events as the deployed system does: each subscriber once, on its own queue, with its own retries. */
describe('createTestSystem: events', () => {
  const confirm = defineTask({
    name: 'confirm',
    queue: 'fast',
    timeLimitSeconds: 5,
    on: 'orders.placed',
    run: (order: { id: string }, ctx) => `${ctx.event?.name} ${order.id}`,
  });
  const points = defineTask({
    name: 'points',
    queue: 'slow',
    timeLimitSeconds: 5,
    maxRetries: 1,
    on: ['orders.placed', 'orders.refunded'],
    run: (order: { id: string }, ctx) => {
      if (ctx.attempt === 1) throw new Error('loyalty service busy');
      return order.id;
    },
  });

  it('one emit runs each subscriber once as <event id>/<task>; a retry is that subscriber’s alone', async () => {
    const system = createTestSystem({ tasks: [confirm, points] });
    const emitted = await system.emit('orders.placed', { id: 'o-1' }, { id: 'placed-o-1' });
    expect(emitted.eventId).toBe('placed-o-1');
    const drained = await system.drain();
    expect(drained).toMatchObject({ succeeded: 2, retried: 1 });
    expect(await system.job('placed-o-1/confirm')).toMatchObject({
      state: 'succeeded',
      attempt: 1,
      result: JSON.stringify('orders.placed o-1'),
      event: { id: 'placed-o-1', name: 'orders.placed', source: 'test' },
    });
    expect(await system.job('placed-o-1/points')).toMatchObject({ state: 'succeeded', attempt: 2 });
    // The same event id again: no subscriber runs twice.
    await system.emit('orders.placed', { id: 'o-1' }, { id: 'placed-o-1' });
    expect(await system.drain()).toMatchObject({ succeeded: 0, duplicates: 2 });
  });

  it('an event only one task takes reaches only that task’s queue; an undeclared one is refused', async () => {
    const system = createTestSystem({ tasks: [confirm, points] });
    await system.emit('orders.refunded', { id: 'o-2' }, { id: 'refunded-o-2' });
    await system.drain();
    expect(await system.job('refunded-o-2/confirm')).toBeUndefined();
    expect(await system.job('refunded-o-2/points')).toMatchObject({ state: 'succeeded' });
    await expect(system.emit('orders.lost', {})).rejects.toThrow(/Unknown event "orders.lost"/);
  });

  it('an event over SNS’s 256 KiB goes through the bucket: every subscriber runs with the whole payload, and no job deletes the shared object', async () => {
    const seen: Array<[string, number]> = [];
    const measure = (name: string, queue: string) =>
      defineTask({
        name,
        queue,
        timeLimitSeconds: 5,
        on: 'orders.placed',
        run: (order: { id: string; lines: string[] }) => {
          seen.push([name, order.lines.length]);
          return order.id;
        },
      });
    // Two subscribers on one queue (the event is split into a job each) and one on another.
    const system = createTestSystem({ tasks: [measure('pack', 'fast'), measure('invoice', 'fast'), measure('audit', 'slow')] });
    const lines = Array.from({ length: 400 }, (_, i) => `${i}:${'l'.repeat(1000)}`);
    await system.emit('orders.placed', { id: 'o-big', lines }, { id: 'placed-big' });
    expect(await system.drain()).toMatchObject({ succeeded: 3, archived: {} });
    expect(seen.sort()).toEqual([
      ['audit', 400],
      ['invoice', 400],
      ['pack', 400],
    ]);
    for (const task of ['pack', 'invoice', 'audit']) expect(await system.job(`placed-big/${task}`)).toMatchObject({ state: 'succeeded' });
    const store = (system.publisher as unknown as { payloadStore: MemoryPayloadStore }).payloadStore;
    expect([...store.objects.keys()]).toEqual([
      expect.stringMatching(/^test-test-payloads\/payloads\/events\/placed-big\/[0-9a-f]{64}\.json$/),
    ]);
    expect(store.calls.delete).toBe(0);
  });

  it('an event whose appData alone is over 256 KiB is refused at emit, and its large payload is not put', async () => {
    const system = createTestSystem({ tasks: [confirm, points] });
    const emitting = system.emit('orders.placed', { id: 'o-x', lines: 'l'.repeat(300_000) }, { appData: { note: 'a'.repeat(270_000) } });
    await expect(emitting).rejects.toThrow(/Message for event "orders.placed" is 2\d{5} bytes; the limit is 262144 bytes/);
    const store = (system.publisher as unknown as { payloadStore?: MemoryPayloadStore }).payloadStore;
    expect(store?.calls.put ?? 0).toBe(0);
    expect(await system.drain()).toMatchObject({ succeeded: 0 });
  });

  it('an event over 10 MiB is refused at emit, naming its size, and nothing is put or sent', async () => {
    const system = createTestSystem({ tasks: [confirm, points] });
    const huge = { id: 'o-huge', blob: 'h'.repeat(10 * 1024 * 1024) };
    await expect(system.emit('orders.placed', huge)).rejects.toThrow(
      /Message for event "orders.placed" is 10485\d+ bytes; the limit is 10485760 bytes/,
    );
    expect(await system.drain()).toMatchObject({ succeeded: 0 });
  });
});
