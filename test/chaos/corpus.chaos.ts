/**
 * Hostile input corpus: every kind of body a queue can be sent, through the real dispatcher (SDK
 * adapters on fauxqs + dynalite, worker-thread pool). Each case sends a well-formed message, the
 * hostile one and another well-formed one; the three arrive in one batch. The hostile message
 * must end archived with a machine-readable reason (or run, where it is valid), its neighbours
 * must succeed, and nothing is logged at error level: no crash, no failed settle call.
 */
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import type { MalformedCode } from '../../lib/errors';
import type { DispatcherRuntime } from '../../lib/invocation/dispatcher-runtime';
import { type Emulators, startEmulators } from '../../lib/local/emulators';
import type { JobReport } from '../../lib/settle/report';
import type { TaskBundle } from '../../lib/tasks/bundle';
import type { ArchiveReason } from '../../lib/wire/archive-reasons';
import { readArchiveRecord } from '../../lib/wire/archive-record';
import { MAX_JSON_DEPTH } from '../../lib/wire/envelope';
import { buildFixtureBundle } from '../helpers/emulators';
import { type InProcessVersion, inProcessVersion } from './helpers/in-process';
import {
  type ArchivedMessage,
  audit,
  CHAOS_CONFIG,
  cleanClients,
  daysSince,
  drainArchive,
  type Published,
  recordingLogger,
  statsOver,
  until,
} from './helpers/stage';
import { writeTally } from './helpers/tally';

type Expect =
  | { readonly archived: ArchiveReason; readonly code?: MalformedCode; readonly cut?: boolean }
  | { readonly runs: true; readonly result?: (result: unknown) => void }
  | { readonly rejectedBySqs: RegExp };

interface Hostile {
  /** The message body, or raw bytes sent as the body's UTF-8 (bytes no SDK would send). */
  readonly body: string | Buffer;
  readonly attributes?: Record<string, string>;
  readonly expect: Expect;
}

const KiB = 1024;
const big = (bytes: number, fill = 'x') => fill.repeat(bytes);
const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;
const env = (fields: Record<string, unknown>) => JSON.stringify(fields);
const malformed = (code: MalformedCode): Expect => ({ archived: 'malformed', code });
const unknownTask: Expect = { archived: 'unknown-task' };
const cleanProbe = (check?: (r: Record<string, unknown>) => void): Expect => ({
  runs: true,
  result: (result) => {
    const r = JSON.parse(String(result)) as Record<string, unknown>;
    expect(r.prototypeClean).toBe(true);
    check?.(r);
  },
});

/** Random bytes that are not UTF-8 (0x80..0xff, lone continuation and lead bytes), JSON-string safe. */
const garbage = (n: number) => Buffer.from(Array.from({ length: n }, (_, i) => 0x80 + ((i * 37) % 0x80)));

