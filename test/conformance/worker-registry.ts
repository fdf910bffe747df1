import type { WorkerItem, WorkerRegistry } from '../../lib/track/worker-registry';

const item = (over: Partial<WorkerItem> = {}): WorkerItem => ({
  id: 'host-1@1000',
  workerId: 'host-1',
  role: 'scheduled',
  place: { function: 'app-v1-dispatcher', requestId: 'req-1', container: 'local/11' },
  startedAt: 1000,
  deadline: 901_000,
  heardAt: 1000,
  jobs: [],
  held: 0,
  ...over,
});

/** What the dispatcher's presence and the workers view rely on from the registry; run on the fake and on dynalite. */
export function workerRegistryConformance(label: string, setup: () => Promise<WorkerRegistry>, teardown: () => Promise<void>): void {
  describe(`WorkerRegistry conformance: ${label}`, () => {
    let registry: WorkerRegistry;
    beforeAll(async () => {
      registry = await setup();
    });
    afterAll(teardown);

    it('lists nothing before any invocation worked', async () => {
      expect(await registry.list()).toEqual([]);
    });

    it('keeps the latest beat of each invocation whole: place, deadline, held jobs and weights', async () => {
      await registry.beat(item());
      await registry.beat(item({ id: 'host-2@2000', workerId: 'host-2', role: 'doorbell', startedAt: 2000, heardAt: 2000 }));
      const beat = item({ heardAt: 16_000, jobs: ['job-a', 'job-b'], held: 2, weights: { urgent: 0.75, routine: 0.25 } });
      await registry.beat(beat);
      const listed = await registry.list();
      expect(listed).toHaveLength(2);
      expect(listed.find((w) => w.id === 'host-1@1000')).toEqual(beat);
      expect(listed.find((w) => w.id === 'host-2@2000')?.role).toBe('doorbell');
    });

    it('marks an ended invocation ended with no jobs, and a late beat does not bring it back', async () => {
      await registry.end('host-1@1000', 20_000);
      await registry.beat(item({ heardAt: 21_000, jobs: ['job-c'], held: 1 }));
      const ended = (await registry.list()).find((w) => w.id === 'host-1@1000');
      expect(ended).toMatchObject({ endedAt: 20_000, heardAt: 20_000, jobs: [], held: 0, workerId: 'host-1' });
    });

    it('ignores the end of an invocation that never beat', async () => {
      await registry.end('never@1', 30_000);
      expect((await registry.list()).map((w) => w.id).sort()).toEqual(['host-1@1000', 'host-2@2000']);
    });
  });
}
