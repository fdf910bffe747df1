/**
 * The local doorbell trigger (lib/local/wake.ts) as Lambda's SQS event-source mapping behaves: it
 * polls on while an invocation runs, so a message that arrives behind a slow batch gets an
 * invocation of its own; at its `MaximumConcurrency` it stops polling until one ends; and it
 * deletes what each invocation did not keep once that invocation ends.
 */
import { DeleteMessageBatchCommand, type Message, ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { InvokeResult, LocalFunctions, LocalWakeUp } from '../../lib/local/wake';
import { doorbellFunction, startLocalWakeUp } from '../../lib/local/wake';
import { DOORBELL_MAX_CONCURRENCY } from '../../lib/wake-up';
import { appConfig } from '../helpers/factories';
import { eventually } from '../helpers/run';

const URL = 'http://sqs.us-east-1.localhost/000000000000/test-dev-urgent';

/** One queue: a receive takes what waits (or waits briefly, as a long poll, and returns nothing). */
function fakeQueue() {
  const waiting: Message[] = [];
  const deleted: string[] = [];
  let next = 1;
  const sqs = {
    async send(command: unknown) {
      if (command instanceof ReceiveMessageCommand) {
        if (waiting.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
        return { Messages: waiting.splice(0, command.input.MaxNumberOfMessages ?? 1) };
      }
      if (command instanceof DeleteMessageBatchCommand) {
        deleted.push(...(command.input.Entries ?? []).map((e) => e.Id as string));
        return {};
      }
      throw new Error(`unexpected ${String(command)}`);
    },
  };
  const arrive = (body: string) => waiting.push({ MessageId: `m${next}`, ReceiptHandle: `r${next++}`, Body: body });
  return { sqs: sqs as unknown as SQSClient, waiting, deleted, arrive };
}

/** The doorbell function: each invocation stays open until the test ends it. */
function fakeFunctions() {
  const doorbell: Array<{ bodies: string[]; end: (result: InvokeResult) => void }> = [];
  const functions: LocalFunctions = {
    invoke(fn, event) {
      if (fn !== doorbellFunction('urgent')) return Promise.resolve({ result: {} });
      const bodies = (event as { Records: Array<{ body: string }> }).Records.map((r) => r.body);
      return new Promise((end) => doorbell.push({ bodies, end }));
    },
  };
  return { functions, doorbell };
}

let wake: LocalWakeUp | undefined;
afterEach(async () => {
  await wake?.stop();
  wake = undefined;
});

describe('the local doorbell trigger', () => {
  it('starts an invocation for a message that arrives while a slow batch runs, up to its MaximumConcurrency', async () => {
    const config = appConfig({ queues: [{ name: 'urgent', priority: 90, visibilityTimeoutSeconds: 30, wakeUp: 'doorbell' }] });
    const queue = fakeQueue();
    const { functions, doorbell } = fakeFunctions();
    wake = startLocalWakeUp({
      config,
      urls: { queues: { urgent: URL }, archive: `${URL}-archive` },
      sqs: queue.sqs,
      region: 'us-east-1',
      functions,
      schedulePeriodMs: 3_600_000,
    });

    queue.arrive('slow');
    await eventually('the slow batch to be invoked', () => doorbell.length === 1);
    queue.arrive('quick');
    await eventually('the quick one to get an invocation of its own', () => doorbell.length === 2);

    expect(DOORBELL_MAX_CONCURRENCY).toBe(2);
    queue.arrive('third');
    // At its concurrency the trigger does not poll: the third stays in the queue.
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(doorbell.map((d) => d.bodies)).toEqual([['slow'], ['quick']]);
    expect(queue.waiting.map((m) => m.Body)).toEqual(['third']);

    doorbell[1]?.end({ result: { batchItemFailures: [] } });
    await eventually('the third to be invoked once the quick one ended', () => doorbell.length === 3);
    expect(queue.deleted).toEqual(['m2']);
    // The slow batch kept its message (a retry): the trigger does not delete it.
    doorbell[0]?.end({ result: { batchItemFailures: [{ itemIdentifier: 'm1' }] } });
    doorbell[2]?.end({ result: { batchItemFailures: [] } });
    await eventually('the third to be deleted', () => queue.deleted.includes('m3'));
    expect(queue.deleted).toEqual(['m2', 'm3']);
  });
});
