import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { SqsQueueClient } from '../../lib/adapters/sqs';
import { type DispatcherExit, type LocalStack, startLocalStack } from '../../lib/local/dev';
import type { BatchReport } from '../../lib/settle/report';
import { readArchiveRecord } from '../../lib/wire/archive-record';
import { FIXTURE_CONFIG, tempFile } from '../helpers/emulators';
import { eventually, readJournal } from '../helpers/run';

let stack: LocalStack | undefined;
afterEach(async () => {
  await stack?.stop();
  stack = undefined;
});

describe('taskworker dev (local runtime)', () => {
  it('runs a task module the project never saw, from a plain SDK SendMessage', async () => {
    const tasksDir = mkdtempSync(join(tmpdir(), 'tw-user-tasks-'));
    // A user's module: no taskworker import, plain ESM, default-exporting the task shape.
    writeFileSync(
      join(tasksDir, 'greet.mjs'),
      [
        "import { appendFileSync } from 'node:fs';",
        'export default {',
        "  name: 'greet', queue: 'urgent', timeLimitSeconds: 2,",
        '  run(payload, ctx) { appendFileSync(payload.out, JSON.stringify({ hello: payload.name, jobId: ctx.jobId }) + "\\n"); },',
        '};',
      ].join('\n'),
    );
    const reports: BatchReport[] = [];
    stack = await startLocalStack({ configFile: FIXTURE_CONFIG, tasksDir, onBatch: (r) => reports.push(r) });
    expect(stack.bundle.tasks.map((t) => t.name)).toEqual(['greet']);
    const out = tempFile('greetings.jsonl');
    const sent = await stack.sqs.send(
      new SendMessageCommand({
        QueueUrl: stack.urls.queues.urgent,
        MessageBody: JSON.stringify({ task: 'greet', payload: { name: 'world', out } }),
      }),
    );
    await eventually('the greeting', () => readJournal(out).length === 1);
    expect(readJournal(out)).toEqual([{ hello: 'world', jobId: sent.MessageId }]);
    await eventually('the batch report', () => reports.length === 1);
    expect(reports[0]?.jobs[0]).toMatchObject({ task: 'greet', outcome: 'succeeded' });
  });

  /** A stack whose dispatcher exits are kept, as `taskworker dev` reports them. */
  async function healingStack(): Promise<{ local: LocalStack; exits: DispatcherExit[] }> {
    const exits: DispatcherExit[] = [];
    stack = await startLocalStack({ configFile: FIXTURE_CONFIG, dispatchers: 1, onDispatcherExit: (exit) => exits.push(exit) });
    return { local: stack, exits };
  }

  it('untracked: a message that kills its dispatcher every time goes to the DLQ; dev replaced each dead dispatcher', async () => {
    const { local, exits } = await healingStack();
    const queues = new SqsQueueClient(local.sqs);
    const { jobId } = await local.publisher.publish('kill-process', {}, { queue: 'bulk' });
    await eventually(
      'the poison message to reach the DLQ',
      async () => (await queues.depth(local.urls.deadLetter.bulk as string)).visible === 1,
      40_000,
    );
    // bulk's maxReceiveCount is 3: three receives each killed a dispatcher, the fourth moved it.
    expect(exits.map((e) => e.signal)).toEqual(['SIGKILL', 'SIGKILL', 'SIGKILL']);
    // Each exit names what its dispatcher held, and the replacement that followed.
    for (const exit of exits) {
      expect(exit.held).toEqual([expect.objectContaining({ queue: 'bulk', jobId, task: 'kill-process' })]);
      expect(exit.replacement?.dispatcher).toBe(exit.dispatcher + 1);
    }
    await eventually('a replacement for the last one', () => local.alive() === 1);
    expect(await queues.depth(local.urls.queues.bulk as string)).toEqual({ visible: 0, inFlight: 0, delayed: 0 });
    // The replacements still work.
    const journal = tempFile('journal.jsonl');
    await local.publisher.publish('record', { journal, n: 1 });
    await eventually('a task on a replacement dispatcher', () => readJournal(journal).length === 1);
  });

  it('dispatchers killed together are each replaced, and each exit names the replacement that did start', async () => {
    const exits: DispatcherExit[] = [];
    const started: number[] = [];
    stack = await startLocalStack({
      configFile: FIXTURE_CONFIG,
      dispatchers: 3,
      onDispatcherExit: (exit) => exits.push(exit),
      onDispatcherStart: (index) => started.push(index),
    });
    const local = stack;
    await eventually('three dispatchers', () => local.alive() === 3);
    for (const child of [...local.dispatchers]) child.kill('SIGKILL');
    await eventually('three replacements', () => local.alive() === 3 && started.length === 6, 30_000);
    expect(exits.map((e) => e.replacement?.dispatcher).sort()).toEqual(started.slice(3).sort());
  });

  it('tracked: archives a message that kills its dispatcher every time, once its attempts are spent', async () => {
    const { local, exits } = await healingStack();
    const queues = new SqsQueueClient(local.sqs);
    await local.publisher.publish('kill-process', {}, { queue: 'routine' });
    await eventually('the poison message to be archived', async () => (await queues.depth(local.urls.archive)).visible === 1, 40_000);
    // maxRetries 1: two claimed attempts died with their process; the third claim archives it.
    expect(exits.map((e) => e.signal)).toEqual(['SIGKILL', 'SIGKILL']);
    const [message] = await queues.receive(local.urls.archive, { maxMessages: 1, waitSeconds: 0, visibilityTimeoutSeconds: 30 });
    const record = readArchiveRecord(message?.attributes ?? {});
    expect(record).toMatchObject({ reason: 'exhausted', errorType: 'WorkerLostError', attempts: 3 });
    // The settle sends to the archive first and writes the job record after it: wait for the record.
    await eventually('the job record to say archived', async () => (await local.jobs.get(record?.jobId as string))?.state === 'archived');
    expect(await local.jobs.get(record?.jobId as string)).toMatchObject({ state: 'archived', reason: 'exhausted', attempt: 3 });
    expect(local.alive()).toBe(1);
  });

  it('backs off when dispatchers keep dying at once after their start', async () => {
    const { local, exits } = await healingStack();
    for (let i = 0; i < 3; i++) await local.publisher.publish('kill-process', {}, { queue: 'bulk' });
    await eventually('three deaths', () => exits.length >= 3, 40_000);
    const delays = exits.map((e) => e.replacement?.afterMs ?? 0);
    expect(delays.slice(0, 3)).toEqual([500, 1000, 2000]);
  });

  it('runs several dispatcher processes and stops them cleanly', async () => {
    const reports: Array<{ dispatcher: number }> = [];
    stack = await startLocalStack({
      configFile: FIXTURE_CONFIG,
      dispatchers: 2,
      onBatch: (_r, dispatcher) => reports.push({ dispatcher }),
    });
    const journal = tempFile('journal.jsonl');
    await stack.publisher.publishBatch(Array.from({ length: 40 }, (_, n) => ({ task: 'record', payload: { journal, n } })));
    await eventually('40 tasks', () => readJournal(journal).length === 40);
    const children = [...stack.dispatchers];
    await stack.stop();
    expect(children.map((c) => [c.exitCode, c.signalCode])).toEqual([
      [0, null],
      [0, null],
    ]);
  });
});
