import { defineTask } from '../../lib/tasks/task';
import { createTestSystem } from '../../lib/testing';

it('a wait for an event: one not matching its order passes over it; two matching resume it once, with the first; another times out with null', async () => {
  const task = defineTask<{ order: string }, unknown>({
    name: 'pay-wait',
    queue: 'default',
    timeLimitSeconds: 10,
    waitsFor: [{ event: 'payment.confirmed', match: 'order' }],
    async run(_p, ctx) {
      const e = await ctx.step.waitForEvent('paid', { event: 'payment.confirmed', timeout: '1h' });
      return e;
    },
  });
  const system = createTestSystem({
    tasks: [task],
    config: {
      app: 'test',
      queues: [{ name: 'default', priority: 1, visibilityTimeoutSeconds: 60 }],
      dispatcher: { timeoutSeconds: 900, killGraceMs: 100 },
      events: [{ name: 'payment.confirmed' }],
    },
  });
  const a = await system.publish(task, { order: 'o-1' });
  const b = await system.publish(task, { order: 'o-2' });
  await system.drain();
  expect((await system.job(a.jobId))?.state).toBe('waiting-event');
  await system.emit('payment.confirmed', { order: 'o-9' });
  await system.drain();
  expect((await system.job(a.jobId))?.state).toBe('waiting-event');
  await system.emit('payment.confirmed', { order: 'o-1', amount: 5 });
  await system.emit('payment.confirmed', { order: 'o-1', amount: 6 });
  await system.drain();
  const ra = await system.job(a.jobId);
  expect(ra?.state).toBe('succeeded');
  expect(JSON.parse(ra?.result ?? 'null')).toMatchObject({ name: 'payment.confirmed', payload: { order: 'o-1', amount: 5 } });
  expect(ra?.history.filter((h) => h.what === 'event-received')).toHaveLength(1);
  expect((await system.job(b.jobId))?.state).toBe('waiting-event');
  system.clock.advance(3_600_000);
  await system.drain();
  expect(await system.job(b.jobId)).toMatchObject({ state: 'succeeded', result: 'null' });
});
