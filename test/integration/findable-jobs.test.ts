/**
 * Issue 25, on the emulators under `taskworker dev`: a job published to run later exists from its
 * publish (shown, cancelled, and its message deleted unrun when it arrives), and an id a publisher
 * gave stays findable when its message is archived under its own message id for its envelope.
 */
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { type LocalStack, startLocalStack } from '../../lib/local/dev';
import type { JobShowAnswer } from '../../lib/operate/answers';
import type { ArchivedMessage } from '../../lib/operate/archive';
import type { JobRecord } from '../../lib/track/job-record';
import { encodeEnvelope } from '../../lib/wire/envelope';
import { cli } from '../helpers/cli';
import { FIXTURE_CONFIG, tempFile } from '../helpers/emulators';
import { celeryMessage } from '../helpers/factories';
import { eventually, readJournal } from '../helpers/run';

describe('jobs findable from their publish, against taskworker dev', () => {
  let stack: LocalStack;
  const saved = { ...process.env };
  const journal = tempFile('journal.jsonl');
  const run = (...argv: string[]) => cli(...argv, '--version', stack.version, '--config', FIXTURE_CONFIG);

  beforeAll(async () => {
    stack = await startLocalStack({ configFile: FIXTURE_CONFIG });
    Object.assign(process.env, stack.env);
  });
  afterAll(async () => {
    process.env = saved;
    await stack.stop();
  });

  it('a 10-minute-delayed job is visible and cancellable: publish --delay 600, jobs show, jobs cancel; its message is deleted unrun', async () => {
    const payload = { journal, n: 'later-1' };
    const before = Date.now();
    const published = await run('publish', 'record', '--payload', JSON.stringify(payload), '--id', 'later-1', '--delay', '600', '--json');
    expect({ code: published.code, err: published.err }).toEqual({ code: 0, err: '' });
    const { runAt } = JSON.parse(published.out) as { runAt: number };
    expect(runAt).toBeGreaterThanOrEqual(before + 600_000);

    const shown = await run('jobs', 'show', 'later-1', '--json');
    expect(shown.code).toBe(0);
    expect(JSON.parse(shown.out)).toMatchObject({ job: { jobId: 'later-1', state: 'scheduled', runAt, task: 'record' } });
    expect((await run('jobs', 'show', 'later-1')).out).toMatch(new RegExp(`due\\s+${new Date(runAt).toISOString()}`));
    const listed = JSON.parse((await run('jobs', 'list', '--state', 'scheduled', '--json')).out) as { jobs?: JobRecord[] } | JobRecord[];
    const jobs = Array.isArray(listed) ? listed : (listed.jobs ?? []);
    expect(jobs.map((j) => j.jobId)).toContain('later-1');

    const cancelled = await run('jobs', 'cancel', 'later-1');
    expect(cancelled.code).toBe(0);
    expect(cancelled.out).toContain('cancelled job later-1');
    expect(await stack.jobs.get('later-1')).toMatchObject({ state: 'cancelled' });

    // The delayed message itself arrives in ten minutes; an identical copy sent now stands for it.
    await stack.sqs.send(
      new SendMessageCommand({
        QueueUrl: stack.urls.queues.urgent as string,
        MessageBody: encodeEnvelope({ task: 'record', payload, id: 'later-1' }),
      }),
    );
    await eventually('its message to be deleted unrun', async () =>
      ((await stack.jobs.get('later-1'))?.history ?? []).some((h) => h.what === 'skipped-duplicate'),
    );
    expect(await stack.jobs.get('later-1')).toMatchObject({ state: 'cancelled', attempt: 0 });
    expect(readJournal(journal).filter((e) => e.n === 'later-1')).toEqual([]);
  }, 60_000);

  it("an unknown-task message's envelope id finds its archived record, and says why it is filed there", async () => {
    const sent = await stack.sqs.send(
      new SendMessageCommand({
        QueueUrl: stack.urls.queues.urgent as string,
        MessageBody: JSON.stringify({ task: 'py-batch-task', id: 'py-batch-u0', payload: { n: 0 } }),
      }),
    );
    const messageId = sent.MessageId as string;
    await eventually('the message to be archived under its own id', async () => (await stack.jobs.get(messageId))?.state === 'archived');
    expect(await stack.jobs.get('py-batch-u0')).toBeUndefined();

    const shown = await run('jobs', 'show', 'py-batch-u0', '--json');
    expect(shown.code).toBe(0);
    const view = JSON.parse(shown.out) as JobShowAnswer;
    expect(view.job).toBeNull();
    expect(view.filedUnderMessageIds).toEqual([
      expect.objectContaining({
        messageId,
        reason: 'unknown-task',
        why: `task "py-batch-task" is not registered in version ${stack.version}`,
        record: expect.objectContaining({ envelopeId: 'py-batch-u0', state: 'archived' }),
      }),
    ]);
    const text = (await run('jobs', 'show', 'py-batch-u0')).out;
    expect(text).toContain('no job py-batch-u0 of its own');
    expect(text).toContain(messageId);
    expect(text).toContain('task "py-batch-task" is not registered');
  }, 60_000);

  it('a refused Celery message: archive list prints its whole reason, --json carries it, and jobs show <celery id> finds it', async () => {
    const sent = await stack.sqs.send(
      new SendMessageCommand({
        QueueUrl: stack.urls.queues.urgent as string,
        MessageBody: celeryMessage('celery-refused-1', { contentType: 'application/x-python-serialize' }),
      }),
    );
    const messageId = sent.MessageId as string;
    await eventually(
      'the Celery message to be archived under its own id',
      async () => (await stack.jobs.get(messageId))?.state === 'archived',
    );

    // The fixture's queues do not accept Celery: the reason's decisive words are its last ones.
    const listed = JSON.parse((await run('archive', 'list', '--reason', 'malformed', '--json')).out) as ArchivedMessage[];
    const archived = listed.find((m) => m.messageId === messageId || m.record?.jobId === messageId);
    const detail = archived?.record?.detail as string;
    expect(detail).toMatch(
      /^Celery message refused \(celery-not-accepted\): .*add 'celery' to the queue's accept in the config to run it$/,
    );
    expect(detail.length).toBeGreaterThan(120);
    const text = (await run('archive', 'list', '--reason', 'malformed')).out;
    const row = text.split('\n').findIndex((line) => line.includes(messageId));
    expect(text.split('\n')[row]).toMatch(/malformed\s+urgent\s+tasks\.add/);
    expect(text.split('\n')[row + 1]).toBe(`    ${detail}`);

    const shown = await run('jobs', 'show', 'celery-refused-1');
    expect(shown.code).toBe(0);
    expect(shown.out).toContain('no job celery-refused-1 of its own');
    expect(shown.out).toContain(messageId);
    expect(shown.out).toContain("add 'celery' to the queue's accept");
  }, 60_000);

  it("a stranger's message carrying a real job's id: both shown apart, the job's record untouched", async () => {
    const payload = { journal, n: 'real-1' };
    expect((await run('publish', 'record', '--payload', JSON.stringify(payload), '--id', 'real-1')).code).toBe(0);
    await eventually('the real job to succeed', async () => (await stack.jobs.get('real-1'))?.state === 'succeeded');
    const before = await stack.jobs.get('real-1');
    const sent = await stack.sqs.send(
      new SendMessageCommand({
        QueueUrl: stack.urls.queues.urgent as string,
        MessageBody: encodeEnvelope({ task: 'record', payload: { journal, n: 'stranger' }, id: 'real-1' }),
      }),
    );
    const messageId = sent.MessageId as string;
    await eventually('the stranger to be archived as id-conflict', async () => (await stack.jobs.get(messageId))?.reason === 'id-conflict');
    expect(await stack.jobs.get('real-1')).toEqual(before);

    const view = JSON.parse((await run('jobs', 'show', 'real-1', '--json')).out) as JobShowAnswer;
    expect(view.job).toMatchObject({ jobId: 'real-1', state: 'succeeded' });
    expect(view.filedUnderMessageIds).toEqual([
      expect.objectContaining({ messageId, reason: 'id-conflict', why: expect.stringContaining('id real-1 belongs to another job') }),
    ]);
    const text = (await run('jobs', 'show', 'real-1')).out;
    expect(text.indexOf('job real-1')).toBeLessThan(text.indexOf('never ran as this job'));
  }, 60_000);
});
