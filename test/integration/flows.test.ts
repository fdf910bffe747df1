/**
 * Jobs that wait for other jobs, on the emulators (fauxqs, dynalite) with the real dispatcher: a
 * diamond runs its last job once after both middles; a dependent sent by another SDK before its
 * dependency waits for it; a fan-in's callback runs exactly once even when the dispatcher that ended
 * a member is lost between the member's record and its count; a dependent whose registration
 * outlasts its visibility is received once, not again by another dispatcher until its receives run
 * out into the DLQ (the dependency chaos suite on a loaded machine). The truth is read from the
 * jobs table, the queues and the journal the tasks write.
 */
import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { QueueClient } from '../../lib/ports';
import type { JobRecord } from '../../lib/track/job-record';
import type { JobStore } from '../../lib/track/job-stores';
import { tempFile } from '../helpers/emulators';
import { eventually, readJournal, runUntil } from '../helpers/run';
import { type System, systemPerTest } from '../helpers/system';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const fresh = systemPerTest();
const record = (s: System, jobId: string) => s.tracking?.jobs?.get(jobId) as Promise<JobRecord | undefined>;
const ended = async (s: System, ids: readonly string[]) => {
  const records = await Promise.all(ids.map((id) => record(s, id)));
  return records.every((r) => r && ['succeeded', 'archived', 'cancelled'].includes(r.state));
};

