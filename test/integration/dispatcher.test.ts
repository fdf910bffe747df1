import { SendMessageCommand } from '@aws-sdk/client-sqs';
import type { TaskBundle } from '../../lib/tasks/bundle';
import { buildFixtureBundle, type EmulatorHarness, startHarness, stopHarness, tempFile } from '../helpers/emulators';
import { FaultyQueue } from '../helpers/faulty-queue';
import { readJournal, runUntil } from '../helpers/run';
import { type System, system } from '../helpers/system';

let h: EmulatorHarness;
let bundle: TaskBundle;

beforeAll(async () => {
  h = await startHarness();
  bundle = await buildFixtureBundle();
});
afterAll(() => stopHarness(h));

let current: System | undefined;
afterEach(async () => {
  await current?.close();
  current = undefined;
});
async function fresh(options: { faulty?: boolean } = {}) {
  let faulty: FaultyQueue | undefined;
  current = await system(h, bundle, options.faulty ? { wrapQueues: (q) => (faulty = new FaultyQueue(q)) } : {});
  return { ...current, faulty };
}

describe('dispatcher on fauxqs with worker threads', () => {
  it('publishes, runs and deletes', async () => {
    const s = await fresh();
    const journal = tempFile('journal.jsonl');
    const { jobId } = await s.publisher.publish('record', { journal, n: 1 }, { appData: { tenant: 'acme' } });
    await runUntil(s.runtime, 'the task to run', () => s.jobs().length === 1);
    expect(readJournal(journal)).toEqual([{ task: 'record', n: 1, jobId, attempt: 1, appData: { tenant: 'acme' } }]);
    expect(s.jobs()[0]?.outcome).toBe('succeeded');
    expect(await s.depth('urgent')).toEqual({ visible: 0, inFlight: 0, delayed: 0 });
  });

  it('retries a failing task by visibility (same message, no re-send) until it succeeds', async () => {
    const s = await fresh();
    const journal = tempFile('journal.jsonl');
    await s.publisher.publish('flaky', { journal, succeedOn: 3 });
    await runUntil(s.runtime, 'the third attempt', () => s.jobs().some((j) => j.outcome === 'succeeded'), 30_000);
    expect(s.jobs().map((j) => [j.outcome, j.attempt])).toEqual([
      ['retried', 1],
      ['retried', 2],
      ['succeeded', 3],
    ]);
    expect(new Set(s.jobs().map((j) => j.messageId)).size).toBe(1);
    expect(readJournal(journal).map((e) => e.attempt)).toEqual([1, 2, 3]);
    expect(await s.archive()).toEqual([]);
  });

  it('archives an exhausted task with its reason, error and attempts, then deletes it', async () => {
    const s = await fresh();
    const { jobId } = await s.publisher.publish('doomed', {});
    await runUntil(s.runtime, 'the job to be archived', () => s.jobs().some((j) => j.outcome === 'archived'), 30_000);
    const [archived] = await s.archive();
    expect(archived?.record).toMatchObject({
      reason: 'exhausted',
      attempts: 2,
      errorType: 'Error',
      detail: 'downstream said no',
      task: 'doomed',
      jobId,
      queue: 'urgent',
    });
    expect(await s.depth('urgent')).toEqual({ visible: 0, inFlight: 0, delayed: 0 });
  });

  it('archives a job whose expiresAt passed before it could start, in the archive and the jobs table, and runs the rest', async () => {
    current = await system(h, bundle, { tracked: true });
    const s = current;
    const journal = tempFile('journal.jsonl');
    const { jobId: expired } = await s.publisher.publish('record', { journal, n: 1 }, { expiresAt: new Date(Date.now() + 2_000) });
    const { jobId: fresh } = await s.publisher.publish('record', { journal, n: 2 }, { expiresAt: new Date(Date.now() + 600_000) });
    // No dispatcher runs until the first has expired.
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    await runUntil(s.runtime, 'both jobs to end', () => s.jobs().length === 2, 30_000);
    expect(readJournal(journal).map((e) => e.jobId)).toEqual([fresh]);
    const [archived] = await s.archive();
    expect(archived?.record).toMatchObject({ reason: 'expired', jobId: expired, errorType: 'JobExpiredError', task: 'record' });
    const record = await s.tracking?.jobs.get(expired);
    expect(record).toMatchObject({ state: 'archived', reason: 'expired', attempt: 1 });
    // The expiry is on the record (startBy), apart from the item's own TTL (expiresAt, in seconds).
    expect(record?.startBy).toBe(JSON.parse(archived?.body as string).expiresAt);
    expect(await s.tracking?.jobs.get(fresh)).toMatchObject({ state: 'succeeded' });
    expect(await s.depth('urgent')).toEqual({ visible: 0, inFlight: 0, delayed: 0 });
  });

  it('archives an unrecoverable error class of the task at once', async () => {
    const s = await fresh();
    await s.publisher.publish('doomed', { fatal: true });
    await runUntil(s.runtime, 'the job to be archived', () => s.jobs().length === 1);
    expect((await s.archive())[0]?.record).toMatchObject({ reason: 'unrecoverable', errorType: 'LedgerClosed', attempts: 1 });
  });

  it('kills a CPU-bound loop at its time limit while the rest of the batch succeeds', async () => {
    const s = await fresh();
    const journal = tempFile('journal.jsonl');
    await s.publisher.publishBatch([{ task: 'spin', payload: {} }, ...[1, 2, 3].map((n) => ({ task: 'record', payload: { journal, n } }))]);
    await runUntil(s.runtime, 'all four jobs', () => s.jobs().length === 4);
    const spin = s.jobs().find((j) => j.task === 'spin');
    expect(spin).toMatchObject({ outcome: 'archived', reason: 'timed-out' });
    // Limit 1 s + kill grace 0.2 s: the thread was terminated, not left spinning.
    expect(spin?.runMs).toBeGreaterThanOrEqual(1000);
    expect(
      readJournal(journal)
        .map((e) => e.n)
        .sort(),
    ).toEqual([1, 2, 3]);
    expect((await s.archive())[0]?.record).toMatchObject({ reason: 'timed-out', errorType: 'TimeLimitExceededError' });
    // The pool replaced the terminated thread: more work still runs.
    await s.publisher.publish('record', { journal, n: 4 });
    await runUntil(s.runtime, 'a task after the kill', () => readJournal(journal).length === 4);
  });

  it('archives malformed JSON, an unknown task and an invalid payload, each with its reason', async () => {
    const s = await fresh();
    const send = (queue: string, body: string) => h.sqs.send(new SendMessageCommand({ QueueUrl: s.urls.queues[queue], MessageBody: body }));
    await send('urgent', '{"task": "record", ');
    await send('urgent', JSON.stringify({ task: 'os.system', payload: 'rm -rf /' }));
    await send('routine', JSON.stringify({ task: 'strict-input', payload: { count: 'three' } }));
    await runUntil(s.runtime, 'three archived jobs', () => s.jobs().filter((j) => j.outcome === 'archived').length === 3);
    const records = (await s.archive()).map((a) => a.record);
    expect(records.map((r) => r?.reason).sort()).toEqual(['invalid-payload', 'malformed', 'unknown-task']);
    expect(records.find((r) => r?.reason === 'malformed')?.code).toBe('not-json');
    expect(records.find((r) => r?.reason === 'invalid-payload')?.detail).toContain('count must be a number');
  });

  it('loses nothing when batch calls partly fail', async () => {
    const s = await fresh({ faulty: true });
    const journal = tempFile('journal.jsonl');
    s.faulty?.inject({ operation: 'deleteBatch', failEntries: 3, code: 'InternalError' });
    s.faulty?.inject({ operation: 'receive', throws: 'ServiceUnavailable' });
    s.faulty?.inject({ operation: 'sendBatch', failEntries: 1, code: 'ServiceUnavailable' });
    await s.publisher.publishBatch([
      ...Array.from({ length: 6 }, (_, n) => ({ task: 'record', payload: { journal, n } })),
      { task: 'doomed', payload: { fatal: true } },
    ]);
    await runUntil(s.runtime, 'all queues to drain', async () => {
      const d = await s.depth('urgent');
      return s.jobs().length >= 7 && d.visible + d.inFlight + d.delayed === 0;
    });
    expect(new Set(readJournal(journal).map((e) => e.n))).toEqual(new Set([0, 1, 2, 3, 4, 5]));
    expect(await s.archive()).toHaveLength(1);
    expect(s.faulty?.injected).toMatchObject({ deleteBatch: 1, receive: 1, sendBatch: 1 });
  });

  it('takes no more near the end of its time budget than it can run: the rest stay in the queue, never received', async () => {
    const s = await fresh();
    const journal = tempFile('journal.jsonl');
    await s.publisher.publishBatch(Array.from({ length: 10 }, (_, n) => ({ task: 'lull', payload: { journal, ms: 1500, n } })));
    // 5 s usable; concurrency 4; a lull needs 4.2 s of budget (its 4 s limit and the kill grace) and
    // runs 1.5 s: the first receive (if the threads are ready within 0.8 s) takes at most the four
    // free slots, and by the time they free up no lull fits the time left, so nothing more is
    // received. On a starved machine a message received in time may start too late to end in time:
    // it goes back at once, unrun (a release), which is what the budget demands. So what is
    // counted: no more than four received, each run to success or handed back visible, nothing
    // else received, nothing lost.
    const summary = await s.runtime.invoke(Date.now() + 5200);
    const outcomes = s.jobs().map((j) => j.outcome);
    expect(outcomes.length).toBeLessThanOrEqual(4);
    const succeeded = outcomes.filter((o) => o === 'succeeded').length;
    expect(outcomes.filter((o) => o !== 'succeeded' && o !== 'released')).toEqual([]);
    expect(readJournal(journal)).toHaveLength(succeeded);
    expect(await s.depth('urgent')).toEqual({ visible: 10 - succeeded, inFlight: 0, delayed: 0 });
    expect(summary.queues.urgent?.released ?? 0).toBe(outcomes.length - succeeded);
  });
});

describe("dispatcher.isolation: 'inline'", () => {
  it('runs task bodies on the dispatcher thread: no pool thread loads the bundle', async () => {
    // A bundle path no thread could load: with threads the task would crash; inline never reads it.
    const inline: TaskBundle = {
      ...bundle,
      path: '/nonexistent/tasks.cjs',
      config: { ...bundle.config, dispatcher: { ...bundle.config.dispatcher, isolation: 'inline' } },
    };
    current = await system(h, inline);
    const journal = tempFile('journal.jsonl');
    const { jobId } = await current.publisher.publish('record', { journal, n: 7 });
    await runUntil(current.runtime, 'the task to run', () => current?.jobs().length === 1);
    expect(current.jobs()[0]).toMatchObject({ jobId, outcome: 'succeeded' });
    expect(readJournal(journal)).toEqual([{ task: 'record', n: 7, jobId, attempt: 1, appData: null }]);
  });
});
