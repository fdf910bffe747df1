/**
 * A failed dependency replayed from the archive brings back the dependents its failure archived: on
 * the world's fakes (the real invocation, in-memory SQS and jobs table), with the operator's replay.
 */
import { replayArchived } from '../../lib/operate/archive';
import { operatorContextOf, publisherOf, world } from '../helpers/world';

describe('replaying a failed dependency', () => {
  it('puts the dependents its failure archived back to waiting, transitively, and they run once it succeeds', async () => {
    let gateFails = true;
    const w = world(
      [
        {
          name: 'gate',
          queue: 'urgent',
          timeLimitSeconds: 5,
          maxRetries: 0,
          run: () => {
            if (gateFails) throw new Error('the gate is shut');
            return 'open';
          },
        },
        { name: 'after', queue: 'urgent', timeLimitSeconds: 5, run: (_p: unknown, ctx) => ctx.dependencies.map((d) => d.result) },
        {
          name: 'other',
          queue: 'urgent',
          timeLimitSeconds: 5,
          maxRetries: 0,
          run: () => {
            throw new Error('always');
          },
        },
      ],
      {},
      { tracked: true },
    );
    const publisher = publisherOf(w, { recordQueued: false });
    await publisher.publish('gate', {}, { id: 'gate', queue: 'urgent' });
    await publisher.publish('other', {}, { id: 'other', queue: 'urgent' });
    await publisher.publish('after', {}, { id: 'after', queue: 'urgent', dependsOn: ['gate'] });
    await publisher.publish('after', {}, { id: 'after-after', queue: 'urgent', dependsOn: ['after'] });
    await publisher.publish('after', {}, { id: 'both', queue: 'urgent', dependsOn: ['gate', 'other'] });
    await w.run();
    for (const id of ['after', 'after-after', 'both'])
      expect(await w.jobs.get(id)).toMatchObject({ state: 'archived', reason: 'dependency-failed' });

    gateFails = false;
    const ctx = operatorContextOf(w);
    expect(await replayArchived(ctx, { reason: 'exhausted', task: 'gate' } as never, 10)).toMatchObject({ replayed: 1 });
    // Back to waiting before the gate runs again; `both` stays archived: its other dependency failed too.
    expect((await w.jobs.get('after'))?.state).toBe('waiting');
    expect((await w.jobs.get('after-after'))?.state).toBe('waiting');
    expect(await w.jobs.get('both')).toMatchObject({ state: 'archived', reason: 'dependency-failed' });
    await w.run();
    expect(await w.jobs.get('gate')).toMatchObject({ state: 'succeeded' });
    expect(await w.jobs.get('after')).toMatchObject({ state: 'succeeded', result: '["open"]' });
    expect(await w.jobs.get('after-after')).toMatchObject({ state: 'succeeded' });
    expect(w.runs.filter((r) => r.task === 'after').map((r) => r.ctx.jobId)).toEqual(['after', 'after-after']);
    expect((await w.jobs.get('after'))?.history.map((h) => h.what)).toEqual(
      expect.arrayContaining(['waiting', 'archived', 'waiting', 'released', 'started', 'succeeded']),
    );
  });
});
