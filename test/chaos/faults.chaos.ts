/**
 * Fault injection: two dispatchers in this process whose SQS and DynamoDB clients carry the
 * fault middleware (test/chaos/helpers/faults.ts): 10 % of their calls' attempts are throttled,
 * answered 5xx, time out before or after reaching the service, or lose entries of a batch. Over
 * 1,000 jobs: nothing is lost, no invocation throws, nothing completes twice, and the guarded
 * side effect lands once; the retries it took are counted and reported.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { DispatcherRuntime } from '../../lib/invocation/dispatcher-runtime';
import { type Emulators, startEmulators } from '../../lib/local/emulators';
import { seededRandom } from '../../lib/random';
import type { TaskBundle } from '../../lib/tasks/bundle';
import { encodeEnvelope } from '../../lib/wire/envelope';
import { buildFixtureBundle } from '../helpers/emulators';
import type { EffectPayload } from './fixtures/tasks/effect';
import { addedCounters, FaultInjector, isQueueStatsWrite } from './helpers/faults';
import { type InProcessVersion, inProcessVersion } from './helpers/in-process';
import { audit, CHAOS_CONFIG, cleanClients, daysSince, type Published, recordingLogger, scanAll, statsOver, until } from './helpers/stage';
import { writeTally } from './helpers/tally';

const SEED = Number(process.env.CHAOS_SEED ?? 20_261_106);
const JOBS = 1000;
const DISPATCHERS = 2;
/** Jobs whose message is sent twice. */
const DUPLICATED = 50;

let emulators: Emulators;
let clients: ReturnType<typeof cleanClients>;
let bundle: TaskBundle;
let v: InProcessVersion;

beforeAll(async () => {
  emulators = await startEmulators();
  clients = cleanClients({ sqs: emulators.sqsEndpoint, dynamodb: emulators.dynamodbEndpoint });
  bundle = await buildFixtureBundle(CHAOS_CONFIG);
  v = await inProcessVersion(clients, bundle, 'faults');
});

afterAll(async () => {
  await v?.close();
  clients?.sqs.destroy();
  clients?.dynamo.destroy();
  await emulators?.stop();
});

