import { writeFileSync } from 'node:fs';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { SqsQueueClient } from '../../lib/adapters/sqs';
import { STATS_FLUSH_MS } from '../../lib/invocation/stats-buffer';
import { type LocalStack, startLocalStack } from '../../lib/local/dev';
import type { JobShowAnswer } from '../../lib/operate/answers';
import type { VersionStatus } from '../../lib/operate/version-status';
import { utcDay } from '../../lib/policy/stat-sums';
import type { Throughput } from '../../lib/policy/throughput';
import type { JobRecord } from '../../lib/track/job-record';
import type { QueueDayStats } from '../../lib/track/stats-store';
import { encodeEnvelope } from '../../lib/wire/envelope';
import { cli } from '../helpers/cli';
import { FIXTURE_CONFIG, tempFile } from '../helpers/emulators';
import { eventually, readJournal } from '../helpers/run';

describe('operator CLI against taskworker dev', () => {
  let stack: LocalStack;
  let queues: SqsQueueClient;
  const saved = { ...process.env };
  const journal = tempFile('journal.jsonl');
  const gate = tempFile('gate');
  const ids: Record<string, string> = {};
  const run = (...argv: string[]) => cli(...argv, '--version', stack.version, '--config', FIXTURE_CONFIG);
  const archived = async () => (await queues.depth(stack.urls.archive)).visible;

  beforeAll(async () => {
    stack = await startLocalStack({ configFile: FIXTURE_CONFIG });
    Object.assign(process.env, stack.env);
    queues = new SqsQueueClient(stack.sqs);
    const published = await stack.publisher.publishBatch([
      ...[1, 2, 3].map((n) => ({ task: 'record', payload: { journal, n } })),
      { task: 'doomed', payload: {} },
      { task: 'doomed', payload: { fatal: true } },
      { task: 'gated', payload: { gate } },
    ]);
    ids.record = published[0]?.jobId as string;
    ids.doomed = published[3]?.jobId as string;
    ids.gated = published[5]?.jobId as string;
    await stack.sqs.send(new SendMessageCommand({ QueueUrl: stack.urls.queues.urgent, MessageBody: 'not json' }));
    await eventually('three records and four archived', async () => readJournal(journal).length === 3 && (await archived()) === 4, 30_000);
    // Stats are coalesced per dispatcher and written at most STATS_FLUSH_MS after the batches.
    await eventually(
      'the stats of all seven',
      async () => {
        const day = await stack.stats.get('urgent', utcDay(Date.now()));
        const archivedCount = Object.values(day?.archived ?? {}).reduce((a, n) => a + (n ?? 0), 0);
        return day?.counters.succeeded === 3 && archivedCount === 4;
      },
      STATS_FLUSH_MS + 10_000,
    );
  });
  afterAll(async () => {
    process.env = saved;
    await stack.stop();
  });

  it("status: depths, DLQ, archive and today's waits, as a table and as JSON", async () => {
    const json = await run('status', '--json');
    expect(json.code).toBe(0);
    const status = JSON.parse(json.out) as VersionStatus;
    expect(status).toMatchObject({ version: stack.version, archive: 4, drained: true });
    const urgent = status.queues.find((q) => q.queue === 'urgent');
    expect(urgent).toMatchObject({ depth: { visible: 0, inFlight: 0, delayed: 0 }, deadLetter: 0, slaSeconds: 5 });
    expect(urgent?.waitP50Ms).toBeGreaterThan(0);
    const text = await run('status');
    expect(text.out).toMatch(/version \S+ · drained/);
    expect(text.out).toMatch(/urgent\s+90\s+0\s+0\s+0\s+n\/a/);
  });

  it('jobs show: state, attempts, error and history', async () => {
    const json = await run('jobs', 'show', ids.doomed as string, '--json');
    const { job } = JSON.parse(json.out) as JobShowAnswer;
    expect(job).toMatchObject({
      state: 'archived',
      reason: 'exhausted',
      attempt: 2,
      lastError: { type: 'Error', message: 'downstream said no' },
    });
    const text = await run('jobs', 'show', ids.record as string);
    expect(text.out).toContain(`job ${ids.record}`);
    expect(text.out).toMatch(/state\s+succeeded\s+attempts 1/);
    expect(text.out).toMatch(/queued[\s\S]*started[\s\S]*succeeded/);
  });

  it('jobs show: an unknown id is a clear error', async () => {
    const result = await run('jobs', 'show', 'no-such-job');
    expect(result.code).toBe(1);
    expect(result.err).toMatch(/no job no-such-job in version/);
  });

  it('jobs show --json: one shape for a job, for nothing found, and the result as the value the task returned', async () => {
    const found = await run('jobs', 'show', ids.record as string, '--json');
    expect(found.code).toBe(0);
    const answer = JSON.parse(found.out) as JobShowAnswer;
    expect(Object.keys(answer).sort()).toEqual(['filedUnderMessageIds', 'id', 'job', 'version']);
    expect(answer).toMatchObject({ id: ids.record, version: stack.version, filedUnderMessageIds: [] });
    expect(answer.job).toMatchObject({ jobId: ids.record, state: 'succeeded', result: { n: 1 } });

    const missing = await run('jobs', 'show', 'no-such-job', '--json');
    expect(missing.code).toBe(1);
    expect(JSON.parse(missing.out)).toEqual({ id: 'no-such-job', version: stack.version, job: null, filedUnderMessageIds: [] });
  });

  it('jobs list: by state, queue and task', async () => {
    const all = JSON.parse((await run('jobs', 'list', '--state', 'archived', '--json')).out) as JobRecord[];
    expect(all.map((j) => j.reason).sort()).toEqual(['exhausted', 'exhausted', 'malformed', 'unrecoverable']);
    const doomed = JSON.parse(
      (await run('jobs', 'list', '--state', 'archived', '--task', 'doomed', '--queue', 'urgent', '--json')).out,
    ) as JobRecord[];
    expect(doomed).toHaveLength(2);
    const table = await run('jobs', 'list', '--state', 'succeeded');
    expect(table.out.split('\n').filter((l) => l.includes(' record '))).toHaveLength(3);
    expect((await run('jobs', 'list')).code).toBe(2);
  });

  it('stats: counters and histograms, as text bars and as JSON', async () => {
    const [urgent] = JSON.parse((await run('stats', '--queue', 'urgent', '--json')).out) as QueueDayStats[];
    expect(urgent?.counters).toMatchObject({ succeeded: 3, retried: 1, failed: 4 });
    expect(urgent?.archived).toMatchObject({ exhausted: 2, unrecoverable: 1, malformed: 1 });
    expect(urgent?.wait.count).toBe(7);
    const text = await run('stats');
    expect(text.out).toMatch(/wait \(publish → start\): 7 samples/);
    expect(text.out).toMatch(/< 1s │█+ \d+/);
  });

  it("stats --task: one task's day beside its queue's, the malformed message counted under the queue only", async () => {
    const [doomed] = JSON.parse((await run('stats', '--task', 'doomed', '--json')).out) as QueueDayStats[];
    expect(doomed).toMatchObject({
      queue: 'task:doomed',
      counters: { failed: 3, retried: 1 },
      archived: { exhausted: 1, unrecoverable: 1 },
    });
    expect(doomed?.archived.malformed).toBeUndefined();
    const [record] = JSON.parse((await run('stats', '--task', 'record', '--json')).out) as QueueDayStats[];
    expect(record?.counters.succeeded).toBe(3);
    expect(record?.wait.count).toBe(3);
    expect((await run('stats', '--task', 'record')).out).toMatch(/^task record — \d{4}-\d{2}-\d{2}/);
    expect((await run('stats', '--task', 'no-such-task')).out.trim()).toBe('no stats for that day');
    const both = await run('stats', '--task', 'record', '--queue', 'urgent');
    expect(both.code).toBe(2);
    // What the task cost that day, attributed from what the dispatcher counted.
    expect(record?.cost?.sqsRequests).toBeGreaterThan(0);
    expect((await run('stats', '--task', 'record')).out).toMatch(
      /cost: Lambda \d+\.\d{3} GB-s · SQS \d+\.\d requests · DynamoDB \d+\.\d WCU · \$\d+\.\d{6} at list prices/,
    );
  });

  it('stats --minutes: jobs started, succeeded and archived per queue and minute, from the minute counters here', async () => {
    const answer = JSON.parse((await run('stats', '--minutes', '60', '--json')).out) as Throughput;
    expect(answer.source).toBe('stats');
    expect(answer.minutes).toHaveLength(60);
    const urgent = answer.queues.urgent ?? [];
    expect(urgent.reduce((n, c) => n + c.succeeded, 0)).toBe(3);
    expect(urgent.reduce((n, c) => n + c.archived, 0)).toBeGreaterThanOrEqual(3);
    const text = await run('stats', '--minutes', '60', '--queue', 'urgent');
    expect(text.out).toMatch(/total\s+urgent\s+\d+\s+3\s+\d+/);
    expect(text.out).toMatch(/last 60 min \(UTC\), from the stats table's minute counters/);
    expect((await run('stats', '--minutes', '0')).code).toBe(2);
  });

  it('archive list: the archived messages with their reasons, filtered, leaving the archive as it was', async () => {
    const all = JSON.parse((await run('archive', 'list', '--json')).out) as Array<{ record: { reason: string } }>;
    expect(all.map((m) => m.record.reason).sort()).toEqual(['exhausted', 'exhausted', 'malformed', 'unrecoverable']);
    const text = await run('archive', 'list', '--reason', 'unrecoverable');
    expect(text.out).toMatch(/unrecoverable\s+urgent\s+doomed/);
    expect(await archived()).toBe(4);
  });

  it('jobs bulk replay --dry-run: the count the archive filter gives, a sample, nothing moved, nothing logged', async () => {
    const listed = JSON.parse((await run('archive', 'list', '--reason', 'exhausted', '--json')).out) as unknown[];
    const dry = await run('jobs', 'bulk', 'replay', '--reason', 'exhausted', '--dry-run', '--json');
    expect(dry.code).toBe(0);
    expect(JSON.parse(dry.out)).toMatchObject({ action: 'replay', dryRun: true, matched: listed.length, done: 0 });
    const text = await run('jobs', 'bulk', 'replay', '--reason', 'exhausted', '--dry-run');
    expect(text.out).toContain(`dry run: replay would act on ${listed.length} archived message(s) (nothing changed)`);
    expect(await archived()).toBe(4);
    expect(JSON.parse((await run('jobs', 'bulk', 'log', '--json')).out)).toEqual([]);
    const wrong = await run('jobs', 'bulk', 'replay', '--tag', 'nightly');
    expect(wrong.code).toBe(2);
    expect(wrong.err.trim().split('\n')).toHaveLength(1);
    expect(wrong.err).toContain('--tag "nightly": expected no --tag for replay');
  });

  it('archive replay: back to the origin queue with attempts reset; the job runs again', async () => {
    writeFileSync(gate, 'open');
    const result = await run('archive', 'replay', '--task', 'gated', '--json');
    expect(JSON.parse(result.out)).toMatchObject({ replayed: 1, skipped: [] });
    await eventually('the replayed job to succeed', async () => (await stack.jobs.get(ids.gated as string))?.state === 'succeeded');
    const job = await stack.jobs.get(ids.gated as string);
    expect(job).toMatchObject({ attempt: 1, result: '"opened"' });
    expect(job?.history.map((h) => h.what)).toEqual(['queued', 'started', 'archived', 'queued', 'started', 'succeeded']);
    expect(await archived()).toBe(3);
  });

  it('archive replay: malformed messages only when asked for explicitly', async () => {
    const result = JSON.parse((await run('archive', 'replay', '--json')).out) as { replayed: number; skipped: Array<{ why: string }> };
    expect(result.skipped.some((s) => s.why.startsWith('malformed'))).toBe(true);
  });

  it('dlq redrive: moves dead letters back to their queue', async () => {
    const body = encodeEnvelope({ task: 'record', payload: { journal, n: 99 } });
    await stack.sqs.send(new SendMessageCommand({ QueueUrl: stack.urls.deadLetter.bulk, MessageBody: body }));
    const result = await run('dlq', 'redrive', '--queue', 'bulk', '--json');
    expect(result.err).toBe('');
    expect(result.code).toBe(0);
    expect(JSON.parse(result.out)).toEqual([expect.objectContaining({ queue: 'bulk', messages: 1 })]);
    await eventually('the redriven task to run', () => readJournal(journal).some((e) => e.n === 99));
    expect((await queues.depth(stack.urls.deadLetter.bulk as string)).visible).toBe(0);
  });

  it('reports a version that is not deployed, and a missing version', async () => {
    const missing = await cli('status', '--version', 'v999', '--config', FIXTURE_CONFIG);
    expect(missing.code).toBe(1);
    expect(missing.err).toMatch(/version v999 is not deployed here: queue twtest-v999-urgent does not exist/);
    const noVersion = await cli('status', '--config', FIXTURE_CONFIG);
    expect(noVersion.code).toBe(2);
    expect(noVersion.err).toMatch(/--version is required/);
  });

  it('publish --delay 3600: the job shows scheduled with its due time and is cancelled once; --at wants a zone', async () => {
    const published = await run('publish', 'record', '--payload', JSON.stringify({ journal, n: 9 }), '--delay', '3600', '--json');
    expect(published.code).toBe(0);
    const { jobId, runAt } = JSON.parse(published.out) as { jobId: string; runAt: number };
    const due = new Date(runAt).toISOString();
    // Two writes make the job scheduled, in either order: the publisher's record, and the dev
    // dispatcher's park when the message (sent at once, as any delay past 900 s is) arrives. The park
    // rewrites the job's index entry, so the list is read once the park landed (it drops `announced`).
    await eventually('the dispatcher to park the job', async () => {
      const record = await stack.jobs.get(jobId);
      return record?.state === 'scheduled' && record.announced !== true;
    });
    const listed = await run('jobs', 'list', '--state', 'scheduled');
    expect(listed.out).toMatch(new RegExp(`${jobId}\\s+record\\s+urgent\\s+scheduled\\s+0\\s+${due}`));
    expect((await run('jobs', 'show', jobId)).out).toMatch(new RegExp(`due\\s+${due}`));
    const cancelled = await run('jobs', 'cancel', jobId);
    expect(cancelled).toMatchObject({ code: 0 });
    expect(cancelled.out).toContain(`cancelled job ${jobId} (it was due ${due}); it will not run`);
    const again = await run('jobs', 'cancel', jobId);
    expect(again.code).toBe(1);
    expect(again.out).toContain('was already cancelled');
    expect(await stack.jobs.get(jobId)).toMatchObject({ state: 'cancelled', runAt });
    const ran = await run('jobs', 'cancel', ids.record as string);
    expect(ran.code).toBe(1);
    expect(ran.out).toContain(`job ${ids.record} is succeeded: it has ended, nothing to cancel`);
    const noZone = await run('publish', 'record', '--payload', '{}', '--at', '2027-01-01T09:00');
    expect(noZone.code).toBe(2);
    expect(noZone.err).toMatch(/--at 2027-01-01T09:00: expected an ISO-8601 time with a zone/);
  });

  it('jobs wait: the result of a finished job, the reason of an archived one, one line at the timeout', async () => {
    const done = await run('jobs', 'wait', ids.record as string);
    expect(done).toMatchObject({ code: 0 });
    expect(done.out.trim()).toBe(`job ${ids.record} succeeded after 1 attempt(s): {"n":1}`);
    const archivedJob = await run('jobs', 'wait', ids.doomed as string, '--json');
    expect(archivedJob.code).toBe(1);
    expect(JSON.parse(archivedJob.out)).toMatchObject({ state: 'archived', reason: 'exhausted', error: { message: 'downstream said no' } });
    const none = await run('jobs', 'wait', 'no-such-job', '--timeout', '1');
    expect(none.code).toBe(2);
    expect(none.err.trim()).toMatch(/^taskworker: ResultTimeoutError: Job "no-such-job" did not end within 1000 ms: it has no record/);
    // What a publisher awaits, end to end: published now, run by the dev's dispatcher.
    const published = await stack.publisher.publish('record', { journal, n: 7 });
    await expect(stack.publisher.result(published, { timeoutMs: 30_000 })).resolves.toMatchObject({
      state: 'succeeded',
      result: { n: 7 },
      attempts: 1,
    });
    const untracked = await stack.publisher.publish('record', { journal, n: 8 }, { queue: 'bulk' });
    await expect(stack.publisher.result(untracked)).rejects.toThrow(/queue "bulk" cannot be awaited: it is tracked "off"/);
  });

  it('jobs bulk cancel: the parked jobs of a task by key, at most --rate a second, logged with who ran it', async () => {
    process.env.TASKWORKER_OPERATOR = 'ops@example';
    const later = await Promise.all(
      ['a', 'a', 'b'].map((key) => stack.publisher.publish('record', { journal, n: 50 }, { delaySeconds: 3_600, key })),
    );
    const dry = JSON.parse((await run('jobs', 'bulk', 'cancel', '--task', 'record', '--key', 'a', '--dry-run', '--json')).out);
    expect(dry).toMatchObject({ matched: 2, done: 0 });
    const done = JSON.parse((await run('jobs', 'bulk', 'cancel', '--task', 'record', '--key', 'a', '--rate', '4', '--json')).out);
    expect(done).toMatchObject({ matched: 2, done: 2, skipped: [] });
    // Two cancels at 4 a second: a quarter of a second apart at least.
    expect(done.endedAt - done.startedAt).toBeGreaterThanOrEqual(250);
    const states = await Promise.all(later.map(async (p) => (await stack.jobs.get(p.jobId))?.state));
    expect(states).toEqual(['cancelled', 'cancelled', 'scheduled']);
    const log = JSON.parse((await run('jobs', 'bulk', 'log', '--json')).out);
    expect(log).toEqual([
      expect.objectContaining({
        who: 'ops@example',
        action: 'bulk cancel',
        filter: { task: 'record', key: 'a' },
        matched: 2,
        done: 2,
        ratePerSecond: 4,
      }),
    ]);
    expect((await run('jobs', 'bulk', 'log')).out).toMatch(
      /ops@example {2}bulk cancel {2}\{"task":"record","key":"a"\} {2}matched 2, done 2 at ≤ 4\/s/,
    );
  });
});
