import { TaskSlots } from '../../lib/dispatch/slots';

describe('TaskSlots', () => {
  it('grants at most `size` slots and serves waiters in arrival order', async () => {
    const slots = new TaskSlots(2, () => 0);
    const order: string[] = [];
    const a = await slots.acquire();
    const b = await slots.acquire();
    expect(slots.free).toBe(0);
    const waiting = ['c', 'd', 'e'].map((name) =>
      slots.acquire().then((lease) => {
        order.push(name);
        return lease;
      }),
    );
    expect(slots.waiting).toBe(3);
    expect(slots.hasRoom).toBe(false);
    a.release();
    a.release(); // a second release of the same lease frees nothing more
    b.release();
    const [c, d] = await Promise.all(waiting.slice(0, 2));
    expect(order).toEqual(['c', 'd']);
    expect(slots.waiting).toBe(1);
    c?.release();
    d?.release();
    (await waiting[2])?.release();
    expect(order).toEqual(['c', 'd', 'e']);
    expect(slots.free).toBe(2);
    expect(slots.hasRoom).toBe(true);
  });

  it('releases the slot however the work ends', async () => {
    const slots = new TaskSlots(1);
    await expect(slots.run(1000, () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(slots.free).toBe(1);
  });

  it('knows when slots will be free at the latest, from the holders’ hard ends', async () => {
    let now = 1000;
    const slots = new TaskSlots(3, () => now);
    const long = await slots.acquire(60_000);
    const short = await slots.acquire(5_000);
    expect(slots.freeBy(1, now)).toBe(now); // one is free
    expect(slots.freeBy(2, now)).toBe(6_000); // the short holder ends first
    expect(slots.freeBy(3, now)).toBe(61_000);
    expect(slots.freeBy(4, now)).toBe(Number.POSITIVE_INFINITY);
    short.endsBy(2_000);
    expect(slots.freeBy(2, now)).toBe(2_000);
    now = 3_000;
    expect(slots.freeBy(2, now)).toBe(3_000); // an overdue holder frees its slot "now" at the latest
    long.release();
    short.release();
    expect(slots.freeBy(3, now)).toBe(now);
  });

  it('tells watchers about each release', async () => {
    const slots = new TaskSlots(1);
    const lease = await slots.acquire();
    let seen = false;
    const watched = slots.released().then(() => {
      seen = true;
    });
    expect(seen).toBe(false);
    lease.release();
    await watched;
    expect(seen).toBe(true);
  });

  it('rejects a size that is not a positive integer', () => {
    expect(() => new TaskSlots(0)).toThrow(RangeError);
    expect(() => new TaskSlots(1.5)).toThrow(RangeError);
  });
});
