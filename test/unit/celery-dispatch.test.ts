/**
 * Celery's messages through the one invocation, on the test kit's fakes: a queue that accepts them
 * runs them as their task's jobs once, retries and parks them as envelopes, and archives what it
 * will not run (each with its reason, the rest of the batch untouched); a queue that does not
 * accept them archives them naming the setting. The same through the real Celery and kombu:
 * test/integration/celery-interop.test.ts.
 */
import { defineTask } from 'taskworker';
import { createTestSystem } from 'taskworker/testing';
import { celeryMessage as celery, celeryProtocolOne } from '../helpers/factories';

const runs: Array<{ payload: unknown; jobId: string; attempt: number; appData: unknown }> = [];
let failing: 'never' | 'once' | 'always' = 'never';
const add = defineTask({
  name: 'add',
  queue: 'default',
  timeLimitSeconds: 5,
  maxRetries: 2,
  backoff: { baseSeconds: 1, capSeconds: 1 },
  celeryName: 'tasks.add',
  celeryArgs: ['x', 'y'],
  run: (payload: { x: number; y: number }, ctx) => {
    runs.push({ payload, jobId: ctx.jobId, attempt: ctx.attempt, appData: ctx.appData });
    if (failing === 'always' || (failing === 'once' && ctx.attempt === 1)) throw new Error(`attempt ${ctx.attempt} fails`);
    return payload.x + payload.y;
  },
});

const accepting = { app: 'mig', queues: [{ name: 'default', priority: 50, accept: ['taskworker', 'celery'] as const }] };

function system(config: object = accepting) {
  return createTestSystem({ tasks: [add], config: config as never });
}

beforeEach(() => {
  runs.length = 0;
  failing = 'never';
});

describe('Celery messages on a queue that accepts them', () => {
  it('runs send_task’s message once as the task with its celeryName, under the Celery id, even delivered twice', async () => {
    const s = system();
    await s.send('default', celery('c-1', { kwargs: { x: 2, y: 3 } }));
    await s.send('default', celery('c-1', { kwargs: { x: 2, y: 3 } }));
    const drained = await s.drain();
    expect(runs).toEqual([
      { payload: { x: 2, y: 3 }, jobId: 'c-1', attempt: 1, appData: { celery: { task: 'tasks.add', retries: 0, root_id: 'c-1' } } },
    ]);
    expect(drained).toMatchObject({ succeeded: 1, duplicates: 1 });
    expect(await s.job('c-1')).toMatchObject({ state: 'succeeded', task: 'add', result: '5', tags: ['celery'] });
  });

  it('maps positional args through celeryArgs', async () => {
    const s = system();
    await s.send('default', celery('c-2', { args: [4, 5], kwargs: {} }));
    await s.drain();
    expect(runs.map((r) => r.payload)).toEqual([{ x: 4, y: 5 }]);
  });

  it('retries a failed attempt as the same job, and archives an exhausted one as an envelope a replay can run', async () => {
    failing = 'once';
    const s = system();
    await s.send('default', celery('c-3'));
    await s.drain();
    expect(runs.map((r) => [r.jobId, r.attempt])).toEqual([
      ['c-3', 1],
      ['c-3', 2],
    ]);
    expect(await s.job('c-3')).toMatchObject({ state: 'succeeded', attempt: 2 });

    failing = 'always';
    await s.send('default', celery('c-6', { kwargs: { x: 6, y: 6 } }));
    expect((await s.drain()).archived).toEqual({ exhausted: 1 });
    expect(await s.job('c-6')).toMatchObject({ state: 'archived', reason: 'exhausted', attempt: 3 });
    const [archived] = s.archived();
    expect(archived?.record).toMatchObject({ reason: 'exhausted', jobId: 'c-6', task: 'add' });
    expect(JSON.parse(archived?.body ?? '')).toMatchObject({
      task: 'add',
      id: 'c-6',
      payload: { x: 6, y: 6 },
      appData: { celery: { task: 'tasks.add' } },
      tags: ['celery'],
    });
  });

  it('honours expires at every attempt, as Celery’s worker does: a retry that would start past it is archived expired, not run', async () => {
    failing = 'once';
    const s = system();
    await s.send('default', celery('c-7', { expires: s.clock.now() + 10_000 }));
    const drained = await s.drain();
    // The retry came back a minute later (the next scheduled dispatcher), past the expiry.
    expect(drained).toMatchObject({ succeeded: 0, retried: 1, archived: { expired: 1 } });
    expect(runs.map((r) => r.jobId)).toEqual(['c-7']);
    expect(await s.job('c-7')).toMatchObject({ state: 'archived', reason: 'expired', attempt: 2 });
  });

  it('parks an eta beyond SQS’s 15 minutes as its envelope, and runs it when due', async () => {
    const s = system();
    const eta = s.clock.now() + 3_600_000;
    await s.send('default', celery('c-4', { eta }));
    await s.drain({ maxMs: 60_000 });
    expect(runs).toHaveLength(0);
    expect(await s.job('c-4')).toMatchObject({ state: 'scheduled', runAt: eta });
    await s.drain({ maxMs: 2 * 3_600_000 });
    expect(runs.map((r) => r.jobId)).toEqual(['c-4']);
    expect(await s.job('c-4')).toMatchObject({ state: 'succeeded', attempt: 1 });
  });

  it('archives pickle, an unknown task and an expired message with their reasons, never runs them, and runs the rest of the batch', async () => {
    const s = system();
    await s.send('default', celery('c-pickle', { contentType: 'application/x-python-serialize' }));
    await s.send('default', celery('c-unknown', { task: 'tasks.nope' }));
    await s.send('default', celery('c-expired', { expires: s.clock.now() - 1_000 }));
    await s.send('default', celery('c-ok'));
    const drained = await s.drain();
    expect(runs.map((r) => r.jobId)).toEqual(['c-ok']);
    expect(drained.archived).toEqual({ malformed: 1, 'unknown-task': 1, expired: 1 });
    const archived = s.archived();
    const record = (id: string) => archived.find((a) => a.record?.envelopeId === id);
    expect(record('c-pickle')?.record).toMatchObject({ reason: 'malformed', code: 'celery-content-type' });
    expect(record('c-pickle')?.record?.detail).toContain('application/x-python-serialize');
    expect(record('c-unknown')?.record).toMatchObject({ reason: 'unknown-task', code: 'celery-task' });
    // Past its expiry, the job's own end: archived under its Celery id, its record says why.
    const expired = archived.find((a) => a.record?.jobId === 'c-expired')?.record;
    expect(expired).toMatchObject({ reason: 'expired', errorType: 'JobExpiredError', task: 'add' });
    expect(await s.job('c-expired')).toMatchObject({ state: 'archived', reason: 'expired' });
    // The archive keeps what Celery sent, byte for byte.
    expect(record('c-pickle')?.body).toBe(celery('c-pickle', { contentType: 'application/x-python-serialize' }));
    // Never under the Celery id: the ids stay free for the job a corrected message would be.
    for (const id of ['c-pickle', 'c-unknown']) expect(await s.job(id)).toBeUndefined();
  });
});

