/**
 * A job id is an identity, not an overwrite handle. Another publisher's message that reuses a job's
 * id — naming an unknown task, another task, or the same task with another payload — must never
 * change that job: the job runs its own attempts with its own payload and ends `succeeded`; the
 * intruder is archived under its own message id with a reason of its own. Real dispatchers, real
 * emulators; the truth is read from the jobs table, the journal the tasks write, and the archive.
 */
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import type { JobRecord } from '../../lib/track/job-record';
import { tempFile } from '../helpers/emulators';
import { eventually, readJournal, runUntil } from '../helpers/run';
import { type System, systemPerTest } from '../helpers/system';

const fresh = systemPerTest();
// Every retry waits the whole of its backoff (flaky's 1 s, never a jitter of 0 s): the job stays
// `retrying` long enough for retryingJob to see it and stop its dispatcher before the retry runs.
const tracked = () => fresh({ tracked: true, random: () => 0.99 });

/** Sends a body as any SDK would, to the version's urgent queue; returns its SQS message id. */
async function sendRaw(s: System, body: unknown): Promise<string> {
  const out = await s.sqs.sqs.send(new SendMessageCommand({ QueueUrl: s.urls.queues.urgent, MessageBody: JSON.stringify(body) }));
  return out.MessageId as string;
}

const record = (s: System, jobId: string): Promise<JobRecord | undefined> => s.tracking?.jobs?.get(jobId) as Promise<JobRecord | undefined>;

/** Publishes a flaky job (fails its first attempt) and runs a dispatcher until its record says `retrying`. */
async function retryingJob(s: System, journal: string): Promise<string> {
  const { jobId } = await s.publisher.publish('flaky', { journal, succeedOn: 2, tag: 'original' });
  await runUntil(s.runtime, 'the first attempt to fail', async () => (await record(s, jobId))?.state === 'retrying');
  return jobId;
}

/** Runs a dispatcher until the job succeeded and the archive holds `archived` messages. */
async function settleAll(s: System, jobId: string, archived: number) {
  const seen: Awaited<ReturnType<System['archive']>> = [];
  await runUntil(
    s.dispatcher(),
    'the job to succeed and the intruder to be archived',
    async () => {
      seen.push(...(await s.archive()));
      return (await record(s, jobId))?.state === 'succeeded' && seen.length >= archived && (await s.drained('urgent'));
    },
    30_000,
  );
  return seen;
}

describe('a message can only act on the job it names if it is that job', () => {
  it('an unknown task under a retrying job id is archived as unknown-task; the job retries and succeeds with its own payload', async () => {
    const s = await tracked();
    const journal = tempFile('journal.jsonl');
    const jobId = await retryingJob(s, journal);
    const intruder = await sendRaw(s, { id: jobId, task: 'no-such-task', payload: { tag: 'intruder' } });

    const archived = await settleAll(s, jobId, 1);

    expect(await record(s, jobId)).toMatchObject({ state: 'succeeded', task: 'flaky', attempt: 2 });
    expect((await record(s, jobId))?.history.map((e) => e.what)).toEqual(['queued', 'started', 'retrying', 'started', 'succeeded']);
    expect(readJournal(journal).map((e) => [e.attempt, e.tag, e.jobId])).toEqual([
      [1, 'original', jobId],
      [2, 'original', jobId],
    ]);
    expect(archived.map((a) => a.record)).toEqual([
      expect.objectContaining({ reason: 'unknown-task', task: 'no-such-task', jobId: intruder, envelopeId: jobId, messageId: intruder }),
    ]);
    expect(JSON.parse(archived[0]?.body ?? '{}')).toMatchObject({ payload: { tag: 'intruder' } });
    // The intruder's own record, under its own message id, is what `jobs show` finds for it.
    expect(await record(s, intruder)).toMatchObject({ state: 'archived', reason: 'unknown-task', envelopeId: jobId });
  });

  it.each([
    ['another registered task', (jobId: string, journal: string) => ({ id: jobId, task: 'record', payload: { journal, n: 7 } })],
    [
      'the same task with another payload',
      (jobId: string, journal: string) => ({ id: jobId, task: 'flaky', payload: { journal, succeedOn: 1, tag: 'intruder' } }),
    ],
  ])('%s under a retrying job id is archived as id-conflict and never runs', async (_what, intruderBody) => {
    const s = await tracked();
    const journal = tempFile('journal.jsonl');
    const jobId = await retryingJob(s, journal);
    const intruder = await sendRaw(s, intruderBody(jobId, journal));

    const archived = await settleAll(s, jobId, 1);

    expect(await record(s, jobId)).toMatchObject({ state: 'succeeded', task: 'flaky', attempt: 2 });
    // Only the original ran: twice, with its own payload; the intruder's body never did.
    expect(readJournal(journal).map((e) => [e.task, e.attempt, e.tag])).toEqual([
      ['flaky', 1, 'original'],
      ['flaky', 2, 'original'],
    ]);
    const [conflict] = archived;
    expect(conflict?.record).toMatchObject({ reason: 'id-conflict', jobId: intruder, envelopeId: jobId, messageId: intruder });
    expect(conflict?.record?.detail).toContain('"flaky"');
    expect(conflict?.record?.detail).toContain(`"${intruderBody(jobId, journal).task}"`);
    expect(conflict?.body).toBe(JSON.stringify(intruderBody(jobId, journal)));
    expect(await record(s, intruder)).toMatchObject({ state: 'archived', reason: 'id-conflict', envelopeId: jobId });
  });

  it('an intruder arriving while the job runs is archived as id-conflict; the running attempt ends succeeded', async () => {
    const s = await tracked();
    const journal = tempFile('journal.jsonl');
    const { jobId } = await s.publisher.publish('nap', { journal, ms: 800, n: 1 });
    const stop = new AbortController();
    const first = s.runtime.invoke(Date.now() + 60_000, stop.signal);
    await eventually('the job to run', async () => (await record(s, jobId))?.state === 'running');
    const intruder = await sendRaw(s, { id: jobId, task: 'record', payload: { journal, n: 2 } });
    const archived = await settleAll(s, jobId, 1);
    stop.abort();
    await first;

    expect(await record(s, jobId)).toMatchObject({ state: 'succeeded', task: 'nap', attempt: 1 });
    expect(readJournal(journal).map((e) => [e.task, e.n])).toEqual([['nap', 1]]);
    expect(archived.map((a) => [a.record?.reason, a.record?.jobId])).toEqual([['id-conflict', intruder]]);
  });

  it('the same id, task and payload again is a duplicate, as before: deleted unrun', async () => {
    const s = await tracked();
    const journal = tempFile('journal.jsonl');
    const { jobId } = await s.publisher.publish('record', { journal, n: 3 });
    await runUntil(s.runtime, 'the job to succeed', async () => (await record(s, jobId))?.state === 'succeeded');
    // Another SDK re-sends the same job, keys in another order.
    await sendRaw(s, { payload: { n: 3, journal }, task: 'record', id: jobId });
    await runUntil(s.dispatcher(), 'the copy to be skipped', () => s.jobs().some((j) => j.outcome === 'duplicate'));
    expect(readJournal(journal)).toHaveLength(1);
    expect(await s.archive()).toEqual([]);
    expect((await record(s, jobId))?.history.map((e) => e.what)).toEqual(['queued', 'started', 'succeeded', 'skipped-duplicate']);
  });
});