const CORPUS: Array<[string, Hostile]> = [
  // Not an envelope at all
  ['plain text', { body: 'hello, world', expect: malformed('not-json') }],
  ['truncated JSON', { body: '{"task":"ok","payload":{', expect: malformed('not-json') }],
  ['JSON behind a byte-order mark', { body: '\uFEFF{"task":"ok"}', expect: malformed('not-json') }],
  ['whitespace only', { body: ' \t\n ', expect: malformed('not-json') }],
  ['XML', { body: '<task>ok</task>', expect: malformed('not-json') }],
  ['a JSON number', { body: '42', expect: malformed('not-object') }],
  ['a JSON string', { body: '"ok"', expect: malformed('not-object') }],
  ['JSON null', { body: 'null', expect: malformed('not-object') }],
  ['JSON true', { body: 'true', expect: malformed('not-object') }],
  ['a JSON array of envelopes', { body: '[{"task":"ok"}]', expect: malformed('not-object') }],
  // task
  ['no task', { body: env({ payload: {} }), expect: malformed('bad-task-name') }],
  ['an empty task', { body: env({ task: '' }), expect: malformed('bad-task-name') }],
  ['task: a number', { body: env({ task: 42 }), expect: malformed('bad-task-name') }],
  ['task: null', { body: env({ task: null }), expect: malformed('bad-task-name') }],
  ['task: a boolean', { body: env({ task: true }), expect: malformed('bad-task-name') }],
  ['task: an array', { body: env({ task: ['ok'] }), expect: malformed('bad-task-name') }],
  ['task: an object', { body: env({ task: { name: 'ok' } }), expect: malformed('bad-task-name') }],
  ['task: 129 characters', { body: env({ task: big(129, 'a') }), expect: malformed('bad-task-name') }],
  ['task with a trailing space', { body: env({ task: 'ok ' }), expect: malformed('bad-task-name') }],
  ['task with a homoglyph (Cyrillic o)', { body: env({ task: '\u043Ek' }), expect: malformed('bad-task-name') }],
  ['an unknown task', { body: env({ task: 'ghost' }), expect: unknownTask }],
  ['a task in the wrong case', { body: env({ task: 'OK' }), expect: unknownTask }],
  // Task names that look like code: paths, module specifiers, URLs, prototype members
  ['task: a relative path', { body: env({ task: '../tasks/ok' }), expect: malformed('bad-task-name') }],
  ['task: ./ok', { body: env({ task: './ok' }), expect: malformed('bad-task-name') }],
  ['task: an absolute path', { body: env({ task: '/etc/passwd' }), expect: malformed('bad-task-name') }],
  ['task: a Windows path', { body: env({ task: 'C:\\tasks\\ok.js' }), expect: malformed('bad-task-name') }],
  ['task: node:child_process', { body: env({ task: 'node:child_process' }), expect: malformed('bad-task-name') }],
  ['task: a scoped package', { body: env({ task: '@aws-sdk/client-sqs' }), expect: malformed('bad-task-name') }],
  ['task: a file URL', { body: env({ task: 'file:///etc/passwd' }), expect: malformed('bad-task-name') }],
  ['task: a data URL with code', { body: env({ task: 'data:text/javascript,process.exit(1)' }), expect: malformed('bad-task-name') }],
  ['task: an https URL', { body: env({ task: 'https://example.com/x.js' }), expect: malformed('bad-task-name') }],
  ['task: a bare built-in module name', { body: env({ task: 'child_process' }), expect: unknownTask }],
  ['task: a module file name', { body: env({ task: 'ok.ts' }), expect: unknownTask }],
  ['task: constructor', { body: env({ task: 'constructor' }), expect: unknownTask }],
  ['task: toString', { body: env({ task: 'toString' }), expect: unknownTask }],
  ['task: hasOwnProperty', { body: env({ task: 'hasOwnProperty' }), expect: unknownTask }],
  ['task: __proto__', { body: env({ task: '__proto__' }), expect: malformed('bad-task-name') }],
  // id
  ['id: a number', { body: env({ task: 'ok', id: 42 }), expect: malformed('bad-id') }],
  ['id: an object', { body: env({ task: 'ok', id: { $ne: null } }), expect: malformed('bad-id') }],
  ['id: null', { body: env({ task: 'ok', id: null }), expect: malformed('bad-id') }],
  ['id: empty', { body: env({ task: 'ok', id: '' }), expect: malformed('bad-id') }],
  ['id: 129 characters', { body: env({ task: 'ok', id: big(129, 'j') }), expect: malformed('bad-id') }],
  ['id: 100 KiB', { body: env({ task: 'ok', id: big(100 * KiB, 'j') }), expect: malformed('bad-id') }],
  ['id: with a space', { body: env({ task: 'ok', id: 'job 1' }), expect: malformed('bad-id') }],
  ['id: non-ASCII', { body: env({ task: 'ok', id: 'jöb-1' }), expect: malformed('bad-id') }],
  ['id: with a newline', { body: env({ task: 'ok', id: 'job\n1' }), expect: malformed('bad-id') }],
  // publishedAt
  ['publishedAt: a date string', { body: env({ task: 'ok', publishedAt: '2026-01-01' }), expect: malformed('bad-published-at') }],
  ['publishedAt: negative', { body: env({ task: 'ok', publishedAt: -1 }), expect: malformed('bad-published-at') }],
  ['publishedAt: a fraction', { body: env({ task: 'ok', publishedAt: 1.5 }), expect: malformed('bad-published-at') }],
  ['publishedAt: 1e300', { body: '{"task":"ok","publishedAt":1e300}', expect: malformed('bad-published-at') }],
  ['publishedAt: an object', { body: env({ task: 'ok', publishedAt: {} }), expect: malformed('bad-published-at') }],
  ['publishedAt: the last instant a Date holds', { body: env({ task: 'ok', publishedAt: 8_640_000_000_000_000 }), expect: { runs: true } }],
  [
    'publishedAt: past what a Date holds',
    { body: env({ task: 'ok', publishedAt: Number.MAX_SAFE_INTEGER }), expect: malformed('bad-published-at') },
  ],
  ['publishedAt: 1e400 (Infinity once parsed)', { body: '{"task":"ok","publishedAt":1e400}', expect: malformed('bad-published-at') }],
  // v
  ['v from the future', { body: env({ task: 'ok', v: 2 }), expect: malformed('bad-version') }],
  ['v: the string "1"', { body: env({ task: 'ok', v: '1' }), expect: malformed('bad-version') }],
  ['v: null', { body: env({ task: 'ok', v: null }), expect: malformed('bad-version') }],
  ['v: 0', { body: env({ task: 'ok', v: 0 }), expect: malformed('bad-version') }],
  // payload and appData: any JSON is valid and reaches the task untouched
  ['payload: a string, appData: an array', { body: env({ task: 'probe', payload: 'text', appData: [1, 2] }), expect: cleanProbe() }],
  ['payload: 1e400 (Infinity once parsed)', { body: '{"task":"probe","payload":1e400}', expect: cleanProbe() }],
  [
    'payload: 50,000 keys',
    {
      body: env({ task: 'probe', payload: Object.fromEntries(Array.from({ length: 50_000 }, (_, i) => [`k${i}`, i])) }),
      expect: cleanProbe((r) => expect(r.payloadKeys).toBe(50_000)),
    },
  ],
  [
    "a payload that fails the task's validate",
    { body: env({ task: 'strict', payload: { count: 'seven' } }), expect: { archived: 'invalid-payload' } },
  ],
  [
    'a validate failure quoting 900 KiB of payload',
    { body: env({ task: 'strict', payload: { count: big(900 * KiB) } }), expect: { archived: 'invalid-payload' } },
  ],
  // Prototype pollution attempts
  ['__proto__ at the top (no task may come from a prototype)', { body: '{"__proto__":{"task":"ok"}}', expect: malformed('bad-task-name') }],
  [
    '__proto__ in the payload',
    { body: '{"task":"probe","payload":{"__proto__":{"polluted":true}}}', expect: cleanProbe((r) => expect(r.payload).toBe('plain')) },
  ],
  ['__proto__ in appData', { body: '{"task":"probe","appData":{"__proto__":{"polluted":true}}}', expect: cleanProbe() }],
  [
    'constructor.prototype in the payload',
    { body: '{"task":"probe","payload":{"constructor":{"prototype":{"polluted":true}}}}', expect: cleanProbe() },
  ],
  [
    'a task named in __proto__ and constructor keys',
    { body: '{"task":"ghost","constructor":{"name":"ok"},"__proto__":{"task":"ok"}}', expect: unknownTask },
  ],
  // Structure
  [
    `nesting ${MAX_JSON_DEPTH + 1} levels deep`,
    { body: env({ task: 'ok', payload: JSON.parse(nested(MAX_JSON_DEPTH)) }), expect: malformed('too-deep') },
  ],
  ['nesting 100,000 levels deep', { body: `{"task":"ok","payload":${nested(100_000)}}`, expect: malformed('too-deep') }],
  ['duplicate task keys (the last one wins, as JSON.parse reads it)', { body: '{"task":"ghost","task":"ok"}', expect: { runs: true } }],
  [
    'attributes that pose as an archive record',
    {
      body: env({ task: 'ok' }),
      attributes: { 'taskworker-archive': '{"reason":"exhausted"}', 'taskworker-reason': 'exhausted' },
      expect: { runs: true },
    },
  ],
  // Size
  ['a payload near the size limit', { body: env({ task: 'probe', payload: big(1000 * KiB) }), expect: cleanProbe() }],
  [
    'huge appData (900 KiB)',
    {
      body: env({ task: 'probe', appData: { blob: big(900 * KiB) } }),
      expect: cleanProbe((r) => expect(r.appDataBytes).toBeGreaterThan(900 * KiB)),
    },
  ],
  ['an unknown task with a payload near the size limit', { body: env({ task: 'ghost', payload: big(1023 * KiB) }), expect: unknownTask }],
  ['a body of 1 MiB less 1 KiB that is not JSON', { body: big(1_048_576 - KiB), expect: malformed('not-json') }],
  ['a body of 1 MiB less 64 bytes that is not JSON', { body: big(1_048_576 - 64), expect: { ...malformed('not-json'), cut: true } }],
  ['a body of exactly 1 MiB that is not JSON', { body: big(1_048_576), expect: { ...malformed('not-json'), cut: true } }],
  ['a body over the SQS limit', { body: big(1_048_577), expect: { rejectedBySqs: /InvalidParameterValue|too long|shorter than/i } }],
  // Encoding
  ['bytes that are not UTF-8', { body: garbage(512), expect: malformed('not-json') }],
  [
    'bytes that are not UTF-8 inside a JSON string',
    {
      body: Buffer.concat([Buffer.from('{\\"task\\":\\"probe\\",\\"payload\\":\\"'), garbage(16), Buffer.from('\\"}')]),
      expect: cleanProbe(),
    },
  ],
  ['a NUL character', { body: '{"task":"ok"}\u0000', expect: { rejectedBySqs: /InvalidMessageContents/ } }],
  ['a lone surrogate', { body: '{"task":"ok","payload":"\uD800"}', expect: { rejectedBySqs: /InvalidMessageContents/ } }],
  ['control characters', { body: '\u0001\u0002\u0003', expect: { rejectedBySqs: /InvalidMessageContents/ } }],
];