describe('a refused Celery message is filed under its Celery id, whatever the protocol', () => {
  it('files a protocol 1 message (JSON or pickle) under the id its correlation_id and body carry, and never runs it', async () => {
    const s = system();
    await s.send('default', celeryProtocolOne('c-v1-json', 'json'));
    await s.send('default', celeryProtocolOne('c-v1-pickle', 'pickle'));
    const drained = await s.drain();
    expect(runs).toHaveLength(0);
    expect(drained.archived).toEqual({ malformed: 2 });
    const archived = s.archived();
    expect(archived.map((a) => [a.record?.code, a.record?.envelopeId, a.record?.task]).sort()).toEqual([
      ['celery-protocol', 'c-v1-json', 'tasks.add'],
      ['celery-protocol', 'c-v1-pickle', ''],
    ]);
    // The record is the message's own, never the Celery id's (that id stays free for a corrected message).
    for (const id of ['c-v1-json', 'c-v1-pickle']) expect(await s.job(id)).toBeUndefined();
    for (const a of archived)
      expect(await s.job(a.record?.jobId as string)).toMatchObject({ state: 'archived', envelopeId: a.record?.envelopeId });
  });
});

describe('Celery messages on a queue that does not accept them', () => {
  it('archives them naming the setting to change, and never runs them', async () => {
    const s = system({ app: 'mig', queues: [{ name: 'default', priority: 50 }] });
    await s.send('default', celery('c-5'));
    const drained = await s.drain();
    expect(runs).toHaveLength(0);
    expect(drained.archived).toEqual({ malformed: 1 });
    const [archived] = s.archived();
    expect(archived?.record).toMatchObject({ reason: 'malformed', code: 'celery-not-accepted', envelopeId: 'c-5' });
    expect(archived?.record?.detail).toContain("add 'celery' to the queue's accept");
  });

  it('archives a body that is not JSON as before, with the envelope’s own reason', async () => {
    const s = system({ app: 'mig', queues: [{ name: 'default', priority: 50 }] });
    await s.send('default', 'not json');
    await s.drain();
    expect(s.archived()[0]?.record).toMatchObject({ reason: 'malformed', code: 'not-json' });
  });
});
