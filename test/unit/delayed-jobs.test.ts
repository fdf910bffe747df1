/** Issue 25: a job published to run later exists from its publish — listed, shown and cancellable — whatever its delay. */
import { defineTask } from 'taskworker';
import { createTestSystem } from 'taskworker/testing';

const runs: string[] = [];
const charge = defineTask({
  name: 'charge-card',
  queue: 'default',
  timeLimitSeconds: 5,
  run: (p: { order: string }) => {
    runs.push(p.order);
    return 'charged';
  },
});

beforeEach(() => {
  runs.length = 0;
});

describe('a job published to run later', () => {
  it('a 10-minute-delayed job is visible and cancellable: scheduled with its due time, cancelled, its message deleted unrun', async () => {
    const system = createTestSystem({ tasks: [charge] });
    const published = await system.publish(charge, { order: 'later-1' }, { id: 'later-1', delaySeconds: 600 });
    const dueAt = system.clock.now() + 600_000;
    expect(published.runAt).toBe(dueAt);
    expect(await system.job('later-1')).toMatchObject({ state: 'scheduled', runAt: dueAt, announced: true, task: 'charge-card' });

    expect(await system.publisher.cancel('later-1')).toMatchObject({ outcome: 'cancelled', record: { state: 'cancelled' } });
    const drained = await system.drain({ maxMs: 3_600_000 });
    expect(runs).toEqual([]);
    expect(drained.succeeded).toBe(0);
    expect(drained.elapsedMs).toBeGreaterThanOrEqual(600_000);
    expect(await system.job('later-1')).toMatchObject({ state: 'cancelled', attempt: 0 });
  });

  it('runs when due, from the record written at publish', async () => {
    const system = createTestSystem({ tasks: [charge] });
    await system.publish(charge, { order: 'soon' }, { id: 'soon', delaySeconds: 120 });
    expect(await system.job('soon')).toMatchObject({ state: 'scheduled' });
    await system.drain({ maxMs: 3_600_000 });
    expect(runs).toEqual(['soon']);
    expect(await system.job('soon')).toMatchObject({ state: 'succeeded', attempt: 1 });
  });

  it('farther than 15 minutes: recorded at publish, parked with its body by the dispatcher, run when due', async () => {
    const system = createTestSystem({ tasks: [charge] });
    await system.publish(charge, { order: 'tomorrow' }, { id: 'tomorrow', delaySeconds: 86_400 });
    expect(await system.job('tomorrow')).toMatchObject({ state: 'scheduled', announced: true });
    await system.drain({ maxMs: 60_000 });
    const parked = await system.job('tomorrow');
    expect(parked).toMatchObject({ state: 'scheduled' });
    expect(parked?.announced).toBeUndefined();
    await system.drain({ maxMs: 2 * 86_400_000 });
    expect(runs).toEqual(['tomorrow']);
  });

  it('farther than 15 minutes, cancelled before any dispatcher saw it: never parked, never run', async () => {
    const system = createTestSystem({ tasks: [charge] });
    await system.publish(charge, { order: 'never' }, { id: 'never', delaySeconds: 86_400 });
    await system.publisher.cancel('never');
    await system.drain({ maxMs: 2 * 86_400_000 });
    expect(runs).toEqual([]);
    expect(await system.job('never')).toMatchObject({ state: 'cancelled' });
  });

  it('an immediate publish writes no scheduled record', async () => {
    const system = createTestSystem({ tasks: [charge] });
    await system.publish(charge, { order: 'now' }, { id: 'now' });
    expect((await system.job('now'))?.state).toBe('queued');
  });
});
