/**
 * Celery's own messages on the emulators (fauxqs, dynalite) with the real dispatcher runtime, sent
 * by the real Celery and kombu (Debian's python3-celery 5.2) through kombu's SQS transport: a
 * `send_task` runs its taskworker task once and its record is the Celery id's; positional args
 * run through the task's celeryArgs; an eta a few seconds ahead runs after it, one an hour ahead is
 * parked; a pickle body, a protocol v1 message and a Celery message on a queue that does not accept
 * Celery are archived with their reasons and never run. Skips, saying so, only where python3-celery
 * is not installed (.ci/run installs it).
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { type ProvisionedVersion, provisionVersion } from '../../lib/local/version';
import { silentLogger } from '../../lib/ports';
import type { BatchReport } from '../../lib/settle/report';
import type { JobRecord } from '../../lib/track/job-record';
import { type ArchiveRecord, readArchiveRecord } from '../../lib/wire/archive-record';
import { cli } from '../helpers/cli';
import {
  buildFixtureBundle,
  type EmulatorHarness,
  keepDispatching,
  type RunningDispatcher,
  startHarness,
  stopHarness,
  tempFile,
} from '../helpers/emulators';
import { eventually } from '../helpers/run';
import { describeWithTools } from '../helpers/tools';

const FIXTURE = join(__dirname, '..', 'fixtures', 'celery');
const describeWithCelery = describeWithTools('celery-interop', 'celery');

let h: EmulatorHarness;
let dynamo: DynamoDBClient;
let v: ProvisionedVersion;
let running: RunningDispatcher | undefined;
const reports: BatchReport[] = [];
const journal = tempFile('celery-journal.jsonl');

interface Send {
  task: string;
  id: string;
  queue: 'orders' | 'plain';
  args?: unknown[];
  kwargs?: Record<string, unknown>;
  countdown?: number;
  eta_in_seconds?: number;
  serializer?: 'json' | 'pickle';
  protocol?: 1 | 2;
}

/** Runs the fixture's send_task.py: Celery publishing through kombu's SQS transport to fauxqs. Returns the etas it sent, by id. */
async function sendWithCelery(sends: Send[]): Promise<Record<string, string>> {
  const queues = `orders=${v.urls.queues.orders},plain=${v.urls.queues.plain}`;
  // Asynchronously: the emulators answer from this process.
  const { stdout } = await promisify(execFile)('python3', [join(FIXTURE, 'send_task.py'), queues, JSON.stringify(sends)], {
    env: {
      ...process.env,
      AWS_ENDPOINT_URL: h.emulators.sqsEndpoint,
      AWS_ACCESS_KEY_ID: 'test',
      AWS_SECRET_ACCESS_KEY: 'test',
      AWS_DEFAULT_REGION: 'us-east-1',
    },
    timeout: 60_000,
  });
  return (JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}') as { etas: Record<string, string> }).etas;
}

const record = (id: string) => v.jobs.get(id) as Promise<JobRecord | undefined>;

/** `taskworker jobs show ID` against the emulators, as an operator runs it. */
async function showJob(id: string) {
  const saved = { ...process.env };
  Object.assign(process.env, {
    AWS_REGION: 'us-east-1',
    AWS_ENDPOINT_URL_SQS: h.emulators.sqsEndpoint,
    AWS_ENDPOINT_URL_DYNAMODB: h.emulators.dynamodbEndpoint,
    AWS_ACCESS_KEY_ID: 'test',
    AWS_SECRET_ACCESS_KEY: 'test',
  });
  try {
    return await cli('jobs', 'show', id, '--version', v.version, '--config', join(FIXTURE, 'taskworker.config.ts'));
  } finally {
    process.env = saved;
  }
}
const runsOf = (id: string) =>
  existsSync(journal)
    ? readFileSync(journal, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as { jobId: string; attempt: number; appData: unknown })
        .filter((run) => run.jobId === id)
    : [];
const outcomes = (id: string) => reports.flatMap((r) => r.jobs).filter((j) => j.jobId === id || j.jobId === undefined);

