import type { ControlStore } from '../../lib/track/operator-controls';

/** What dispatchers and operators rely on from the controls store; run on the fake and on dynalite. */
export function controlStoreConformance(label: string, setup: () => Promise<ControlStore>, teardown: () => Promise<void>): void {
  describe(`ControlStore conformance: ${label}`, () => {
    let store: ControlStore;
    beforeAll(async () => {
      store = await setup();
    });
    afterAll(teardown);

    it('reads no controls (revision 0) before any change', async () => {
      expect(await store.read()).toEqual({ revision: 0, queues: {}, pauses: {} });
    });

    it('pauses a queue once (the first pause keeps its time), resumes it, and counts every change in the revision', async () => {
      const paused = await store.change('urgent', { paused: true }, 1000);
      expect(paused).toEqual({ revision: 1, queues: { urgent: { pausedAt: 1000, updatedAt: 1000 } }, pauses: {} });
      const again = await store.change('urgent', { paused: true }, 2000);
      expect(again.queues.urgent?.pausedAt).toBe(1000);
      expect(again.revision).toBe(2);
      expect(await store.read()).toEqual(again);
      const resumed = await store.change('urgent', { paused: false }, 3000);
      expect(resumed).toEqual({ revision: 3, queues: {}, pauses: {} });
      expect(await store.read()).toEqual(resumed);
    });

    it('overrides priority and SLA per queue beside a pause, and a reset (null) returns each to the config', async () => {
      await store.change('routine', { priority: 95 }, 4000);
      await store.change('routine', { slaSeconds: 30 }, 4100);
      await store.change('urgent', { paused: true }, 4200);
      const both = await store.read();
      expect(both.queues).toEqual({
        routine: { priority: 95, slaSeconds: 30, updatedAt: 4100 },
        urgent: { pausedAt: 4200, updatedAt: 4200 },
      });
      const reset = await store.change('routine', { priority: null, slaSeconds: null }, 5000);
      expect(reset.queues).toEqual({ urgent: { pausedAt: 4200, updatedAt: 4200 } });
      expect(reset.revision).toBe(both.revision + 1);
    });

    it("rate-limit pauses: extended, never shortened, kept by an operator's change, pruned once ended, revision untouched", async () => {
      const before = await store.read();
      expect(await store.pause('task:send-email', 10_000, 1000)).toBe(10_000);
      // A shorter pause of the same scope (another dispatcher's, told less) leaves the longer one.
      expect(await store.pause('task:send-email', 8000, 1500)).toBe(10_000);
      expect(await store.pause('key:send-email:acct-1', 9000, 1500)).toBe(9000);
      expect((await store.read()).pauses).toEqual({ 'task:send-email': 10_000, 'key:send-email:acct-1': 9000 });
      expect(await store.pause('task:send-email', 12_000, 2000)).toBe(12_000);
      // An operator's change neither drops a pause nor is counted against one.
      const changed = await store.change('routine', { priority: 7 }, 2500);
      expect(changed.revision).toBe(before.revision + 1);
      expect((await store.read()).pauses).toEqual({ 'task:send-email': 12_000, 'key:send-email:acct-1': 9000 });
      // At 9,500 the key's pause has ended: the next pause prunes it, not the live one.
      await store.pause('queue:urgent', 20_000, 9500);
      const after = await store.read();
      expect(after.pauses).toEqual({ 'task:send-email': 12_000, 'queue:urgent': 20_000 });
      expect(after.revision).toBe(changed.revision);
      expect(after.queues.routine?.priority).toBe(7);
      await store.change('routine', { priority: null }, 2600);
    });

    it('loses no change when operators change at once', async () => {
      const before = (await store.read()).revision;
      await Promise.all([
        store.change('a', { priority: 1 }, 6000),
        store.change('b', { priority: 2 }, 6000),
        store.change('c', { paused: true }, 6000),
      ]);
      const after = await store.read();
      expect(after.revision).toBe(before + 3);
      expect(after.queues.a?.priority).toBe(1);
      expect(after.queues.b?.priority).toBe(2);
      expect(after.queues.c?.pausedAt).toBe(6000);
    });
  });
}

/** A version whose first control is a rate limit's pause: an operator's first change still lands, the pause kept. */
export function controlStorePauseFirstConformance(label: string, setup: () => Promise<ControlStore>, teardown: () => Promise<void>): void {
  describe(`ControlStore conformance, a pause before any change: ${label}`, () => {
    let store: ControlStore;
    beforeAll(async () => {
      store = await setup();
    });
    afterAll(teardown);

    it("an operator's first change lands on the item a pause created, revision 1, the pause kept", async () => {
      await store.pause('task:send-email', 50_000, 1000);
      expect(await store.read()).toEqual({ revision: 0, queues: {}, pauses: { 'task:send-email': 50_000 } });
      const changed = await store.change('urgent', { paused: true }, 2000);
      expect(changed).toEqual({
        revision: 1,
        queues: { urgent: { pausedAt: 2000, updatedAt: 2000 } },
        pauses: { 'task:send-email': 50_000 },
      });
      expect(await store.read()).toEqual(changed);
      expect((await store.change('urgent', { paused: false }, 3000)).revision).toBe(2);
    });
  });
}