describe('dependencies on the emulators', () => {
  it('runs a diamond (A → B, C → D): D once, after both, with their results', async () => {
    const s = await fresh({ tracked: true });
    const journal = tempFile('diamond.jsonl');
    const a = await s.publisher.publish('record', { journal, n: 1 }, { id: 'A' });
    const b = await s.publisher.publish('record', { journal, n: 2 }, { id: 'B', dependsOn: [a] });
    const c = await s.publisher.publish('record', { journal, n: 3 }, { id: 'C', dependsOn: [a] });
    await s.publisher.publish('record', { journal, n: 4 }, { id: 'D', dependsOn: [b, c], tags: ['diamond'] });
    expect(await record(s, 'D')).toMatchObject({ state: 'waiting', dependsOn: ['B', 'C'] });
    await runUntil(s.dispatcher(), 'the diamond to end', () => ended(s, ['A', 'B', 'C', 'D']));
    const runs = readJournal(journal);
    const order = runs.map((r) => r.jobId);
    expect(order.filter((id) => id === 'D')).toHaveLength(1);
    expect(order.indexOf('D')).toBe(3);
    expect(runs[3]?.dependencies).toEqual([
      ['B', 'succeeded', { n: 2 }],
      ['C', 'succeeded', { n: 3 }],
    ]);
    expect(await record(s, 'D')).toMatchObject({
      state: 'succeeded',
      history: [{ what: 'waiting' }, { what: 'released' }, expect.anything(), expect.anything(), expect.anything()],
    });
    expect((await record(s, 'A'))?.dependents?.map((d) => d.id)).toEqual(['B', 'C']);
    expect((await s.tracking?.jobs?.jobsByTag('diamond', 10))?.map((r) => r.jobId)).toEqual(['D']);
  });

  it('takes a dependency sent with plain SendMessage after its dependent', async () => {
    const s = await fresh({ tracked: true });
    const journal = tempFile('raw.jsonl');
    const sqs = s.sqs as unknown as { sqs: SQSClient };
    const send = (body: object) =>
      sqs.sqs.send(new SendMessageCommand({ QueueUrl: s.urls.queues.urgent, MessageBody: JSON.stringify(body) }));
    await send({ task: 'record', id: 'then', payload: { journal, n: 2 }, dependsOn: ['first'] });
    await runUntil(s.dispatcher(), 'the dependent to wait', async () => (await record(s, 'then'))?.state === 'waiting');
    await send({ task: 'record', id: 'first', payload: { journal, n: 1 } });
    await runUntil(s.dispatcher(), 'both to end', () => ended(s, ['first', 'then']), 40_000);
    expect(readJournal(journal).map((r) => r.jobId)).toEqual(['first', 'then']);
  });

  it('runs a fan-in callback once when the dispatcher ending a member is lost before its count', async () => {
    const s = await fresh({ tracked: true });
    const journal = tempFile('chord.jsonl');
    const size = 30;
    let lost = 0;
    // The first three counts die where a crash would leave them: the member's record written, its count not.
    const dying = (jobs: JobStore): JobStore =>
      Object.assign(Object.create(jobs) as JobStore, {
        countDependency: async (...args: Parameters<JobStore['countDependency']>) => {
          if (lost < 3) {
            lost += 1;
            throw new Error('the dispatcher died here');
          }
          return jobs.countDependency(...args);
        },
      });
    const members = Array.from({ length: size }, (_, n) => ({ task: 'record', payload: { journal, n } }));
    const { callback } = await s.publisher.chord(members, { task: 'record', payload: { journal, n: -1 }, options: { id: 'total' } });
    await runUntil(s.dispatcher({ wrapJobs: dying }), 'the callback to end', () => ended(s, [callback.jobId]), 60_000);
    expect(lost).toBe(3);
    const runs = readJournal(journal);
    const callbacks = runs.filter((r) => r.jobId === 'total');
    expect(callbacks).toHaveLength(1);
    const seen = (callbacks[0]?.dependencies ?? []) as unknown[][];
    expect(seen.map((d) => d[2])).toEqual(members.map((_, n) => ({ n })));
    expect(new Set(runs.filter((r) => r.jobId !== 'total').map((r) => r.jobId)).size).toBe(size);
    await eventually('the queue to drain', () => s.drained('urgent'));
    const waiting = await s.tracking?.jobs?.list({ state: 'waiting', queues: ['urgent'], limit: 10 });
    expect(waiting).toEqual([]);
  });

  it('keeps a dependent’s message while its registration outlasts the visibility: received once, run once', async () => {
    const s = await fresh({ tracked: true });
    const journal = tempFile('slow-wait.jsonl');
    const members = ['m1', 'm2', 'm3'];
    for (const [n, id] of members.entries()) await s.publisher.publish('record', { journal, n }, { id });
    const dependent = await s.publisher.publish('record', { journal, n: 9 }, { id: 'after-all', dependsOn: members });
    // Each edge takes longer than the queue's 5 s visibility to land, as a hundred of them did on a loaded machine.
    let registering = false;
    const slowEdges = (jobs: JobStore): JobStore =>
      Object.assign(Object.create(jobs) as JobStore, {
        addDependent: async (...args: Parameters<JobStore['addDependent']>) => {
          registering = true;
          await sleep(6500);
          return jobs.addDependent(...args);
        },
      });
    // Every receive of the dependent's published message (not the copy sent when its members end), by either dispatcher.
    let publishedMessage: string | undefined;
    let receives = 0;
    const counted = (queues: QueueClient): QueueClient =>
      Object.assign(Object.create(queues) as QueueClient, {
        receive: async (...args: Parameters<QueueClient['receive']>) => {
          const got = await queues.receive(...args);
          for (const m of got) {
            if (publishedMessage === undefined && m.body.includes('"after-all"')) publishedMessage = m.messageId;
            if (m.messageId === publishedMessage) receives += 1;
          }
          return got;
        },
      });
    const stop = new AbortController();
    const slow = s.dispatcher({ wrapJobs: slowEdges, wrapQueues: counted, workerId: 'slow' }).invoke(Date.now() + 60_000, stop.signal);
    // The other dispatcher polls from the moment the slow one is registering the dependent.
    await eventually('the dependent to be registering', () => registering, 30_000);
    const other = s.dispatcher({ wrapQueues: counted, workerId: 'other' }).invoke(Date.now() + 60_000, stop.signal);
    try {
      await eventually('the dependent to end', () => ended(s, [dependent.jobId]), 45_000);
      await eventually('the queue to drain', () => s.drained('urgent'));
    } finally {
      stop.abort();
      await Promise.all([slow, other]);
    }
    expect(receives).toBe(1);
    expect(readJournal(journal).filter((r) => r.jobId === 'after-all')).toHaveLength(1);
    expect(await record(s, 'after-all')).toMatchObject({ state: 'succeeded' });
    expect((await record(s, 'after-all'))?.history.filter((h) => h.what === 'waiting')).toHaveLength(1);
    expect(await s.sqs.depth(s.urls.deadLetter.urgent as string)).toEqual({ visible: 0, inFlight: 0, delayed: 0 });
  }, 90_000);
});
