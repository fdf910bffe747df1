/**
 * Large payloads through the paths that keep a job's body for later: a job that waits for another,
 * a job that runs later (parked), and a job archived then replayed. Each keeps the pointer, not the
 * payload; the task sees the whole payload when it finally runs, and the object goes once it has
 * succeeded. On the world's fakes (the real invocation, in-memory SQS, jobs table and bucket).
 */
import { createHash } from 'node:crypto';
import { MemoryPayloadStore } from '../../lib/fakes/memory-payloads';
import { replayArchived } from '../../lib/operate/archive';
import type { TaskOptions } from '../../lib/tasks/task';
import { operatorContextOf, publisherOf, world } from '../helpers/world';

const BUCKET = 'test-v1-000000000000-us-east-1';
const rows = (kb: number) => ({ rows: Array.from({ length: kb }, (_, i) => `${i}:${'x'.repeat(1000)}`) });

function setup(tasks: TaskOptions[]) {
  const store = new MemoryPayloadStore();
  const w = world(tasks, {}, { tracked: true, payloads: { store, bucket: BUCKET } });
  const publisher = publisherOf(w, { recordQueued: false, payloads: { bucket: BUCKET, store } });
  return { w, publisher, store };
}

describe('large payloads in flows, parked jobs and replays', () => {
  const seen: Array<[string, number]> = [];
  let failing = true;
  const tasks: TaskOptions[] = [
    { name: 'first', queue: 'urgent', timeLimitSeconds: 5, run: () => 'done' },
    {
      name: 'import',
      queue: 'urgent',
      timeLimitSeconds: 5,
      maxRetries: 0,
      run: (p, ctx) => {
        seen.push([ctx.jobId, (p as { rows: unknown[] }).rows.length]);
        if (ctx.jobId === 'replayed' && failing) throw new Error('the importer is down');
        return (p as { rows: unknown[] }).rows.length;
      },
    },
  ];

  beforeEach(() => {
    seen.length = 0;
    failing = true;
  });

  it('a dependent with a 300 KB payload waits with its pointer and runs with the payload once its dependency has succeeded', async () => {
    const { w, publisher, store } = setup(tasks);
    await publisher.publish('first', {}, { id: 'first', queue: 'urgent', delaySeconds: 30 });
    await publisher.publish('import', rows(300), { id: 'waiting', queue: 'urgent', dependsOn: ['first'] });
    expect(store.objects.size).toBe(1);
    expect(await w.jobs.get('waiting')).toMatchObject({ state: 'waiting' });

    await w.run({ forMs: 120_000 });

    expect(seen).toEqual([['waiting', 300]]);
    expect(await w.jobs.get('waiting')).toMatchObject({ state: 'succeeded', result: '300' });
    expect(store.objects.size).toBe(0);
  });

  it('a 300 KB job due in two hours is parked with its pointer, and runs with the payload when due', async () => {
    const { w, publisher, store } = setup(tasks);
    await publisher.publish('import', rows(300), { id: 'later', queue: 'urgent', delaySeconds: 7200 });
    await w.run({ forMs: 60_000 });
    expect(await w.jobs.get('later')).toMatchObject({ state: 'scheduled' });
    expect(seen).toEqual([]);

    w.clock.advance(7200_000);
    await w.run({ forMs: 120_000 });

    expect(seen).toEqual([['later', 300]]);
    expect(store.objects.size).toBe(0);
  });

  it('an archived 300 KB job keeps its object; replayed from the archive it runs with the payload, and its object then goes', async () => {
    const { w, publisher, store } = setup(tasks);
    await publisher.publish('import', rows(300), { id: 'replayed', queue: 'urgent' });
    await w.run();
    expect(await w.jobs.get('replayed')).toMatchObject({ state: 'archived', reason: 'exhausted' });
    const text = JSON.stringify(rows(300));
    const key = `payloads/replayed/${createHash('sha256').update(text).digest('hex')}.json`;
    expect([...store.objects.keys()]).toEqual([`${BUCKET}/${key}`]);

    failing = false;
    const ctx = operatorContextOf(w);
    expect(await replayArchived(ctx, { task: 'import' } as never, 10)).toMatchObject({ replayed: 1 });
    await w.run();

    expect(seen).toEqual([
      ['replayed', 300],
      ['replayed', 300],
    ]);
    expect(await w.jobs.get('replayed')).toMatchObject({ state: 'succeeded', result: '300' });
    expect(store.objects.size).toBe(0);
  });
});