let emulators: Emulators;
let clients: ReturnType<typeof cleanClients>;
let bundle: TaskBundle;
let v: InProcessVersion;
let runtime: DispatcherRuntime;
const logger = recordingLogger();
const published: Published[] = [];
const archived: ArchivedMessage[] = [];
let startedAt = 0;

beforeAll(async () => {
  startedAt = Date.now();
  emulators = await startEmulators();
  clients = cleanClients({ sqs: emulators.sqsEndpoint, dynamodb: emulators.dynamodbEndpoint });
  const built = await buildFixtureBundle(CHAOS_CONFIG);
  // Short polls only: a long poll the previous case's stop abandoned would stay open in the
  // emulator (as in SQS) and take the next case's first message for a visibility timeout. The
  // SLA-aware selector long-polls an idle fleet for up to 20 s whatever `longPollSeconds` says, so
  // the corpus runs under ReducedLottery, which keeps to it; the selector is not under test here.
  bundle = {
    ...built,
    config: {
      ...built.config,
      dispatcher: { ...built.config.dispatcher, selector: 'reduced-lottery' },
      queues: built.config.queues.map((q) => ({ ...q, longPollSeconds: 0 })),
    },
  };
  v = await inProcessVersion(clients, bundle, 'corpus');
  runtime = v.dispatcher('corpus-dispatcher', clients, logger);
  runtime.warm();
});

