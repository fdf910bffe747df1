import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { SqsQueueClient } from '../../lib/adapters/sqs';
import { readArchiveRecord } from '../../lib/archive';
import { type LocalStack, startLocalStack } from '../../lib/local/dev';
import type { BatchReport } from '../../lib/summary';
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

  /** Publishes a task that kills its dispatcher process, restarting dispatchers until `done`. */
  async function crashLoop(local: LocalStack, queue: string, done: () => Promise<boolean>): Promise<number> {
    await local.publisher.publish('kill-process', {}, { queue });
    let crashes = 0;
    await eventually(
      'the poison message to leave its queue',
      async () => {
        if (await done()) return true;
        const last = local.dispatchers[local.dispatchers.length - 1];
        if (last && last.exitCode === null && last.signalCode === null) return false;
        crashes += 1;
        local.startDispatcher();
        return false;
      },
      40_000,
    );
    return crashes;
  }

  it('untracked: moves a message that crashes the dispatcher every time to the DLQ via redrive', async () => {
    stack = await startLocalStack({ configFile: FIXTURE_CONFIG, dispatchers: 1 });
    const local = stack;
    const queues = new SqsQueueClient({ client: local.sqs });
    const crashes = await crashLoop(local, 'bulk', async () => (await queues.depth(local.urls.deadLetter.bulk as string)).visible === 1);
    // bulk's maxReceiveCount is 3: three receives crashed a dispatcher, the fourth moved it.
    expect(crashes).toBe(3);
    expect(await queues.depth(local.urls.queues.bulk as string)).toEqual({ visible: 0, inFlight: 0, delayed: 0 });
  });

  it('tracked: archives a message that crashes the dispatcher every time, once its attempts are spent', async () => {
    stack = await startLocalStack({ configFile: FIXTURE_CONFIG, dispatchers: 1 });
    const local = stack;
    const queues = new SqsQueueClient({ client: local.sqs });
    const archived = async () => (await queues.depth(local.urls.archive)).visible === 1;
    const crashes = await crashLoop(local, 'routine', archived);
    // maxRetries 1: two claimed attempts died with their process; the third claim archives it
    // (before SQS's redrive, which would have moved it on the fourth receive).
    expect(crashes).toBe(2);
    const [message] = await queues.receive(local.urls.archive, { maxMessages: 1, waitSeconds: 0, visibilityTimeoutSeconds: 30 });
    const record = readArchiveRecord(message?.attributes ?? {});
    expect(record).toMatchObject({ reason: 'exhausted', errorType: 'WorkerLostError', attempts: 3 });
    expect(await local.jobs.get(record?.jobId as string)).toMatchObject({ state: 'archived', reason: 'exhausted', attempt: 3 });
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
