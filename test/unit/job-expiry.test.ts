/**
 * `expiresAt` (Celery's `expires`): after it, no attempt of the job starts — the first, a retry, a
 * delayed or waiting job come due — and the job is archived `expired` through its own claim (its
 * record says so, its dependents fail, `onArchived` hears of it). A replay runs it anyway. Read
 * from the jobs table and the archive, on the fakes and a virtual clock.
 */
import { renderJob } from '../../cli/render';
import { PublishOptionError } from '../../lib/errors';
import { replayArchived } from '../../lib/operate/archive';
import { defineTask, type TaskOptions } from '../../lib/tasks/task';
import type { JobRecord } from '../../lib/track/job-record';
import { readArchiveRecord } from '../../lib/wire/archive-record';
import { encodeEnvelope } from '../../lib/wire/envelope';
import { operatorContextOf, publisherOf, type World, world } from '../helpers/world';

const ran: Array<[string, number]> = [];
let failFirst = false;
const report: TaskOptions = {
  name: 'send-report',
  queue: 'urgent',
  timeLimitSeconds: 5,
  maxRetries: 2,
  backoff: { baseSeconds: 60, capSeconds: 60 },
  run: (_p, ctx) => {
    ran.push([ctx.jobId, ctx.attempt]);
    if (failFirst && ctx.attempt === 1) throw new Error('smtp down');
    return 'sent';
  },
};
const first: TaskOptions = { name: 'first', queue: 'urgent', timeLimitSeconds: 5, run: () => 'ok' };

function setup(heard: string[] = []) {
  const w = world(
    [report, first],
    { hooks: { onArchived: (_e, reason, ctx) => void heard.push(`${ctx.jobId}:${reason}`) } },
    { tracked: true, deadLetters: true },
  );
  const publisher = publisherOf(w, { tasks: [report, first].map((t) => defineTask(t)) });
  return { w, publisher, in: (ms: number) => new Date(w.clock.now() + ms) };
}

const archive = (w: World) => w.sqs.peek(w.urls.archive).map((m) => ({ body: m.body, record: readArchiveRecord(m.attributes) }));
const archivedReasons = (w: World) => w.reports.flatMap((r) => r.jobs).filter((j) => j.outcome === 'archived');

beforeEach(() => {
  ran.length = 0;
  failFirst = false;
});