describe('fault injection: throttling, 5xx, timeouts and partial batch failures on 10 % of SQS and DynamoDB calls', () => {
  it(`loses nothing and completes nothing twice over ${JOBS} jobs`, async () => {
    const startedAt = Date.now();
    const random = seededRandom(SEED);
    const injector = new FaultInjector(SEED, 0.1);
    // Stats ADDs are not idempotent: count what each stats write added, times the times it reached DynamoDB.
    const statsWrites = { delivered: { succeeded: 0, archived: 0 }, once: { succeeded: 0, archived: 0 } };
    injector.observe((call) => {
      if (call.command !== 'UpdateItem' || call.input.TableName !== v.tables.stats || !isQueueStatsWrite(call.input)) return;
      const added = addedCounters(call.input);
      const archived = Object.entries(added)
        .filter(([name]) => name.startsWith('archived_'))
        .reduce((n, [, value]) => n + value, 0);
      statsWrites.delivered.succeeded += (added.succeeded ?? 0) * call.delivered;
      statsWrites.delivered.archived += archived * call.delivered;
      statsWrites.once.succeeded += added.succeeded ?? 0;
      statsWrites.once.archived += archived;
    });
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);

    const logger = recordingLogger();
    const runtimes: DispatcherRuntime[] = Array.from({ length: DISPATCHERS }, (_, i) =>
      v.dispatcher(
        `faulty-${i + 1}`,
        {
          sqs: injector.attach(
            new SQSClient({
              region: 'us-east-1',
              endpoint: emulators.sqsEndpoint,
              credentials: { accessKeyId: 'l', secretAccessKey: 'l' },
            }),
            'sqs',
          ),
          dynamo: injector.attach(
            new DynamoDBClient({
              region: 'us-east-1',
              endpoint: emulators.dynamodbEndpoint,
              credentials: { accessKeyId: 'l', secretAccessKey: 'l' },
            }),
            'dynamodb',
          ),
        },
        logger,
      ),
    );

    // Published through the library with a clean client: the set of jobs is known exactly.
    const items = Array.from({ length: JOBS }, (_, i) => {
      const roll = random();
      if (roll < 0.03) return { task: 'doomed', payload: { n: i } };
      const payload: EffectPayload = {
        table: v.effectsTable,
        endpoint: emulators.dynamodbEndpoint,
        ms: Math.floor(random() * 50),
        ...(roll < 0.1 ? { failBelow: 2 } : {}),
      };
      return { task: 'effect', payload };
    });
    const publishedJobs = await v.publisher.publishBatch(items);
    const published: Published[] = publishedJobs.map((p, i) => ({ jobId: p.jobId, task: items[i]?.task as string }));
    // SQS is at-least-once: deliver 50 of the jobs a second time (same envelope, same job id).
    const twice = published.filter((p) => p.task === 'effect').slice(0, DUPLICATED);
    for (let i = 0; i < twice.length; i += 10) {
      await clients.sqs.send(
        new SendMessageBatchCommand({
          QueueUrl: v.urls.queues.work,
          Entries: twice.slice(i, i + 10).map((p, j) => {
            const item = items[published.indexOf(p)];
            return { Id: String(j), MessageBody: encodeEnvelope({ task: 'effect', payload: item?.payload, id: p.jobId }) };
          }),
        }),
      );
    }

    // Lambda-like: each dispatcher invoked back to back, 20 s per invocation.
    const stop = new AbortController();
    let invocations = 0;
    const thrown: unknown[] = [];
    const loops = runtimes.map(async (runtime) => {
      while (!stop.signal.aborted) {
        try {
          await runtime.invoke(Date.now() + 20_000, stop.signal);
          invocations += 1;
        } catch (error) {
          thrown.push(error);
        }
      }
    });
    const terminal = new Set(['succeeded', 'archived']);
    const drained = await until(
      async () => {
        const jobs = await scanAll(clients.dynamo, v.tables.jobs);
        if (jobs.filter((j) => terminal.has(j.state as string)).length < JOBS) return false;
        const depth = await v.depth(v.urls.queues.work as string);
        return depth.visible + depth.inFlight + depth.delayed === 0;
      },
      240_000,
      2000,
    );
    stop.abort();
    await Promise.all(loops);
    injector.enabled = false;
    process.off('unhandledRejection', onUnhandled);

    const result = await audit({
      sqs: clients.sqs,
      dynamo: clients.dynamo,
      urls: v.urls,
      jobsTable: v.tables.jobs,
      published,
      effectsTable: v.effectsTable,
      depth: v.depth,
      historyLimit: bundle.config.tracking.historyLimit,
    });
    const stats = await statsOver(v.stats, 'work', daysSince(startedAt));
    const totals = injector.totals();
    const outcomes = v.reports.flatMap((r) => r.jobs.map((j) => j.outcome));
    const count = (o: string) => outcomes.filter((x) => x === o).length;
    const retries = {
      sdkRetries: totals.sdkRetries,
      sdkRetriesByService: { sqs: injector.counts.sqs.sdkRetries, dynamodb: injector.counts.dynamodb.sdkRetries },
      callsFailedAfterSdkRetries: totals.failedCalls,
      settleEntryRetries: v.reports.reduce((n, r) => n + r.settleRetries, 0),
      deliveries: outcomes.length,
      redeliveries: outcomes.length - JOBS - DUPLICATED,
    };
    const details = {
      seed: SEED,
      rate: injector.rate,
      calls: totals.calls,
      attempts: totals.attempts,
      injected: totals.injected,
      failedEntries: totals.failedEntries,
      dynamodbCommands: [...injector.commands.dynamodb].sort(),
      sqsCommands: [...injector.commands.sqs].sort(),
      retries,
      outcomes: { duplicate: count('duplicate'), deferred: count('deferred'), stale: count('stale'), released: count('released') },
      skippedDuplicates: result.skippedDuplicates,
      restartedJobs: result.restartedJobs,
      invocations,
      lostSample: result.lost.slice(0, 10),
      loopErrors: logger.entries.filter((e) => e.level === 'error').length,
      errorMessages: [...new Set(logger.entries.filter((e) => e.level === 'error').map((e) => e.message))],
      stats: { table: stats, writes: statsWrites },
    };
    writeTally({
      suite: 'faults',
      published: result.published,
      succeeded: result.succeeded,
      archived: result.archived,
      lost: result.lost.length,
      duplicates: result.completedTwice.length + (result.effects?.overApplied.length ?? 0),
      details,
    });
    process.stdout.write(`faults: ${JSON.stringify(details)}\n`);

    expect(drained).toBe(true);
    expect(result.lost).toEqual([]);
    expect(result.completedTwice).toEqual([]);
    expect(result.truncatedHistories).toBe(0);
    expect(result.effects?.overApplied).toEqual([]);
    expect(result.effects?.missing).toEqual([]);
    expect(result.archivedWithoutMessage).toEqual([]);
    expect(result.archiveMessagesWithoutReason).toBe(0);
    expect(result.leftInQueues + result.leftInDeadLetterQueues).toBe(0);
    expect(result.archivedByReason).toEqual({ exhausted: items.filter((i) => i.task === 'doomed').length });
    // Every second delivery was stopped by the claim: skipped (or deferred, then skipped), never run again.
    expect(result.skippedDuplicates).toBeGreaterThanOrEqual(DUPLICATED);
    expect(count('duplicate')).toBeGreaterThanOrEqual(DUPLICATED);
    // The loop never died: every invocation returned, nothing was left unhandled.
    expect(thrown).toEqual([]);
    expect(unhandled).toEqual([]);
    expect(invocations).toBeGreaterThanOrEqual(DISPATCHERS);
    // Faults of every kind were injected, and the SDK retried them.
    for (const kind of ['throttle', 'server-error', 'timeout-before', 'timeout-after', 'partial'] as const)
      expect(totals.injected[kind]).toBeGreaterThan(0);
    expect(totals.sdkRetries).toBeGreaterThan(0);
    // Stats: exact, except where an ADD reached DynamoDB twice (a lost answer, retried) or never.
    expect(stats.succeeded).toBe(statsWrites.delivered.succeeded);
    expect(stats.archivedTotal).toBe(statsWrites.delivered.archived);
    expect(statsWrites.once.succeeded).toBe(result.succeeded);
    expect(statsWrites.once.archived).toBe(result.archived);
  });
});
