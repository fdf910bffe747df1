/**
 * The local Lambda service's containers (lib/local/containers.ts): a busy container is never handed
 * another invocation; a new one starts instead, up to the function's concurrency; one started that
 * way is let go once it has idled, down to the ones started up front.
 */
import { type Container, ContainerPool } from '../../lib/local/containers';

interface FakeContainer extends Container {
  readonly fn: string;
  readonly invoked: unknown[];
  connected: boolean;
}

function setup({ concurrency = 2, warm = 1, idleMs = 1000 } = {}) {
  const started: FakeContainer[] = [];
  const retired: FakeContainer[] = [];
  const pool: ContainerPool<FakeContainer> = new ContainerPool<FakeContainer>({
    start: (fn) => {
      const container: FakeContainer = { fn, invoked: [], connected: true, send: (m) => container.invoked.push(m.event) };
      started.push(container);
      pool.add(container, fn);
      return container;
    },
    concurrency: () => concurrency,
    warm: () => warm,
    retire: (c) => retired.push(c),
    idleMs,
  });
  const upFront: FakeContainer = { fn: 'doorbell-urgent', invoked: [], connected: true, send: (m) => upFront.invoked.push(m.event) };
  pool.add(upFront, 'doorbell-urgent');
  return { pool, upFront, started, retired };
}

afterEach(() => jest.useRealTimers());

describe('the local containers of a function', () => {
  it('start a new container for an invocation while the one there is busy, and refuse one past the concurrency', async () => {
    const { pool, upFront, started } = setup({ concurrency: 2 });

    const slow = pool.invoke('doorbell-urgent', 'slow batch', 30);
    const quick = pool.invoke('doorbell-urgent', 'quick batch', 30);
    const third = pool.invoke('doorbell-urgent', 'third batch', 30);

    expect(upFront.invoked).toEqual(['slow batch']);
    expect(started.map((c) => c.invoked)).toEqual([['quick batch']]);
    expect(third).toBeUndefined();
    pool.finished(started[0] as FakeContainer, { result: 'quick done' });
    await expect(quick).resolves.toEqual({ result: 'quick done' });
    // The quick one's container is free again: the next invocation takes it, no third container.
    pool.invoke('doorbell-urgent', 'next batch', 30);
    expect(started.map((c) => c.invoked)).toEqual([['quick batch', 'next batch']]);
    expect(pool.containerCounts()).toEqual({ 'doorbell-urgent': 2 });
    expect(pool.invocationCounts()).toEqual({ 'doorbell-urgent': 3 });
    pool.finished(upFront, { result: 'slow done' });
    await expect(slow).resolves.toEqual({ result: 'slow done' });
  });

  it('let a container started on demand go once it has idled, and keep the ones started up front', () => {
    jest.useFakeTimers();
    const { pool, upFront, started, retired } = setup({ warm: 1, idleMs: 1000 });
    pool.invoke('doorbell-urgent', 'a', 30);
    pool.invoke('doorbell-urgent', 'b', 30);
    pool.finished(upFront, {});
    pool.finished(started[0] as FakeContainer, {});

    jest.advanceTimersByTime(999);
    expect(retired).toEqual([]);
    jest.advanceTimersByTime(1);

    // Both idled; one is let go, the function keeps its one warm container.
    expect(retired).toHaveLength(1);
    expect(pool.containerCounts()).toEqual({ 'doorbell-urgent': 1 });
  });

  it('keep a container that is invoked again before its idle time is up', () => {
    jest.useFakeTimers();
    const { pool, upFront, started, retired } = setup({ warm: 1, idleMs: 1000 });
    pool.invoke('doorbell-urgent', 'a', 30);
    pool.invoke('doorbell-urgent', 'b', 30);
    pool.finished(started[0] as FakeContainer, {});
    jest.advanceTimersByTime(500);
    pool.invoke('doorbell-urgent', 'c', 30);
    jest.advanceTimersByTime(5000);

    expect(retired).toEqual([]);
    expect(started[0]?.invoked).toEqual(['b', 'c']);
    pool.finished(upFront, {});
    pool.finished(started[0] as FakeContainer, {});
  });

  it('fail the invocation of a container that exits, and start none while stopping', async () => {
    const { pool, upFront, started } = setup();
    const running = pool.invoke('doorbell-urgent', 'a', 30);
    pool.exited(upFront);
    await expect(running).resolves.toEqual({ error: 'the container exited' });

    pool.stopping();
    expect(pool.invoke('doorbell-urgent', 'b', 30)).toBeUndefined();
    expect(started).toEqual([]);
  });
});
