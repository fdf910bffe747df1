/**
 * `taskworker dev` invoked as in AWS: nothing runs in an idle version; a doorbell queue's trigger
 * starts a doorbell with a real SQS event the moment a message arrives (and another beside a busy
 * one), and the schedule covers the queues without one. What is asserted comes from the tables and
 * the queues.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { GetQueueAttributesCommand, ReceiveMessageCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { resolveConfig } from '../../lib/config/app-config';
import { type LocalStack, startLocalStack } from '../../lib/local/dev';
import type { DispatcherSummary } from '../../lib/settle/report';
import { loadConfigModuleSync } from '../../lib/tasks/build';
import { FIXTURE_CONFIG, tempFile } from '../helpers/emulators';
import { eventually, readJournal } from '../helpers/run';

let stack: LocalStack | undefined;
afterEach(async () => {
  await stack?.stop();
  stack = undefined;
});

async function depth(local: LocalStack, queue: string): Promise<{ visible: number; inFlight: number }> {
  const { Attributes } = await local.sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: local.urls.queues[queue],
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
    }),
  );
  return { visible: Number(Attributes?.ApproximateNumberOfMessages), inFlight: Number(Attributes?.ApproximateNumberOfMessagesNotVisible) };
}

describe('taskworker dev on demand: the doorbell and the schedule', () => {
  it('wakes for a message on a doorbell queue, retries through the trigger, and leaves nothing behind', async () => {
    const invocations: DispatcherSummary[] = [];
    stack = await startLocalStack({
      configFile: FIXTURE_CONFIG,
      invocations: 'on-demand',
      // A schedule that never ticks after the first: only the doorbell can run the jobs.
      schedulePeriodMs: 3_600_000,
      onInvocation: (summary) => invocations.push(summary),
    });
    const local = stack;
    await eventually('the first scheduled invocation to end', () => invocations.length >= 1);
    // An idle version: the scheduled invocation asked the depths and ended without a receive.
    expect(invocations[0]).toMatchObject({ receives: 0, selections: 0 });

    const journal = tempFile('wake.jsonl');
    // What a careless or hostile publisher sends rings the doorbell too: archived with its reason,
    // never run, never touching the jobs beside it in the batch.
    await local.sqs.send(new SendMessageCommand({ QueueUrl: local.urls.queues.urgent, MessageBody: '{"task":' }));
    await local.sqs.send(
      new SendMessageCommand({ QueueUrl: local.urls.queues.urgent, MessageBody: JSON.stringify({ task: 'no-such-task' }) }),
    );
    const once = await local.publisher.publish('record', { journal, n: 1 });
    const twice = await local.publisher.publish('flaky', { journal, succeedOn: 2 });
    await eventually('both jobs to succeed', async () => {
      const [a, b] = await Promise.all([local.jobs.get(once.jobId), local.jobs.get(twice.jobId)]);
      return a?.state === 'succeeded' && b?.state === 'succeeded';
    });
    expect((await local.jobs.get(twice.jobId))?.attempt).toBe(2);
    expect(readJournal(journal).map((e) => [e.task, e.attempt])).toEqual(
      expect.arrayContaining([
        ['record', 1],
        ['flaky', 1],
        ['flaky', 2],
      ]),
    );
    // The doorbell ran them (the schedule did not tick again), and the trigger kept the retried
    // message instead of deleting it: it came back and succeeded. Nothing is left in the queue.
    expect(local.invocationsByFunction()['doorbell-urgent']).toBeGreaterThanOrEqual(1);
    expect(local.invocationsByFunction().dispatcher).toBe(1);
    await eventually('the queue to be empty', async () => {
      const d = await depth(local, 'urgent');
      return d.visible === 0 && d.inFlight === 0;
    });
    const archived = await local.sqs.send(
      new ReceiveMessageCommand({ QueueUrl: local.urls.archive, MaxNumberOfMessages: 10, MessageAttributeNames: ['All'] }),
    );
    expect((archived.Messages ?? []).map((m) => m.MessageAttributes?.['taskworker-reason']?.StringValue).sort()).toEqual([
      'malformed',
      'unknown-task',
    ]);
  });

  it('runs a queue without a doorbell from the schedule, and starts no doorbell for it', async () => {
    const fixture = resolveConfig(loadConfigModuleSync(FIXTURE_CONFIG));
    const configFile = tempFile('schedule-only.json');
    writeFileSync(
      configFile,
      JSON.stringify({
        app: fixture.app,
        tasksDir: join(dirname(FIXTURE_CONFIG), fixture.tasksDir),
        queues: fixture.queues.map((q) => ({ ...q, wakeUp: 'schedule' })),
        dispatcher: { concurrency: 4, timeoutSeconds: 30, settleMarginMs: 200, killGraceMs: 200 },
      }),
    );
    stack = await startLocalStack({ configFile, invocations: 'on-demand', schedulePeriodMs: 2_000 });
    const local = stack;
    const journal = tempFile('scheduled.jsonl');
    const job = await local.publisher.publish('record', { journal, n: 7 });
    await eventually('the job to succeed', async () => (await local.jobs.get(job.jobId))?.state === 'succeeded');
    expect(local.invocationsByFunction()).toEqual({ dispatcher: expect.any(Number) });
    expect(Object.keys(local.containersByFunction())).toEqual(['dispatcher']);
  });

  it('starts a quick job published behind a slow one on the same doorbell queue before the slow one ends', async () => {
    const dir = dirname(tempFile('slow-quick'));
    mkdirSync(join(dir, 'tasks'));
    const configFile = join(dir, 'taskworker.config.json');
    writeFileSync(
      configFile,
      JSON.stringify({
        app: 'twslow',
        tasksDir: 'tasks',
        queues: [{ name: 'urgent', priority: 90, visibilityTimeoutSeconds: 30, longPollSeconds: 0, slaSeconds: 5, wakeUp: 'doorbell' }],
        dispatcher: { concurrency: 4, timeoutSeconds: 30, settleMarginMs: 200, killGraceMs: 200 },
      }),
    );
    // The slow task runs until the test opens its gate: it ends when the test says, not after a guessed time.
    writeFileSync(
      join(dir, 'tasks', 'slow.ts'),
      `import { existsSync } from 'node:fs';
export default {
  name: 'slow',
  queue: 'urgent',
  timeLimitSeconds: 20,
  async run(payload: { gate: string }, ctx: { signal: AbortSignal }) {
    while (!existsSync(payload.gate) && !ctx.signal.aborted) await new Promise((resolve) => setTimeout(resolve, 50));
  },
};
`,
    );
    writeFileSync(join(dir, 'tasks', 'quick.ts'), "export default { name: 'quick', queue: 'urgent', timeLimitSeconds: 2, run() {} };\n");
    const invocations: DispatcherSummary[] = [];
    const started: number[] = [];
    const retired: number[] = [];
    stack = await startLocalStack({
      configFile,
      invocations: 'on-demand',
      schedulePeriodMs: 3_600_000,
      idleContainerMs: 2_000,
      onInvocation: (summary) => invocations.push(summary),
      onDispatcherStart: (index) => started.push(index),
      onDispatcherRetired: (index) => retired.push(index),
    });
    const local = stack;
    await eventually('the first scheduled invocation to end', () => invocations.length >= 1);

    const gate = join(dir, 'gate');
    const slow = await local.publisher.publish('slow', { gate });
    await eventually('the slow job to start', async () => (await local.jobs.get(slow.jobId))?.state === 'running');
    const quick = await local.publisher.publish('quick', {});
    // Before the fix the quick one waited for the slow one's invocation: wait for either to end.
    await eventually(
      'the quick job to succeed or the slow one to end',
      async () => (await local.jobs.get(quick.jobId))?.state === 'succeeded' || (await local.jobs.get(slow.jobId))?.state !== 'running',
      30_000,
    );
    writeFileSync(gate, '');
    await eventually('both jobs to succeed', async () => {
      const [a, b] = await Promise.all([local.jobs.get(slow.jobId), local.jobs.get(quick.jobId)]);
      return a?.state === 'succeeded' && b?.state === 'succeeded';
    });

    const [slowJob, quickJob] = await Promise.all([local.jobs.get(slow.jobId), local.jobs.get(quick.jobId)]);
    expect(quickJob?.firstStartedAt).toBeLessThan(slowJob?.finishedAt as number);
    // Two doorbell invocations, the second on a container started for it (the busy one was not reused):
    // the dispatcher's and the doorbell's containers started up front, and one more.
    expect(local.invocationsByFunction()['doorbell-urgent']).toBe(2);
    expect(started).toHaveLength(3);
    // Idle, the one started on demand is stopped again (no death, no replacement); the one started up front stays.
    await eventually('the container started for the quick job to be stopped once idle', () => retired.length === 1);
    expect(local.containersByFunction()).toEqual({ dispatcher: 1, 'doorbell-urgent': 1 });
    expect(local.deaths()).toBe(0);
  }, 90_000);
});
