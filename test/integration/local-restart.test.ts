/**
 * A `taskworker dev` restarted on the same state directory carries on with every job: the tables
 * are kept by dynalite on disk, the queues' messages and the bucket's objects are written at a clean
 * stop and put back at the start. Jobs published while nothing consumed (queued, delayed, one sent
 * raw with no id, one whose payload went to the bucket, one mid-retry on an untracked queue) each run
 * once after the restart, under the ids they were published with; a finished job's record is still
 * there. `reset` starts empty; a dev that was killed is noticed and not half put back; a directory
 * a running dev holds is refused.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { SqsQueueClient } from '../../lib/adapters/sqs';
import { DevStateInUseError } from '../../lib/errors';
import { type LocalStack, startLocalStack } from '../../lib/local/dev';
import { FIXTURE_CONFIG, tempFile } from '../helpers/emulators';
import { eventually, readJournal } from '../helpers/run';

let stack: LocalStack | undefined;
afterEach(async () => {
  await stack?.stop();
  stack = undefined;
});

const start = async (stateDir: string, reset = false) => {
  stack = await startLocalStack({ configFile: FIXTURE_CONFIG, stateDir, reset });
  return stack;
};

/** Stops a stack cleanly and forgets it (so afterEach does not stop it twice). */
async function stopCleanly(local: LocalStack): Promise<void> {
  await local.stop();
  stack = undefined;
}

describe('taskworker dev: a restart keeps the jobs', () => {
  it('queued, delayed, raw, large and retrying jobs each run once after a clean stop and a start; a finished one is still recorded', async () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'tw-state-'));
    const journal = tempFile('journal.jsonl');
    const first = await start(stateDir);
    expect(first.state).toEqual({ dir: stateDir, found: { kind: 'new' } });

    const finished = await first.publisher.publish('record', { journal, n: 1 });
    await eventually('the first job to finish', async () => (await first.jobs.get(finished.jobId))?.state === 'succeeded', 30_000);
    // On the untracked queue a job counts its attempts by the message's receives: one failed attempt, then the stop.
    await first.publisher.publish('flaky', { journal, succeedOn: 2, tag: 'untracked' }, { queue: 'bulk' });
    await eventually('the untracked job’s first attempt', () => readJournal(journal).some((e) => e.tag === 'untracked'), 30_000);
    await first.stopDispatchers();

    const queued = await first.publisher.publish('record', { journal, n: 2 });
    const delayed = await first.publisher.publish('record', { journal, n: 3 }, { delaySeconds: 4 });
    const large = await first.publisher.publish('record', { journal, n: 4, pad: 'x'.repeat(250_000) });
    // Due long after the test: it must come back still delayed, not run at the start.
    const later = await first.publisher.publish('record', { journal, n: 6 }, { delaySeconds: 900 });
    const raw = await first.sqs.send(
      new SendMessageCommand({
        QueueUrl: first.urls.queues.urgent,
        MessageBody: JSON.stringify({ task: 'record', payload: { journal, n: 5 } }),
      }),
    );
    await stopCleanly(first);
    expect(existsSync(join(stateDir, 'snapshot'))).toBe(true);

    const second = await start(stateDir);
    expect(second.state?.found).toEqual({ kind: 'kept' });
    // Five on urgent, the retrying one on bulk; the large payload's object.
    expect(second.state?.restored).toMatchObject({ messages: 6, objects: 1 });
    expect(existsSync(join(stateDir, 'snapshot'))).toBe(false);
    expect(await second.jobs.get(finished.jobId)).toMatchObject({ state: 'succeeded', attempt: 1 });

    const ids = [queued.jobId, delayed.jobId, large.jobId, raw.MessageId as string];
    await eventually(
      'every kept job to succeed',
      async () => (await Promise.all(ids.map(async (id) => (await second.jobs.get(id))?.state))).every((s) => s === 'succeeded'),
      60_000,
    );
    await eventually(
      'the untracked job’s second attempt',
      () => readJournal(journal).filter((e) => e.tag === 'untracked').length === 2,
      30_000,
    );
    const entries = readJournal(journal);
    // Each ran once, under the id it was published with (the raw one's: its first message's id).
    const ran = entries.filter((e) => e.task === 'record').map((e) => [e.n as number, e.jobId, e.attempt] as const);
    expect(ran.sort((a, b) => a[0] - b[0])).toEqual([
      [1, finished.jobId, 1],
      [2, queued.jobId, 1],
      [3, delayed.jobId, 1],
      [4, large.jobId, 1],
      [5, raw.MessageId, 1],
    ]);
    // The retry went on from its first attempt's receive: attempt 2 succeeded, no attempt counted twice.
    expect(entries.filter((e) => e.tag === 'untracked').map((e) => e.attempt)).toEqual([1, 2]);
    // A job's record says `succeeded` before its message's delete lands (the record first, so a crash
    // between the two leaves a duplicate, never a lost end): the queue is read once the deletes landed.
    const queues = new SqsQueueClient(second.sqs);
    const urgent = () => queues.depth(second.urls.queues.urgent as string);
    await eventually('the kept jobs’ messages to be deleted', async () => (await urgent()).inFlight === 0, 30_000);
    expect(await urgent()).toEqual({ visible: 0, inFlight: 0, delayed: 1 });
    expect(await second.jobs.get(later.jobId)).toMatchObject({ state: 'scheduled' });
    expect(entries.some((e) => e.n === 6)).toBe(false);
  }, 180_000);

  it('reset starts empty', async () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'tw-state-'));
    const first = await start(stateDir);
    await first.stopDispatchers();
    const { jobId } = await first.publisher.publish('record', { journal: tempFile('j.jsonl'), n: 1 });
    await stopCleanly(first);

    const second = await start(stateDir, true);
    expect(second.state).toEqual({ dir: stateDir, found: { kind: 'reset' } });
    expect(await second.jobs.get(jobId)).toBeUndefined();
    const queues = new SqsQueueClient(second.sqs);
    expect(await queues.depth(second.urls.queues.urgent as string)).toEqual({ visible: 0, inFlight: 0, delayed: 0 });
  }, 120_000);

  it('after a dev that was killed: noticed, and started empty rather than with records whose messages died', async () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'tw-state-'));
    const first = await start(stateDir);
    await first.stopDispatchers();
    const { jobId } = await first.publisher.publish('record', { journal: tempFile('j.jsonl'), n: 1 });
    await stopCleanly(first);
    // What a killed dev leaves: its owner file, naming a process that is gone.
    const gone = spawnSync(process.execPath, ['-e', '']).pid;
    writeFileSync(join(stateDir, 'owner.json'), JSON.stringify({ pid: gone }));

    const second = await start(stateDir);
    expect(second.state?.found).toEqual({ kind: 'unclean', pid: gone });
    expect(await second.jobs.get(jobId)).toBeUndefined();
    const queues = new SqsQueueClient(second.sqs);
    expect(await queues.depth(second.urls.queues.urgent as string)).toEqual({ visible: 0, inFlight: 0, delayed: 0 });
  }, 120_000);

  it('a directory a running dev keeps its state in is refused, and that dev goes on', async () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'tw-state-'));
    const running = await start(stateDir);
    await expect(startLocalStack({ configFile: FIXTURE_CONFIG, stateDir })).rejects.toThrow(DevStateInUseError);
    const journal = tempFile('j.jsonl');
    await running.publisher.publish('record', { journal, n: 1 });
    await eventually('the running dev to go on', () => readJournal(journal).length === 1, 30_000);
  }, 120_000);
});