afterAll(async () => {
  await v?.close();
  clients?.sqs.destroy();
  clients?.dynamo.destroy();
  await emulators?.stop();
});

/** Sends a body as an SQS client would; raw bytes go straight to the emulator's HTTP API. */
async function send(hostile: Pick<Hostile, 'body' | 'attributes'>): Promise<string> {
  const queueUrl = v.urls.queues.work as string;
  if (Buffer.isBuffer(hostile.body)) {
    const request = Buffer.concat([
      Buffer.from(`{"QueueUrl":${JSON.stringify(queueUrl)},"MessageBody":"`),
      hostile.body,
      Buffer.from('"}'),
    ]);
    const response = await fetch(emulators.sqsEndpoint, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-amz-json-1.0',
        'x-amz-target': 'AmazonSQS.SendMessage',
        authorization: 'AWS4-HMAC-SHA256 Credential=local/20260101/us-east-1/sqs/aws4_request, SignedHeaders=host, Signature=0',
      },
      body: request,
    });
    const answer = (await response.json()) as { MessageId?: string; message?: string };
    if (!answer.MessageId) throw new Error(`the emulator refused the raw body: ${answer.message}`);
    return answer.MessageId;
  }
  const sent = await clients.sqs.send(
    new SendMessageCommand({
      QueueUrl: queueUrl,
      MessageBody: hostile.body,
      ...(hostile.attributes
        ? {
            MessageAttributes: Object.fromEntries(
              Object.entries(hostile.attributes).map(([k, value]) => [k, { DataType: 'String', StringValue: value }]),
            ),
          }
        : {}),
    }),
  );
  return sent.MessageId as string;
}

