import { keyOption } from '../../cli/publish';
import { VirtualClock } from '../../lib/clock';
import { EnvelopeError, PublishOptionError, TaskDefinitionError } from '../../lib/errors';
import { MemoryJobStore } from '../../lib/fakes/memory-job-store';
import { MemoryQueueService } from '../../lib/fakes/memory-queue';
import { Publisher } from '../../lib/publish/publisher';
import { createRegistry } from '../../lib/tasks/registry';
import { defineTask, toDefinition } from '../../lib/tasks/task';
import { createTestSystem } from '../../lib/testing/system';
import { decodeEnvelope } from '../../lib/wire/envelope';
import { appConfig } from '../helpers/factories';

/** A task whose body counts its runs per key, the effect the rule must keep to one. */
function syncUser(unique: Parameters<typeof defineTask>[0]['unique'] = { for: '10m' }) {
  const runs: string[] = [];
  const task = defineTask({
    name: 'sync-user',
    queue: 'default',
    timeLimitSeconds: 5,
    unique,
    run: (payload: { user: string }) => {
      runs.push(payload.user);
    },
  });
  return { task, runs };
}

describe('a task’s unique rule', () => {
  it('reads its window in seconds or with a unit, and defaults to the states of a job that has not ended', () => {
    expect(syncUser({ for: '10m' }).task.unique).toEqual({
      forSeconds: 600,
      while: ['queued', 'running', 'retrying', 'scheduled', 'waiting', 'sleeping', 'waiting-token', 'waiting-event', 'waiting-key'],
    });
    expect(syncUser({ for: 90, while: ['queued'] }).task.unique).toEqual({ forSeconds: 90, while: ['queued'] });
  });

  it('is kept when a definition is read back (a task bundle re-validates its modules)', () => {
    const { task } = syncUser({ for: '2h', while: ['queued', 'running'] });
    expect(toDefinition({ ...task }, 'bundle').unique).toEqual({ forSeconds: 7200, while: ['queued', 'running'] });
  });

  it.each([
    ['unique.for', { for: '0s' }],
    ['unique.for', { for: '31d' }],
    ['unique.for', { for: 'soon' }],
    ['unique.for', { for: -1 }],
    ['unique.while', { for: 60, while: [] }],
    ['unique.while', { for: 60, while: ['deduplicated'] }],
    ['unique.while', { for: 60, while: ['queued', 'queued'] }],
    ['unique', 'yes'],
  ])('refuses a bad %s with a typed error naming it (%j)', (field, rule) => {
    let thrown: unknown;
    try {
      syncUser(rule as never);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(TaskDefinitionError);
    expect(thrown).toMatchObject({ task: 'sync-user', field });
  });

  it('needs its queue tracked full: the key’s holder lives in the jobs table', () => {
    const config = appConfig({ queues: [{ name: 'default', priority: 1, visibilityTimeoutSeconds: 30, tracking: 'failures' }] });
    expect(() => createRegistry([syncUser().task], config)).toThrow(TaskDefinitionError);
  });
});

describe('a job’s key', () => {
  it('travels in the envelope; a bad one is refused by the codec naming the field', () => {
    const meta = { messageId: 'm', sentTimestamp: 1 };
    expect(decodeEnvelope(JSON.stringify({ task: 't', key: 'user 42' }), meta).key).toBe('user 42');
    for (const key of ['', 'x'.repeat(129), 'line\nbreak', 7]) {
      let thrown: unknown;
      try {
        decodeEnvelope(JSON.stringify({ task: 't', key }), meta);
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(EnvelopeError);
      expect(thrown).toMatchObject({ code: 'bad-key', field: 'key' });
    }
  });

  it('is refused by the publisher when malformed, with nothing sent', async () => {
    const system = createTestSystem({ tasks: [syncUser().task] });
    await expect(system.publish('sync-user', { user: 'a' }, { key: 'x'.repeat(129) })).rejects.toThrow(PublishOptionError);
    await expect(system.publish('sync-user', { user: 'a' }, { key: '' })).rejects.toMatchObject({ option: 'key' });
    expect((await system.drain()).succeeded).toBe(0);
  });

  it('is checked by the CLI before anything is looked up', () => {
    expect(keyOption('user-42')).toBe('user-42');
    expect(keyOption(undefined)).toBeUndefined();
    expect(() => keyOption('\u0000')).toThrow(/--key/);
  });

  it('is kept on the job record', async () => {
    const plain = defineTask({ name: 'plain', queue: 'default', timeLimitSeconds: 5, run: () => undefined });
    const system = createTestSystem({ tasks: [plain] });
    const { jobId } = await system.publish(plain, null, { key: 'doc:7' });
    await system.drain();
    expect(await system.job(jobId)).toMatchObject({ state: 'succeeded', key: 'doc:7' });
  });
});

describe('publishing a unique task’s job', () => {
  it('answers a live job of the same key with its id and deduplicated: true, and sends nothing', async () => {
    const { task, runs } = syncUser();
    const system = createTestSystem({ tasks: [task] });
    const first = await system.publish(task, { user: 'a-1' }, { key: 'user-a' });
    const second = await system.publish(task, { user: 'a-2' }, { key: 'user-a' });
    const other = await system.publish(task, { user: 'b-1' }, { key: 'user-b' });
    expect(first.deduplicated).toBeUndefined();
    expect(second).toEqual({ jobId: first.jobId, messageId: '', queue: 'default', deduplicated: true });
    expect(other.jobId).not.toBe(first.jobId);
    const drained = await system.drain();
    expect(drained.succeeded).toBe(2);
    expect(runs.sort()).toEqual(['a-1', 'b-1']);
  });

  it('publishes the key again once its job has ended, or once the window has passed', async () => {
    const { task, runs } = syncUser({ for: '10m' });
    const system = createTestSystem({ tasks: [task] });
    await system.publish(task, { user: '1' }, { key: 'k' });
    await system.drain();
    const afterEnd = await system.publish(task, { user: '2' }, { key: 'k' });
    expect(afterEnd.deduplicated).toBeUndefined();
    // Still queued, but its window ends: the next one is sent.
    system.clock.advance(600_000);
    const afterWindow = await system.publish(task, { user: '3' }, { key: 'k' });
    expect(afterWindow.deduplicated).toBeUndefined();
    await system.drain();
    // Job 2 reaches a dispatcher after job 3 holds the key: published before 3's window, it is no duplicate of it.
    expect(runs.sort()).toEqual(['1', '2', '3']);
  });

  it('in one batch, the first item of a key holds it and the others join it', async () => {
    const { task } = syncUser();
    const system = createTestSystem({ tasks: [task] });
    const published = await system.publisher.publishBatch([
      { task, payload: { user: '1' }, options: { key: 'k' } },
      { task, payload: { user: '2' }, options: { key: 'k' } },
      { task, payload: { user: '3' }, options: { key: 'j' } },
    ]);
    expect(published.map((p) => p.deduplicated ?? false)).toEqual([false, true, false]);
    expect(published[1]?.jobId).toBe(published[0]?.jobId);
  });

  it('costs nothing for a task without unique, and two writes (the hold, the queued record) for one with it', async () => {
    const clock = new VirtualClock();
    const sqs = new MemoryQueueService(clock);
    const urls = { queues: { default: sqs.createQueue('default') }, archive: sqs.createQueue('archive') };
    const config = appConfig({ queues: [{ name: 'default', priority: 1, visibilityTimeoutSeconds: 30 }] });
    const jobs = new MemoryJobStore({ historyLimit: 10, retentionDays: 1 });
    const plain = defineTask({ name: 'plain', queue: 'default', timeLimitSeconds: 5, run: () => undefined });
    const { task } = syncUser();
    const publisher = new Publisher({ config, version: 'v1', tasks: [plain, task], queues: sqs, urls, clock, jobs, recordQueued: false });
    await publisher.publish(plain, null, { key: 'k' });
    expect(jobs.writes).toBe(0);
    await publisher.publish(task, { user: '1' }, { key: 'k' });
    expect(jobs.writes).toBe(2);
    // A duplicate: one refused write and one read, no write landed, nothing sent.
    await publisher.publish(task, { user: '2' }, { key: 'k' });
    expect(jobs.writes).toBe(2);
    expect(sqs.peek(urls.queues.default)).toHaveLength(2);
  });

  it('refuses a key of a unique task sent to a queue that is not tracked full', async () => {
    const config = appConfig({
      queues: [
        { name: 'default', priority: 1, visibilityTimeoutSeconds: 30 },
        { name: 'loose', priority: 1, visibilityTimeoutSeconds: 30, tracking: 'off' },
      ],
    });
    const clock = new VirtualClock();
    const sqs = new MemoryQueueService(clock);
    const urls = { queues: { default: sqs.createQueue('default'), loose: sqs.createQueue('loose') }, archive: sqs.createQueue('a') };
    const publisher = new Publisher({ config, version: 'v1', tasks: [syncUser().task], queues: sqs, urls, clock });
    await expect(publisher.publish('sync-user', { user: '1' }, { key: 'k', queue: 'loose' })).rejects.toMatchObject({
      name: 'PublishOptionError',
      option: 'key',
    });
    expect(sqs.peek(urls.queues.loose)).toHaveLength(0);
  });
});

describe('a message from another SDK with the key of a unique task', () => {
  it('joins the live job of its key: recorded deduplicated pointing at it, deleted, never run', async () => {
    const { task, runs } = syncUser();
    const system = createTestSystem({ tasks: [task] });
    const first = await system.publish(task, { user: 'published' }, { key: 'user-a' });
    await system.send('default', JSON.stringify({ task: 'sync-user', id: 'raw-1', key: 'user-a', payload: { user: 'raw' } }));
    const drained = await system.drain();
    expect(runs).toEqual(['published']);
    expect(drained.duplicates).toBe(1);
    expect(await system.job('raw-1')).toMatchObject({ state: 'deduplicated', duplicateOf: first.jobId, key: 'user-a', attempt: 0 });
  });

  it('of two raw messages of one key, one runs and the other joins it', async () => {
    const { task, runs } = syncUser();
    const system = createTestSystem({ tasks: [task] });
    for (const id of ['r-1', 'r-2'])
      await system.send('default', JSON.stringify({ task: 'sync-user', id, key: 'k', payload: { user: id } }));
    await system.drain();
    expect(runs).toHaveLength(1);
    const records = [await system.job('r-1'), await system.job('r-2')];
    const ran = records.find((r) => r?.state === 'succeeded');
    expect(records.find((r) => r?.state === 'deduplicated')).toMatchObject({ duplicateOf: ran?.jobId });
  });

  it('with a malformed key is archived as malformed, naming the field, and never run', async () => {
    const { task, runs } = syncUser();
    const system = createTestSystem({ tasks: [task] });
    await system.send('default', JSON.stringify({ task: 'sync-user', key: '', payload: { user: 'x' } }));
    await system.drain();
    expect(runs).toHaveLength(0);
    expect(system.archived()[0]?.record).toMatchObject({ reason: 'malformed', code: 'bad-key' });
    expect(system.archived()[0]?.record?.detail).toMatch(/key/);
  });
});
