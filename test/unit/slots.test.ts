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
    await expect(slots.run(() => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(slots.free).toBe(1);
  });

  it('reserves places for a batch just received: spoken for until each message takes its slot or gives its place up', async () => {
    const slots = new TaskSlots(4, () => 0);
    const held = await slots.acquire();
    const reservation = slots.reserve(10); // a batch of 10 for 3 free slots: all 10 are spoken for
    expect(slots.free).toBe(0);
    expect(slots.hasRoom).toBe(false);
    const tickets = [reservation.ticket(), reservation.ticket(), reservation.ticket(), reservation.ticket()];
    // The rest were parked, say: their places go back, and the tickets stand.
    reservation.release();
    reservation.release(); // a second release gives back nothing more
    expect(reservation.ticket()).toBeUndefined();
    expect(slots.free).toBe(0);
    // A ticket holds no slot while its claim is made: the first three take theirs at once, the fourth waits.
    const leases = await Promise.all(tickets.slice(0, 3).map((t) => t?.take()));
    expect(slots.free).toBe(0);
    const fourth = tickets[3]?.take();
    expect(slots.waiting).toBe(1);
    await expect(tickets[0]?.take()).rejects.toThrow('taken once');
    tickets[0]?.drop(); // nothing once taken
    held.release();
    const granted = await fourth;
    for (const lease of [granted, ...leases]) lease?.release();
    expect(slots.free).toBe(4);
  });

  it('gives a dropped ticket’s place back, and tells the watchers', async () => {
    const slots = new TaskSlots(1, () => 0);
    const ticket = slots.reserve(1).ticket();
    expect(slots.hasRoom).toBe(false);
    const watched = slots.released();
    ticket?.drop();
    ticket?.drop();
    await watched;
    expect(slots.free).toBe(1);
  });

  it('counts a ticket’s time as busy, as a held slot’s', async () => {
    let now = 0;
    const slots = new TaskSlots(2, () => now);
    const ticket = slots.reserve(1).ticket();
    now = 30;
    expect(slots.busyMs(now)).toBe(30);
    const lease = await ticket?.take();
    now = 50;
    lease?.release();
    expect(slots.busyMs(now)).toBe(50);
  });

  it('counts as startable soon the free slots and the held ones expected to end within the horizon, less who waits', async () => {
    const now = 1_000;
    const slots = new TaskSlots(4, () => now);
    const short = await slots.acquire();
    const long = await slots.acquire();
    const unknown = await slots.acquire();
    short.expectsEnd(now + 200);
    long.expectsEnd(now + 5_000);
    // One free, one ending in 200 ms; the long one and the one with no estimate yet keep theirs.
    expect(slots.startableWithin(500, now)).toBe(2);
    expect(slots.startableWithin(10_000, now)).toBe(3);
    const waiting = slots.acquire();
    await Promise.resolve();
    expect(slots.startableWithin(500, now)).toBe(1);
    // A message received and claiming counts as one who waits.
    const ticket = slots.reserve(1).ticket();
    expect(slots.startableWithin(500, now)).toBe(0);
    ticket?.drop();
    for (const lease of [short, long, unknown, await waiting]) lease.release();
  });

  it('counts as many starts per slot as its expected run time fits in the horizon, one a slot free later', async () => {
    const now = 1_000;
    const slots = new TaskSlots(3, () => now);
    const ending = await slots.acquire();
    const long = await slots.acquire();
    ending.expectsEnd(now + 200);
    long.expectsEnd(now + 8_000);
    // 50 ms runs: the free slot starts 1 + 10 in 500 ms, the one ending at 200 ms 1 + 6, the long one none.
    expect(slots.startableWithin(500, now, 50)).toBe(11 + 7);
    // 8 s runs: one a slot free by then.
    expect(slots.startableWithin(500, now, 8_000)).toBe(2);
    // A run of 0 ms counts one a millisecond, not without end.
    expect(slots.startableWithin(500, now, 0)).toBe(501 + 301);
    ending.release();
    long.release();
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