describe('expiresAt: a job that must not start after a time', () => {
  it('runs a job whose attempt starts before its expiry', async () => {
    const { w, publisher, in: inMs } = setup();
    await publisher.publish('send-report', {}, { id: 'r-1', expiresAt: inMs(60_000) });
    // The record names the expiry from the publish on (`startBy`; `expiresAt` is the record's own TTL).
    expect(await w.jobs.get('r-1')).toMatchObject({ state: 'queued', startBy: w.clock.now() + 60_000 });
    await w.run();
    expect(ran).toEqual([['r-1', 1]]);
    expect(await w.jobs.get('r-1')).toMatchObject({ state: 'succeeded' });
  });

  it('archives one that waited past it: the body never runs, the record says expired, onArchived hears of it', async () => {
    const heard: string[] = [];
    const { w, publisher, in: inMs } = setup(heard);
    const expiresAt = inMs(5_000);
    await publisher.publish('send-report', {}, { id: 'r-2', expiresAt });
    w.clock.advance(10_000);
    await w.run();
    expect(ran).toEqual([]);
    const record = await w.jobs.get('r-2');
    expect(record).toMatchObject({ state: 'archived', reason: 'expired', startBy: expiresAt.getTime() });
    expect(record?.lastError).toMatchObject({ type: 'JobExpiredError' });
    // `taskworker jobs show` names it.
    expect(renderJob(record as JobRecord)).toContain(`  expires   ${expiresAt.toISOString()} (+5.0 s): no attempt starts after it`);
    expect(record?.lastError?.message).toMatch(/^Job r-2 expired at .+Z, 5 s before an attempt could start$/);
    const [archived] = archive(w);
    expect(archived?.record).toMatchObject({ reason: 'expired', jobId: 'r-2', task: 'send-report', errorType: 'JobExpiredError' });
    expect(heard).toEqual(['r-2:expired']);
    expect((await w.sqs.depth(w.urls.queues.urgent as string)).visible).toBe(0);
  });

  it('archives a retry that would start past it, after the first attempt ran', async () => {
    failFirst = true;
    const { w, publisher, in: inMs } = setup();
    await publisher.publish('send-report', {}, { id: 'r-3', expiresAt: inMs(30_000) });
    await w.run({ forMs: 120_000 });
    expect(ran).toEqual([['r-3', 1]]);
    expect(await w.jobs.get('r-3')).toMatchObject({ state: 'archived', reason: 'expired', attempt: 2 });
  });

  it('runs a job delayed past 15 minutes when due before its expiry, and archives one whose expiry passed while it was parked', async () => {
    const { w, publisher, in: inMs } = setup();
    await publisher.publish('send-report', {}, { id: 'in-time', delaySeconds: 3600, expiresAt: inMs(3_700_000) });
    const lateExpiry = w.clock.now() + 1_800_000;
    const late = encodeEnvelope({
      task: 'send-report',
      id: 'too-late',
      payload: {},
      runAt: w.clock.now() + 3_600_000,
      expiresAt: lateExpiry,
    });
    await w.send('urgent', late);
    await w.run({ forMs: 60_000 });
    expect(await w.jobs.get('too-late')).toMatchObject({ state: 'scheduled', startBy: lateExpiry });
    w.clock.advance(3_600_000);
    await w.run({ forMs: 120_000 });
    expect(ran).toEqual([['in-time', 1]]);
    expect(await w.jobs.get('too-late')).toMatchObject({ state: 'archived', reason: 'expired' });
  });

  it('archives a dependent released past its expiry, and fails its own dependents', async () => {
    const { w, publisher, in: inMs } = setup();
    await publisher.publish('first', {}, { id: 'dep', delaySeconds: 600 });
    await publisher.publish('send-report', {}, { id: 'waits', dependsOn: ['dep'], expiresAt: inMs(60_000) });
    await publisher.publish('first', {}, { id: 'after', dependsOn: ['waits'] });
    w.clock.advance(600_000);
    await w.run({ forMs: 120_000 });
    expect(await w.jobs.get('dep')).toMatchObject({ state: 'succeeded' });
    expect(await w.jobs.get('waits')).toMatchObject({ state: 'archived', reason: 'expired' });
    expect(await w.jobs.get('after')).toMatchObject({ state: 'archived', reason: 'dependency-failed' });
    expect(ran).toEqual([]);
  });

  it('leaves a finished job as it is when a late copy arrives past its expiry', async () => {
    const { w, publisher, in: inMs } = setup();
    await publisher.publish('send-report', {}, { id: 'r-4', expiresAt: inMs(5_000) });
    await w.run();
    w.clock.advance(10_000);
    await w.send('urgent', encodeEnvelope({ task: 'send-report', id: 'r-4', payload: {}, expiresAt: w.clock.now() - 5_000 }));
    await w.run();
    expect(await w.jobs.get('r-4')).toMatchObject({ state: 'succeeded' });
    expect(archive(w)).toEqual([]);
  });

  it('never expires another job: a raw message naming its id with an expiry past is archived id-conflict, and that job runs', async () => {
    const { w, publisher } = setup();
    await publisher.publish('send-report', { to: 'a' }, { id: 'victim', delaySeconds: 60 });
    await w.send(
      'urgent',
      encodeEnvelope({ task: 'send-report', id: 'victim', payload: { to: 'mallory' }, expiresAt: w.clock.now() - 60_000 }),
    );
    await w.run({ forMs: 120_000 });
    expect(archivedReasons(w).map((j) => j.reason)).toEqual(['id-conflict']);
    expect(await w.jobs.get('victim')).toMatchObject({ state: 'succeeded' });
    expect(ran).toEqual([['victim', 1]]);
  });

  it('archives a raw message whose expiresAt is not epoch milliseconds as malformed, naming the field', async () => {
    const { w } = setup();
    await w.send('urgent', JSON.stringify({ task: 'send-report', payload: {}, expiresAt: '2026-01-01' }));
    await w.run();
    const [archived] = archive(w);
    expect(archived?.record).toMatchObject({ reason: 'malformed', code: 'bad-expires-at' });
    expect(archived?.record?.detail).toBe(
      'Malformed envelope (bad-expires-at): expiresAt is "2026-01-01"; expected epoch milliseconds 0..8640000000000000',
    );
  });

  it('archives an expiresAt given in seconds as malformed, saying so, rather than expiring the job unrun', async () => {
    const { w } = setup();
    const inAnHourSeconds = Math.floor(w.clock.now() / 1000) + 3600;
    await w.send('urgent', JSON.stringify({ task: 'send-report', id: 'py-1', payload: {}, expiresAt: inAnHourSeconds }));
    await w.run();
    expect(ran).toEqual([]);
    const [archived] = archive(w);
    expect(archived?.record).toMatchObject({ reason: 'malformed', code: 'bad-expires-at' });
    expect(archived?.record?.detail).toContain(`expiresAt is ${inAnHourSeconds} (1970-01-21`);
    expect(archived?.record?.detail).toContain('expected epoch milliseconds — it looks like seconds');
    // Filed under its own message id: the id it carried is left free.
    expect(await w.jobs.get('py-1')).toBeUndefined();
  });

  it('runs an expired job that an operator replays: the replay leaves its expiry out', async () => {
    const { w, publisher, in: inMs } = setup();
    await publisher.publish('send-report', {}, { id: 'r-5', expiresAt: inMs(1_000) });
    w.clock.advance(5_000);
    await w.run();
    expect(await w.jobs.get('r-5')).toMatchObject({ state: 'archived', reason: 'expired' });

    expect(await replayArchived(operatorContextOf(w), { jobId: 'r-5' }, 10)).toMatchObject({ replayed: 1 });
    await w.run();
    expect(ran).toEqual([['r-5', 1]]);
    expect(await w.jobs.get('r-5')).toMatchObject({ state: 'succeeded' });
  });

  it('refuses at publish an expiry that leaves the job no time to start, or is not a date, naming the option', async () => {
    const { publisher, in: inMs } = setup();
    const publish = (options: object) => publisher.publish('send-report', {}, options);
    await expect(publish({ expiresAt: inMs(-1) })).rejects.toThrow(PublishOptionError);
    await expect(publish({ expiresAt: inMs(0) })).rejects.toThrow(
      /expiresAt = .*: expected a time after now \(the job could never start\)/,
    );
    await expect(publish({ delaySeconds: 60, expiresAt: inMs(30_000) })).rejects.toThrow(
      /expiresAt = .*: expected a time after its start, .+Z \(the job could never start\)/,
    );
    await expect(publish({ runAt: inMs(7_200_000), expiresAt: inMs(3_600_000) })).rejects.toThrow(/after its start/);
    await expect(publish({ expiresAt: new Date('nope') })).rejects.toThrow(/expiresAt = .*: expected a valid Date/);
    await expect(publish({ expiresAt: inMs(400 * 86_400_000) })).rejects.toThrow(/at most 366 days after the job may start/);
  });
});
