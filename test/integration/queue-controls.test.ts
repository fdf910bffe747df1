/**
 * Pausing a queue and overriding priorities on the emulators (issue 23): the real dispatcher
 * runtime (worker threads, fauxqs, dynalite) and the CLI. What a paused queue received is counted
 * per queue at the dispatcher's SQS client and read from the queue's depth, never timed.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { VersionStatus } from '../../lib/operate/version-status';
import type { QueueClient } from '../../lib/ports';
import type { TaskBundle } from '../../lib/tasks/bundle';
import type { JobRecord } from '../../lib/track/job-record';
import { cli } from '../helpers/cli';
import { buildFixtureBundle, type EmulatorHarness, startHarness, stopHarness } from '../helpers/emulators';
import { eventually } from '../helpers/run';
import { type System, system } from '../helpers/system';

const TASK = (name: string, queue: string) => `
export default {
  name: '${name}', queue: '${queue}', timeLimitSeconds: 5,
  async run(payload: { ms?: number }) { await new Promise((resolve) => setTimeout(resolve, payload?.ms ?? 0)); },
};
`;

let h: EmulatorHarness | undefined;
let configFile: string;
let bundle: TaskBundle;
let s: System | undefined;
const saved = { ...process.env };

beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tw-controls-'));
  mkdirSync(join(dir, 'tasks'));
  writeFileSync(join(dir, 'tasks', 'on-hot.ts'), TASK('on-hot', 'hot'));
  writeFileSync(join(dir, 'tasks', 'on-cold.ts'), TASK('on-cold', 'cold'));
  configFile = join(dir, 'taskworker.config.json');
  writeFileSync(
    configFile,
    JSON.stringify({
      app: 'controls',
      tasksDir: 'tasks',
      queues: [
        { name: 'hot', priority: 90, visibilityTimeoutSeconds: 10, longPollSeconds: 1, batchSize: 1 },
        { name: 'cold', priority: 1, visibilityTimeoutSeconds: 10, longPollSeconds: 1, batchSize: 1 },
      ],
      // Strict priority: the order of starts is the priorities', with no draw to wait out.
      dispatcher: { concurrency: 1, timeoutSeconds: 60, settleMarginMs: 500, killGraceMs: 200, selector: 'strict' },
    }),
  );
  h = await startHarness();
  bundle = await buildFixtureBundle(configFile);
  // The CLI talks to the emulators (no Lambda there: the triggers read the controls themselves).
  Object.assign(process.env, {
    AWS_ENDPOINT_URL_SQS: h.emulators.sqsEndpoint,
    AWS_ENDPOINT_URL_DYNAMODB: h.emulators.dynamodbEndpoint,
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'test',
    AWS_SECRET_ACCESS_KEY: 'test',
  });
});
afterEach(async () => {
  await s?.close();
  s = undefined;
});
afterAll(async () => {
  process.env = saved;
  await stopHarness(h);
});

const run = (...argv: string[]) => cli('queues', ...argv, '--version', (s as System).version, '--config', configFile);
const status = async () =>
  JSON.parse((await cli('status', '--json', '--version', (s as System).version, '--config', configFile)).out) as VersionStatus;

/** Messages each queue's receives returned to the dispatcher, by queue URL. */
function counting(received: Map<string, number>) {
  return (sqs: QueueClient): QueueClient => ({
    receive: async (url, request, signal) => {
      const messages = await sqs.receive(url, request, signal);
      received.set(url, (received.get(url) ?? 0) + messages.length);
      return messages;
    },
    sendBatch: (url, entries) => sqs.sendBatch(url, entries),
    deleteBatch: (url, entries) => sqs.deleteBatch(url, entries),
    changeVisibilityBatch: (url, entries) => sqs.changeVisibilityBatch(url, entries),
    depth: (url) => sqs.depth(url),
  });
}