const FINAL = new Set(['succeeded', 'archived']);

/** Runs the dispatcher until every one of `ids` has a final outcome; returns the reports' entries for them. */
async function runUntilSettled(ids: readonly string[]): Promise<{ batches: string[][]; final: Map<string, JobReport> }> {
  const final = new Map<string, JobReport>();
  const batches: string[][] = [];
  const seen = () => {
    final.clear();
    batches.length = 0;
    for (const report of v.reports) {
      const mine = report.jobs.filter((j) => ids.includes(j.messageId));
      if (mine.length > 0) batches.push(mine.map((j) => j.messageId));
      for (const job of mine) if (FINAL.has(job.outcome)) final.set(job.messageId, job);
    }
    return final.size === ids.length;
  };
  const stop = new AbortController();
  const running = runtime.invoke(Date.now() + 120_000, stop.signal);
  const settled = await until(seen, 60_000, 20);
  stop.abort();
  const summary = await running;
  expect(summary.errors).toBe(0);
  if (!settled) throw new Error(`not settled: ${JSON.stringify(ids.filter((id) => !final.has(id)))}`);
  return { batches, final };
}

describe('hostile input corpus: each kind archived with a reason, its batch neighbours still run', () => {
  it.each(CORPUS)('%s', async (_kind, hostile) => {
    const errorsBefore = logger.entries.filter((e) => e.level === 'error').length;
    const before = await send({ body: JSON.stringify({ task: 'ok', payload: { n: 'before' } }) });
    let hostileId: string | undefined;
    if ('rejectedBySqs' in hostile.expect) {
      // Nothing SQS refuses ever reaches a dispatcher; the batch around it runs.
      const refusal = await send(hostile).then(
        () => undefined,
        (error: unknown) => error as Error,
      );
      expect(`${refusal?.name}: ${refusal?.message}`).toMatch(hostile.expect.rejectedBySqs);
    } else {
      hostileId = await send(hostile);
    }
    const after = await send({ body: JSON.stringify({ task: 'ok', payload: { n: 'after' } }) });
    const ids = [before, ...(hostileId ? [hostileId] : []), after];
    const { batches, final } = await runUntilSettled(ids);
    archived.push(...(await drainArchive(clients.sqs, v.urls.archive)));
    for (const id of ids) published.push({ jobId: id, task: 'any' });

    // All three arrived in one batch; the well-formed neighbours ran.
    expect(batches.some((b) => ids.every((id) => b.includes(id)))).toBe(true);
    expect(final.get(before)?.outcome).toBe('succeeded');
    expect(final.get(after)?.outcome).toBe('succeeded');
    // Nothing failed: no receive, settle or record error.
    expect(logger.entries.filter((e) => e.level === 'error').slice(errorsBefore)).toEqual([]);

    if (!hostileId) return;
    const outcome = final.get(hostileId);
    const job = await v.jobs.get(outcome?.jobId ?? hostileId);
    if ('archived' in hostile.expect) {
      expect(outcome).toMatchObject({ outcome: 'archived', reason: hostile.expect.archived });
      const copy = archived.find((m) => m.record?.messageId === hostileId);
      expect(copy?.reasonAttribute).toBe(hostile.expect.archived);
      expect(copy?.record).toMatchObject({
        reason: hostile.expect.archived,
        ...(hostile.expect.code ? { code: hostile.expect.code } : {}),
      });
      expect(readArchiveRecord({ 'taskworker-archive': JSON.stringify(copy?.record) })).toBeDefined();
      expect(job).toMatchObject({ state: 'archived', reason: hostile.expect.archived });
      // The archive keeps the body whole, unless body and record cannot fit SQS's 1 MiB together.
      const sent = Buffer.isBuffer(hostile.body) ? undefined : hostile.body;
      if (hostile.expect.cut) {
        expect(copy?.record?.bodyTruncatedFrom).toBe(Buffer.byteLength(sent ?? ''));
        expect(sent?.startsWith(copy?.body ?? '-')).toBe(true);
      } else {
        expect(copy?.record?.bodyTruncatedFrom).toBeUndefined();
        if (sent !== undefined) expect(copy?.body === sent).toBe(true);
      }
    } else if ('runs' in hostile.expect) {
      expect(outcome?.outcome).toBe('succeeded');
      expect(job?.state).toBe('succeeded');
      hostile.expect.result?.(job?.result);
    }
    // The dispatcher's own process was not polluted either.
    expect('polluted' in {}).toBe(false);
  });

  it('sends two archive-bound bodies of 600 KiB from one batch to the archive (more than one SendMessageBatch holds)', async () => {
    const bodies = [big(600 * KiB, 'a'), JSON.stringify({ task: 'ghost', payload: big(600 * KiB, 'b') }), JSON.stringify({ task: 'ok' })];
    const ids: string[] = [];
    for (const body of bodies) ids.push(await send({ body }));
    const { batches, final } = await runUntilSettled(ids);
    archived.push(...(await drainArchive(clients.sqs, v.urls.archive)));
    for (const id of ids) published.push({ jobId: id, task: 'any' });
    expect(batches.some((b) => ids.every((id) => b.includes(id)))).toBe(true);
    expect(ids.map((id) => [final.get(id)?.outcome, final.get(id)?.reason])).toEqual([
      ['archived', 'malformed'],
      ['archived', 'unknown-task'],
      ['succeeded', undefined],
    ]);
    // The archive keeps each body unchanged.
    for (const [i, id] of ids.slice(0, 2).entries()) {
      const copy = archived.find((m) => m.record?.messageId === id);
      expect(copy?.body === bodies[i]).toBe(true);
    }
  });

  it('leaves nothing behind: every message succeeded or archived with a reason, and the stats agree', async () => {
    const result = await audit({
      sqs: clients.sqs,
      dynamo: clients.dynamo,
      urls: v.urls,
      jobsTable: v.tables.jobs,
      published,
      archived,
      depth: v.depth,
      historyLimit: bundle.config.tracking.historyLimit,
    });
    const stats = await statsOver(v.stats, 'work', daysSince(startedAt));
    writeTally({
      suite: 'corpus',
      published: result.published,
      succeeded: result.succeeded,
      archived: result.archived,
      lost: result.lost.length,
      duplicates: result.completedTwice.length,
      details: { kinds: CORPUS.length + 1, archivedByReason: result.archivedByReason },
    });
    expect(result.lost).toEqual([]);
    expect(result.completedTwice).toEqual([]);
    expect(result.archivedWithoutMessage).toEqual([]);
    expect(result.archiveMessagesWithoutReason).toBe(0);
    expect(result.leftInQueues + result.leftInDeadLetterQueues).toBe(0);
    expect(stats.succeeded).toBe(result.succeeded);
    expect(stats.archived).toEqual(result.archivedByReason);
  });
});
