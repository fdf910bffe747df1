import { type LocalStack, startLocalStack } from '../../lib/local/dev';
import { cli } from '../helpers/cli';
import { FIXTURE_CONFIG, tempFile } from '../helpers/emulators';
import { eventually, readJournal } from '../helpers/run';

describe('taskworker CLI', () => {
  let stack: LocalStack;
  const saved = { ...process.env };

  beforeAll(async () => {
    stack = await startLocalStack({ configFile: FIXTURE_CONFIG });
    Object.assign(process.env, stack.env);
  });
  afterAll(async () => {
    process.env = saved;
    await stack.stop();
  });

  it('publish: sends a task that the local dispatcher runs, and prints the job', async () => {
    const journal = tempFile('journal.jsonl');
    const result = await cli(
      'publish',
      'record',
      '--payload',
      JSON.stringify({ journal, n: 7 }),
      '--app-data',
      '{"via":"cli"}',
      '--version',
      stack.version,
      '--config',
      FIXTURE_CONFIG,
      '--json',
    );
    expect(result.code).toBe(0);
    const printed = JSON.parse(result.out) as { jobId: string; queue: string };
    expect(printed.queue).toBe('urgent');
    await eventually('the task', () => readJournal(journal).length === 1);
    expect(readJournal(journal)[0]).toMatchObject({ n: 7, jobId: printed.jobId, appData: { via: 'cli' } });
  });

  it('publish: --key on a unique task answers a live job of the key as deduplicated, in text and --json, and sends nothing', async () => {
    const publish = (...extra: string[]) =>
      cli(
        'publish',
        'sync-account',
        '--payload',
        '{"journal":"/dev/null","n":1}',
        '--key',
        'account 7',
        ...extra,
        '--version',
        stack.version,
        '--config',
        FIXTURE_CONFIG,
      );
    // Delayed, so it is still live (scheduled) however long the next command takes.
    const first = await publish('--delay', '600', '--json');
    expect(first.code).toBe(0);
    const { jobId } = JSON.parse(first.out) as { jobId: string };
    const json = await publish('--json');
    expect(json.code).toBe(0);
    expect(JSON.parse(json.out)).toMatchObject({ jobId, deduplicated: true, messageId: '' });
    const text = await publish();
    expect(text.out).toMatch(new RegExp(`deduplicated: job ${jobId} of sync-account with key "account 7" is live`));
    const bad = await publish('--key', '');
    expect(bad.code).not.toBe(0);
    expect(bad.err).toMatch(/--key/);
  });

  it('publish: --key on a debounced task says when the publish joined the key’s pending job, in text and --json, and sends nothing', async () => {
    const publish = (n: number, ...extra: string[]) =>
      cli(
        'publish',
        'digest-doc',
        '--payload',
        JSON.stringify({ journal: '/dev/null', n }),
        '--key',
        'doc 9',
        ...extra,
        '--version',
        stack.version,
        '--config',
        FIXTURE_CONFIG,
      );
    // A 10-minute period: however long each command takes, the later ones join the first one's job.
    const first = await publish(1, '--json');
    expect(first.code).toBe(0);
    const opened = JSON.parse(first.out) as { jobId: string; debounced?: boolean; messageId: string };
    expect(opened.debounced).toBeUndefined();
    expect(opened.messageId).not.toBe('');
    const json = await publish(2, '--json');
    expect(json.code).toBe(0);
    expect(JSON.parse(json.out)).toMatchObject({ jobId: opened.jobId, debounced: true, messageId: '' });
    const text = await publish(3);
    expect(text.code).toBe(0);
    expect(text.out).toMatch(new RegExp(`debounced: job ${opened.jobId} of digest-doc with key "doc 9" is pending on urgent`));
  });

  it('publish: --delay, --queue and --expires-in are honoured (the expiry counted from the publish)', async () => {
    const publish = (...extra: string[]) =>
      cli(
        'publish',
        'from-another-service',
        '--payload',
        '{}',
        '--queue',
        'routine',
        '--delay',
        '60',
        ...extra,
        '--version',
        stack.version,
        '--config',
        FIXTURE_CONFIG,
      );
    const text = await publish();
    expect(text.code).toBe(0);
    expect(text.out).toMatch(/published from-another-service to routine/);

    const before = Date.now();
    const result = await publish('--expires-in', '600', '--json');
    expect(result.code).toBe(0);
    const { expiresAt, runAt } = JSON.parse(result.out) as { expiresAt: number; runAt: number };
    expect(expiresAt).toBeGreaterThanOrEqual(before + 600_000);
    expect(expiresAt).toBeLessThanOrEqual(Date.now() + 600_000);
    expect(runAt).toBeLessThan(expiresAt);
  });

  it.each([
    [['publish'], /expected exactly one TASK/],
    [['publish', 'record', '--payload', '{not json', '--version', 'dev', '--config', FIXTURE_CONFIG], /--payload is not valid JSON/],
    [
      ['publish', 'record', '--delay', '31622401', '--version', 'dev', '--config', FIXTURE_CONFIG],
      /--delay 31622401: expected an integer 0..31622400/,
    ],
    [
      ['publish', 'record', '--delay', '5', '--at', '2027-01-01T00:00:00Z', '--version', 'dev', '--config', FIXTURE_CONFIG],
      /--delay and --at: give one of them/,
    ],
    [
      ['publish', 'record', '--expires-in', '60', '--expires-at', '2027-01-01T00:00:00Z', '--version', 'dev', '--config', FIXTURE_CONFIG],
      /--expires-in and --expires-at: give one of them/,
    ],
    [
      ['publish', 'record', '--expires-in', '0', '--version', 'dev', '--config', FIXTURE_CONFIG],
      /--expires-in 0: expected an integer 1..31622400/,
    ],
    [
      ['publish', 'record', '--expires-at', 'tomorrow', '--version', 'dev', '--config', FIXTURE_CONFIG],
      /--expires-at tomorrow: expected an ISO-8601 time with a zone/,
    ],
    [['publish', 'nope', '--version', 'dev', '--config', FIXTURE_CONFIG], /task nope is not defined/],
    [['publish', 'record', '--config', 'missing.config.ts', '--version', 'dev'], /no such file/],
    [['frobnicate'], /unknown command/],
  ])('rejects bad usage with exit code 2: %j', async (argv, message) => {
    const result = await cli(...argv);
    expect(result.code).toBe(2);
    expect(result.err).toMatch(message);
  });
});