describe('pause and resume a queue', () => {
  it('a paused queue receives nothing while the other queue’s work runs, publishing to it still works, and it drains after resume', async () => {
    const received = new Map<string, number>();
    s = await system(h as EmulatorHarness, bundle, { tracked: true, wrapQueues: counting(received) });
    const paused = await run('pause', 'hot');
    expect(paused.code).toBe(0);
    expect(paused.out).toMatch(/^hot is paused since \S+ · priority 90 · SLA 60 s · controls revision 1/);
    // Publishing to a paused queue works; its messages wait.
    await s.publisher.publishBatch(Array.from({ length: 5 }, () => ({ task: 'on-hot', payload: {} })));
    await s.publisher.publishBatch(Array.from({ length: 20 }, () => ({ task: 'on-cold', payload: { ms: 150 } })));
    const paused1 = (await status()).queues.find((q) => q.queue === 'hot');
    expect(paused1?.pausedAt).toBeGreaterThan(0);

    const stop = new AbortController();
    const dispatching = s.runtime.invoke(Date.now() + 120_000, stop.signal);
    let cold = 20;
    try {
      // 12 s of the other queue's work (six of the controls' 2 s refreshes): its backlog, then two
      // more cold jobs every 2 s.
      const pausedAt = Date.now();
      while (Date.now() - pausedAt < 12_000) {
        await new Promise((resolve) => setTimeout(resolve, 2_000));
        await s.publisher.publishBatch(Array.from({ length: 2 }, () => ({ task: 'on-cold', payload: { ms: 150 } })));
        cold += 2;
      }
      await eventually('the cold queue drained', () => s?.drained('cold') ?? false, 60_000);
      // All that cold work ran past the paused queue: every selection found hot (priority 90) paused.
      expect(received.get(s.urls.queues.cold as string)).toBe(cold);
      expect(received.get(s.urls.queues.hot as string) ?? 0).toBe(0);
      expect(await s.depth('hot')).toEqual({ visible: 5, inFlight: 0, delayed: 0 });

      const resumed = await run('resume', 'hot');
      expect(resumed.out).toMatch(/^hot is not paused/);
      await eventually('the hot queue drained after resume', () => s?.drained('hot') ?? false, 30_000);
      expect(received.get(s.urls.queues.hot as string)).toBe(5);
      expect((await status()).queues.find((q) => q.queue === 'hot')?.pausedAt).toBeUndefined();
    } finally {
      stop.abort();
      await dispatching;
    }
    expect(s.jobs().filter((j) => j.outcome === 'succeeded')).toHaveLength(cold + 5);
  }, 120_000);
});

describe('priority and SLA at run time', () => {
  it('an override changes which queue the selector serves first (the order of starts in the jobs table), status shows it, reset returns to the config', async () => {
    s = await system(h as EmulatorHarness, bundle, { tracked: true });
    expect((await run('set', 'cold', '--priority', '100', '--sla', '30')).code).toBe(0);
    expect((await run('set', 'hot', '--priority', '2')).code).toBe(0);
    const shown = (await status()).queues;
    expect(shown.find((q) => q.queue === 'cold')).toMatchObject({
      priority: 100,
      configuredPriority: 1,
      slaSeconds: 30,
      configuredSlaSeconds: 60,
      overridden: ['priority', 'slaSeconds'],
    });
    const text = await cli('status', '--version', s.version, '--config', configFile);
    expect(text.out).toContain('100 (set; config 1)');

    const published = [
      ...(await s.publisher.publishBatch(Array.from({ length: 3 }, () => ({ task: 'on-hot', payload: {} })))),
      ...(await s.publisher.publishBatch(Array.from({ length: 3 }, () => ({ task: 'on-cold', payload: {} })))),
    ];
    const stop = new AbortController();
    const dispatching = s.runtime.invoke(Date.now() + 120_000, stop.signal);
    try {
      await eventually(
        'both queues drained',
        async () => (await s?.drained('hot')) === true && (await s?.drained('cold')) === true,
        60_000,
      );
    } finally {
      stop.abort();
      await dispatching;
    }
    const records = await Promise.all(published.map((p) => s?.tracking?.jobs.get(p.jobId) as Promise<JobRecord>));
    const order = records.sort((a, b) => (a.firstStartedAt ?? 0) - (b.firstStartedAt ?? 0)).map((r) => r.queue);
    expect(order).toEqual(['cold', 'cold', 'cold', 'hot', 'hot', 'hot']);

    const reset = await run('reset', 'cold');
    expect(reset.out).toMatch(/priority 1 · SLA 60 s/);
    expect((await status()).queues.find((q) => q.queue === 'cold')).toMatchObject({ priority: 1, overridden: [] });
  }, 120_000);
});

describe('queues: refusals name the bad value in one line', () => {
  it.each([
    [['set', 'hot', '--priority', '0'], 'taskworker: --priority "0": expected an integer from 1 to 100\n'],
    [['set', 'hot', '--priority', 'high'], 'taskworker: --priority "high": expected an integer from 1 to 100\n'],
    [['set', 'hot', '--sla', '1.5'], 'taskworker: --sla "1.5": expected whole seconds from 1 to 1209600 (14 days)\n'],
    [['set', 'hot'], 'taskworker: queues set: give --priority P and/or --sla S\n'],
    [['pause', 'hot', '--priority', '5'], 'taskworker: queues pause: --priority and --sla go with `queues set`\n'],
    [['pause', 'nosuch'], 'taskworker: queue "nosuch": no such queue (configured: hot, cold)\n'],
    [['pause'], "taskworker: queues pause: the queue's NAME is missing\n"],
    [['stop', 'hot'], 'taskworker: unknown queues command "stop"; usage: taskworker queues pause|resume|set|reset NAME\n'],
  ])('%j', async (argv, message) => {
    const out = await cli('queues', ...(argv as string[]), '--version', 'v1', '--config', configFile);
    expect(out.code).toBe(2);
    expect(out.err).toBe(message);
    expect(out.out).toBe('');
  });
});