/** The archive's records, read without taking them (visibility 0). */
async function archived(): Promise<Array<{ body: string; record: ArchiveRecord | undefined }>> {
  const out = await h.sqs.send(
    new ReceiveMessageCommand({ QueueUrl: v.urls.archive, MaxNumberOfMessages: 10, MessageAttributeNames: ['All'], VisibilityTimeout: 0 }),
  );
  return (out.Messages ?? []).map((m) => ({
    body: m.Body ?? '',
    record: readArchiveRecord(Object.fromEntries(Object.entries(m.MessageAttributes ?? {}).map(([k, a]) => [k, a.StringValue ?? '']))),
  }));
}

async function archivedAs(envelopeId: string): Promise<{ body: string; record: ArchiveRecord | undefined }> {
  let found: { body: string; record: ArchiveRecord | undefined } | undefined;
  await eventually(
    `${envelopeId} in the archive`,
    async () => {
      found = (await archived()).find((a) => a.record?.envelopeId === envelopeId);
      return found !== undefined;
    },
    30_000,
  );
  return found as { body: string; record: ArchiveRecord | undefined };
}

describeWithCelery('Celery’s send_task through kombu’s SQS transport to a taskworker queue', () => {
  beforeAll(async () => {
    h = await startHarness();
    const local = { region: 'us-east-1', credentials: { accessKeyId: 'test', secretAccessKey: 'test' } };
    dynamo = new DynamoDBClient({ ...local, endpoint: h.emulators.dynamodbEndpoint });
    const bundle = await buildFixtureBundle(join(FIXTURE, 'taskworker.config.ts'));
    v = await provisionVersion({ bundle, version: 'cel1', sqs: h.sqs, dynamo });
    running = keepDispatching(
      v.dispatcher({ tracked: true, logger: silentLogger, workerId: 'celery-d1', observer: { onBatch: (r) => reports.push(r) } }),
    );
  }, 120_000);

  afterAll(async () => {
    await running?.stop();
    dynamo?.destroy();
    await stopHarness(h);
  });

  it('runs send_task’s kwargs once as the task answering to its name, and the job’s record is the Celery id’s', async () => {
    const id = '6f1c2e8a-0b4d-4c7e-9f3a-1d2e3f4a5b6c';
    await sendWithCelery([{ task: 'tasks.add', id, queue: 'orders', kwargs: { x: 2, y: 3, journal } }]);

    await eventually('the Celery job to succeed', async () => (await record(id))?.state === 'succeeded', 30_000);
    const done = (await record(id)) as JobRecord;
    expect(done).toMatchObject({ jobId: id, task: 'add', state: 'succeeded', attempt: 1, result: '5', queue: 'orders', tags: ['celery'] });
    expect(done.history.filter((entry) => entry.what === 'started')).toHaveLength(1);
    expect(runsOf(id)).toEqual([{ jobId: id, attempt: 1, appData: { celery: { task: 'tasks.add', retries: 0, root_id: id } } }]);
  }, 90_000);

  it('names positional args through the task’s celeryArgs', async () => {
    const id = 'celery-args-1';
    await sendWithCelery([{ task: 'tasks.add', id, queue: 'orders', args: [20, 22, journal] }]);
    await eventually('the args job to succeed', async () => (await record(id))?.state === 'succeeded', 30_000);
    expect(await record(id)).toMatchObject({ result: '42', attempt: 1 });
    expect(runsOf(id)).toHaveLength(1);
  }, 90_000);

  it('holds a countdown’s job until its eta, and parks one an hour ahead in the jobs table', async () => {
    const soon = 'celery-eta-soon';
    const later = 'celery-eta-later';
    const etas = await sendWithCelery([
      // Long enough that the dispatcher surely receives it before its eta, however slow the machine.
      { task: 'tasks.add', id: soon, queue: 'orders', kwargs: { x: 1, y: 1, journal }, countdown: 10 },
      { task: 'tasks.add', id: later, queue: 'orders', kwargs: { x: 1, y: 2, journal }, eta_in_seconds: 3_600 },
    ]);

    await eventually('the countdown job to succeed', async () => (await record(soon))?.state === 'succeeded', 45_000);
    // Its first delivery was held (sent back delayed to its eta), not run: one run, after the eta.
    expect(outcomes(soon).some((j) => j.jobId === soon && j.outcome === 'scheduled')).toBe(true);
    expect(runsOf(soon)).toHaveLength(1);
    const ran = (await record(soon)) as JobRecord;
    expect(ran.attempt).toBe(1);

    await eventually('the eta an hour ahead to be parked', async () => (await record(later))?.state === 'scheduled', 30_000);
    expect(await record(later)).toMatchObject({ task: 'add', runAt: Date.parse(etas[later] as string) });
    expect(runsOf(later)).toHaveLength(0);
  }, 90_000);

  it('archives a pickle body with its reason and the Celery id filed, and never runs it', async () => {
    const id = 'celery-pickle-1';
    await sendWithCelery([{ task: 'tasks.add', id, queue: 'orders', args: [1, 2, journal], serializer: 'pickle' }]);
    const { record: why } = await archivedAs(id);
    expect(why).toMatchObject({ reason: 'malformed', code: 'celery-content-type', queue: 'orders' });
    expect(why?.detail).toContain('"application/x-python-serialize" (pickle)');
    // Its record is its own message's, filed under the Celery id (jobs show finds it), never the id's job.
    await eventually('its record filed under the Celery id', async () => (await v.jobs.rejectionsFor(id)).length > 0, 10_000);
    expect((await v.jobs.rejectionsFor(id)).map((r) => [r.reason, r.envelopeId, r.state])).toEqual([['malformed', id, 'archived']]);
    expect(await record(id)).toBeUndefined();
    expect(runsOf(id)).toHaveLength(0);
  }, 90_000);

  it('archives a protocol v1 message and one sent to a queue that does not accept Celery, and runs neither', async () => {
    await sendWithCelery([
      { task: 'tasks.add', id: 'celery-v1-1', queue: 'orders', kwargs: { x: 1, y: 2, journal }, protocol: 1 },
      { task: 'tasks.add', id: 'celery-plain-1', queue: 'plain', kwargs: { x: 1, y: 2, journal } },
    ]);
    await eventually(
      'both in the archive',
      async () => {
        const codes = (await archived()).map((a) => a.record?.code);
        return codes.includes('celery-protocol') && codes.includes('celery-not-accepted');
      },
      30_000,
    );
    const all = await archived();
    const v1 = all.find((a) => a.record?.code === 'celery-protocol')?.record;
    expect(v1?.detail).toContain('protocol v1');
    const plain = all.find((a) => a.record?.code === 'celery-not-accepted')?.record;
    expect(plain).toMatchObject({ reason: 'malformed', queue: 'plain', envelopeId: 'celery-plain-1' });
    expect(plain?.detail).toContain("add 'celery' to the queue's accept");
    expect(runsOf('celery-v1-1')).toHaveLength(0);
    expect(runsOf('celery-plain-1')).toHaveLength(0);
  }, 90_000);

  it('files a refused protocol 1 message under its Celery id, JSON or pickle: jobs show <celery id> finds it and says why', async () => {
    await sendWithCelery([
      { task: 'tasks.add', id: 'celery-v1-json', queue: 'orders', args: [1, 2, journal], protocol: 1 },
      { task: 'tasks.add', id: 'celery-v1-pickle', queue: 'orders', args: [1, 2, journal], protocol: 1, serializer: 'pickle' },
    ]);
    for (const id of ['celery-v1-json', 'celery-v1-pickle']) {
      expect((await archivedAs(id)).record).toMatchObject({ reason: 'malformed', code: 'celery-protocol', queue: 'orders' });
      await eventually(`${id}'s record filed under it`, async () => (await v.jobs.rejectionsFor(id)).length > 0, 10_000);
      const shown = await showJob(id);
      expect({ code: shown.code, err: shown.err }).toEqual({ code: 0, err: '' });
      expect(shown.out).toContain(`no job ${id} of its own in version cel1`);
      expect(shown.out).toMatch(/malformed: Celery message refused \(celery-protocol\): .*protocol v1/);
      expect(await record(id)).toBeUndefined();
      expect(runsOf(id)).toHaveLength(0);
    }
  }, 90_000);
});