describe('npm start (taskworker demo)', () => {
  it('publishes the mixed workload, settles every job and exits 0 with a summary', async () => {
    const result = await cli('demo');
    expect(result.code).toBe(0);
    expect(result.out).toMatch(/all \d+ jobs settled/);
    for (const reason of ['timed-out', 'exhausted', 'malformed', 'unknown-task']) expect(result.out).toContain(reason);
    // 150 notifications and one send-order-confirmation for each of the 3 orders.placed events.
    expect(result.out).toMatch(/high_priority\s+153\s+153/);
    expect(result.out).toMatch(/demo-order-2-placed\s+succeeded\s+succeeded/);
    // What wakes each queue when idle, the schedule's wait, and each queue's first job's wait in the run.
    expect(result.out).toContain('high_priority, default: a doorbell');
    expect(result.out).toContain(
      "low_priority: the schedule (wakeUp 'schedule', SLA 300 s): a job waits for the next scheduled dispatcher, up to 60 s",
    );
    expect(result.out).toMatch(/first job's wait in this run: high_priority [\d.]+ m?s · default [\d.]+ m?s · low_priority [\d.]+ m?s/);
    // The stats section counts what the summary table counts (read before the dispatchers had
    // written their last stats, it trailed it: `retried 3` and no archived beside `4 · 4`).
    const [, succeeded, retried, archived] = /\nlow_priority\s+\d+\s+(\d+)\s+(\d+)\s+(\d+)/.exec(result.out) ?? [];
    const stats = /\nlow_priority — \d{4}-\d{2}-\d{2}\n {2}(.*)\n/.exec(result.out)?.[1] ?? '';
    expect(stats).toMatch(new RegExp(`\\bsucceeded ${succeeded}\\b`));
    expect(stats).toMatch(new RegExp(`\\bretried ${retried}\\b`));
    const archivedInStats = [...stats.matchAll(/(?:archived: |· )(?:timed-out|malformed|exhausted|unknown-task) (\d+)/g)];
    expect(archivedInStats.reduce((sum, m) => sum + Number(m[1]), 0)).toBe(Number(archived));
    expect(result.out).not.toContain('the stats table trails the summary above');
  }, 150_000);
});
