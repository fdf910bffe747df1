/**
 * Celery's messages read into jobs (lib/wire/celery.ts), with bodies built by hand in the shape
 * Celery 5.2's SQS transport sends (printed from the real Celery publishing to fauxqs; the
 * integration test sends with Celery itself): what runs, and every refusal, each naming its value.
 */
import { ConfigError, TaskDefinitionError } from '../../lib/errors';
import { createRegistry } from '../../lib/tasks/registry';
import { defineTask, toDefinition } from '../../lib/tasks/task';
import { type CeleryCode, CeleryRejection, celeryJobEnvelope, decodeCelery, isoTime, looksLikeCelery } from '../../lib/wire/celery';
import { decodeEnvelope } from '../../lib/wire/envelope';
import { appConfig } from '../helpers/factories';

const SENT = Date.UTC(2026, 10, 25, 12, 0, 0);
const meta = { messageId: 'msg-1', sentTimestamp: SENT };
const ID = '0b7a3c5e-1f2d-4e5f-9a8b-7c6d5e4f3a2b';
const tasks: Record<string, { name: string; celeryArgs?: string[] }> = {
  'tasks.add': { name: 'add', celeryArgs: ['x', 'y'] },
  'billing.charge': { name: 'charge' },
};
const lookup = (name: string) => tasks[name];

const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');

/** The kombu message Celery's SQS transport sends, fields overridden per test (undefined removes one). */
function kombu(
  options: {
    args?: unknown[];
    kwargs?: unknown;
    embed?: unknown;
    inner?: unknown;
    headers?: Record<string, unknown>;
    top?: Record<string, unknown>;
    properties?: Record<string, unknown>;
  } = {},
): Record<string, unknown> {
  const inner = options.inner ?? [
    options.args ?? [],
    options.kwargs ?? { x: 1, y: 2 },
    options.embed ?? { callbacks: null, errbacks: null, chain: null, chord: null },
  ];
  const message: Record<string, unknown> = {
    body: typeof inner === 'string' ? inner : b64(JSON.stringify(inner)),
    'content-encoding': 'utf-8',
    'content-type': 'application/json',
    headers: {
      lang: 'py',
      task: 'tasks.add',
      id: ID,
      shadow: null,
      eta: null,
      expires: null,
      group: null,
      group_index: null,
      retries: 0,
      timelimit: [null, null],
      root_id: ID,
      parent_id: null,
      argsrepr: '()',
      kwargsrepr: "{'x': 1, 'y': 2}",
      origin: 'gen1@host',
      ignore_result: false,
      ...options.headers,
    },
    properties: {
      correlation_id: ID,
      reply_to: '067363d8-d7a6-3381-8385-2926e56144fd',
      delivery_mode: 2,
      delivery_info: { exchange: '', routing_key: 'orders' },
      priority: 0,
      body_encoding: 'base64',
      delivery_tag: '9f78253a-0e11-4904-9a6c-c548c7914423',
      ...options.properties,
    },
    ...options.top,
  };
  return JSON.parse(JSON.stringify(message)) as Record<string, unknown>;
}

const sqsBody = (message: unknown) => b64(JSON.stringify(message));

function refusal(body: string): CeleryRejection {
  try {
    decodeCelery(body, meta, lookup);
  } catch (error) {
    if (error instanceof CeleryRejection) return error;
    throw error;
  }
  throw new Error('expected a CeleryRejection');
}

describe('a Celery message read as a job', () => {
  it('runs the task that answers to headers.task, with headers.id as its id and the kwargs as its payload', () => {
    const job = decodeCelery(sqsBody(kombu()), meta, lookup);
    expect(job).toEqual({
      task: 'add',
      id: ID,
      payload: { x: 1, y: 2 },
      appData: { celery: { task: 'tasks.add', retries: 0, root_id: ID } },
      publishedAt: SENT,
      tags: ['celery'],
    });
  });

  it('names positional args through the task’s celeryArgs, merged with the kwargs', () => {
    expect(decodeCelery(sqsBody(kombu({ args: [7, 9.5], kwargs: {} })), meta, lookup).payload).toEqual({ x: 7, y: 9.5 });
    expect(decodeCelery(sqsBody(kombu({ args: [7], kwargs: { y: 3, z: true } })), meta, lookup).payload).toEqual({ x: 7, y: 3, z: true });
  });

  it('reads eta as runAt (an aware time at its offset, a naive one as UTC), and a countdown header from the send', () => {
    const at = (eta: string) => decodeCelery(sqsBody(kombu({ headers: { eta } })), meta, lookup).runAt;
    expect(at('2026-11-25T21:13:23.261452+00:00')).toBe(Date.UTC(2026, 10, 25, 21, 13, 23, 261));
    expect(at('2026-11-25T21:13:23+02:00')).toBe(Date.UTC(2026, 10, 25, 19, 13, 23));
    expect(at('2026-11-25T21:13:23')).toBe(Date.UTC(2026, 10, 25, 21, 13, 23));
    expect(decodeCelery(sqsBody(kombu({ headers: { countdown: 30 } })), meta, lookup).runAt).toBe(SENT + 30_000);
  });

  it('keeps the lineage Celery sent (root, parent, group) for the task in ctx.appData', () => {
    const job = decodeCelery(sqsBody(kombu({ headers: { parent_id: 'p-1', group: 'g-1', retries: 2 } })), meta, lookup);
    expect(job.appData).toEqual({ celery: { task: 'tasks.add', retries: 2, root_id: ID, parent_id: 'p-1', group: 'g-1' } });
  });

  it('accepts an expiry still ahead', () => {
    const expires = new Date(SENT + 60_000).toISOString();
    expect(decodeCelery(sqsBody(kombu({ headers: { expires } })), meta, lookup).id).toBe(ID);
  });

  it('becomes an envelope of the same job for every later path (retry copies, parked bodies, the archive)', () => {
    const job = decodeCelery(sqsBody(kombu({ headers: { eta: '2026-11-25T21:13:23Z' } })), meta, lookup);
    expect(decodeEnvelope(celeryJobEnvelope(job), { messageId: 'other', sentTimestamp: 0 })).toEqual(job);
  });
});

describe('a Celery message refused, naming the value', () => {
  it.each<[string, () => string, CeleryCode, string]>([
    [
      'pickle',
      () => sqsBody(kombu({ top: { 'content-type': 'application/x-python-serialize', 'content-encoding': 'binary' } })),
      'celery-content-type',
      '(pickle)',
    ],
    ['yaml', () => sqsBody(kombu({ top: { 'content-type': 'application/x-yaml' } })), 'celery-content-type', '(yaml)'],
    ['msgpack', () => sqsBody(kombu({ top: { 'content-type': 'application/x-msgpack' } })), 'celery-content-type', '(msgpack)'],
    ['another encoding', () => sqsBody(kombu({ top: { 'content-encoding': 'latin-1' } })), 'celery-content-type', '"latin-1"'],
    [
      'protocol v1 (no headers.task)',
      () => sqsBody(kombu({ headers: { task: undefined }, inner: { task: 'tasks.add', id: ID, args: [], kwargs: {} } })),
      'celery-protocol',
      'protocol v1',
    ],
    [
      'protocol v1 body under v2 headers',
      () => sqsBody(kombu({ inner: { task: 'tasks.add', args: [] } })),
      'celery-protocol',
      'protocol v1',
    ],
    ['a bad id', () => sqsBody(kombu({ headers: { id: 'has space' } })), 'celery-id', '"has space"'],
    ['a missing id', () => sqsBody(kombu({ headers: { id: undefined } })), 'celery-id', 'missing'],
    ['a numeric task', () => sqsBody(kombu({ headers: { task: 42 } })), 'celery-task', '42'],
    [
      'args without a mapping',
      () => sqsBody(kombu({ headers: { task: 'billing.charge' }, args: [1] })),
      'celery-args',
      'declares no celeryArgs',
    ],
    ['more args than the mapping', () => sqsBody(kombu({ args: [1, 2, 3], kwargs: {} })), 'celery-args', 'names 2 (x, y)'],
    ['an arg given twice', () => sqsBody(kombu({ args: [1], kwargs: { x: 2 } })), 'celery-args', 'x is given both'],
    ['a chain', () => sqsBody(kombu({ embed: { chain: [{ task: 'tasks.mul' }] } })), 'celery-canvas', 'embed.chain'],
    ['a callback', () => sqsBody(kombu({ embed: { callbacks: [{ task: 'tasks.log' }] } })), 'celery-canvas', 'embed.callbacks'],
    ['kwargs that are a list', () => sqsBody(kombu({ kwargs: [1] })), 'celery-body', 'kwargs [1]'],
    ['args that are an object', () => sqsBody(kombu({ inner: [{}, {}, null] })), 'celery-body', 'args are {}'],
    ['a body of two parts', () => sqsBody(kombu({ inner: [[], {}] })), 'celery-body', 'expected [args, kwargs, embed]'],
    ['an inner body that is not base64', () => sqsBody(kombu({ inner: 'not base64!' })), 'celery-body', 'not base64'],
    ['an inner body that is not JSON', () => sqsBody(kombu({ inner: b64('[[], {') })), 'celery-body', 'not JSON'],
    ['a raw (unencoded) body', () => sqsBody(kombu({ properties: { body_encoding: undefined } })), 'celery-body', 'body_encoding'],
    ['a bad eta', () => sqsBody(kombu({ headers: { eta: 'tomorrow' } })), 'celery-eta', '"tomorrow"'],
    ['an impossible eta', () => sqsBody(kombu({ headers: { eta: '2026-02-31T00:00:00' } })), 'celery-eta', '2026-02-31'],
    ['a numeric eta', () => sqsBody(kombu({ headers: { eta: 1_700_000_000 } })), 'celery-eta', '1700000000'],
    ['a negative countdown', () => sqsBody(kombu({ headers: { countdown: -5 } })), 'celery-eta', '-5'],
    ['a bad expires', () => sqsBody(kombu({ headers: { expires: 3600 } })), 'celery-expires', '3600'],
    ['a body that is not base64', () => 'task=tasks.add&id=1', 'celery-not-base64', 'neither an envelope'],
    ['base64 of something else', () => b64('hello, world'), 'celery-not-kombu', "not kombu's JSON"],
    ['base64 of a JSON array', () => b64('[1, 2, 3]'), 'celery-not-kombu', "not kombu's JSON"],
  ])('%s', (_what, body, code, named) => {
    const error = refusal(body());
    expect(error.code).toBe(code);
    expect(error.reason).toBe('malformed');
    expect(error.message).toContain(named);
  });

  it('refuses a task no task answers to as unknown-task, naming the Celery name, its id kept for the record', () => {
    const error = refusal(sqsBody(kombu({ headers: { task: 'tasks.nope' } })));
    expect(error).toMatchObject({ reason: 'unknown-task', code: 'celery-task', id: ID, task: 'tasks.nope' });
    expect(error.message).toContain('"tasks.nope"');
  });

  it('carries expires as the job’s expiresAt, even one already past (the job’s own end archives it, through its claim)', () => {
    const at = Date.parse('2026-11-25T21:13:23Z');
    const past = decodeCelery(sqsBody(kombu({ headers: { expires: '2026-11-25T21:13:23Z' } })), meta, lookup);
    expect(past).toMatchObject({ id: ID, expiresAt: at });
    expect(decodeEnvelope(celeryJobEnvelope(past), { messageId: 'other', sentTimestamp: 0 })).toEqual(past);
  });

  it('keeps the id and task name a refused message carried, where they read as such', () => {
    expect(refusal(sqsBody(kombu({ top: { 'content-type': 'application/x-python-serialize' } })))).toMatchObject({
      id: ID,
      task: 'tasks.add',
    });
    expect(refusal(sqsBody(kombu({ headers: { id: 'x'.repeat(200) } }))).id).toBeUndefined();
  });
});

describe('hostile Celery bodies', () => {
  it('refuses a body over SQS’s 1 MiB before decoding it', () => {
    const huge = b64('x'.repeat(900_000));
    expect(refusal(huge).message).toContain('bytes');
  });

  it('refuses deep nesting outside and inside, without exhausting the stack', () => {
    const deep = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;
    const outer = b64(`{"body": ${deep(10_000)}, "headers": {}}`);
    expect(refusal(outer).message).toContain('nesting');
    const inner = sqsBody(kombu({ inner: b64(`[[], {"a": ${deep(5_000)}}, null]`) }));
    expect(refusal(inner).message).toContain('nesting');
  });

  it('reads a "__proto__" kwarg as data, not as the payload’s prototype', () => {
    const body = sqsBody(kombu({ inner: b64('[[], {"__proto__": {"polluted": true}, "x": 1}, null]') }));
    const payload = decodeCelery(body, meta, lookup).payload as Record<string, unknown>;
    expect(Object.getPrototypeOf(payload)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(payload.x).toBe(1);
  });

  it('refuses wrong types in every header it reads', () => {
    for (const headers of [{ task: ['tasks.add'] }, { id: { id: ID } }, { eta: true }, { countdown: '30' }, { expires: [] }]) {
      expect(refusal(sqsBody(kombu({ headers })))).toBeInstanceOf(CeleryRejection);
    }
    expect(refusal(sqsBody({ ...kombu(), headers: 'tasks.add' })).code).toBe('celery-protocol');
  });
});

describe('telling a Celery message from an envelope', () => {
  it('knows kombu’s base64 JSON and nothing else', () => {
    expect(looksLikeCelery(sqsBody(kombu()))).toBe(true);
    expect(looksLikeCelery(sqsBody(kombu({ top: { 'content-type': 'application/x-python-serialize' } })))).toBe(true);
    expect(looksLikeCelery('{"task":"add","payload":{}}')).toBe(false);
    expect(looksLikeCelery(b64('{"task":"add"}'))).toBe(false);
    expect(looksLikeCelery('eyJ!')).toBe(false);
  });

  it('reads ISO times as Python writes them, and nothing looser', () => {
    expect(isoTime('2026-11-25T21:13:23.261452+00:00')).toBe(Date.UTC(2026, 10, 25, 21, 13, 23, 261));
    expect(isoTime('2026-11-25 21:13:23Z')).toBe(Date.UTC(2026, 10, 25, 21, 13, 23));
    expect(isoTime('2026-11-25T21:13:23-0130')).toBe(Date.UTC(2026, 10, 25, 22, 43, 23));
    for (const bad of ['2026-11-25', 'Nov 25 2026', '2026-11-25T24:00:00', '2026-13-01T00:00:00', '2026-11-25T21:13:23+25:00', 42]) {
      expect(isoTime(bad)).toBeUndefined();
    }
  });
});

describe('declaring Celery names', () => {
  const base = { name: 'add', queue: 'urgent', timeLimitSeconds: 5, run: () => undefined };

  it('takes a celeryName and the keys of its positional args', () => {
    expect(defineTask({ ...base, celeryName: 'tasks.add', celeryArgs: ['x', 'y'] })).toMatchObject({
      celeryName: 'tasks.add',
      celeryArgs: ['x', 'y'],
    });
  });

  it.each([
    ['celeryName', { ...base, celeryName: 'has space' }],
    ['celeryName', { ...base, celeryName: '' }],
    ['celeryName', { ...base, celeryName: 42 }],
    ['celeryArgs', { ...base, celeryArgs: ['x'] }],
    ['celeryArgs', { ...base, celeryName: 'tasks.add', celeryArgs: ['x', 'x'] }],
    ['celeryArgs', { ...base, celeryName: 'tasks.add', celeryArgs: 'x' }],
    ['celeryArgs', { ...base, celeryName: 'tasks.add', celeryArgs: [''] }],
  ])('refuses a bad %s, naming it', (field, options) => {
    let error: unknown;
    try {
      toDefinition(options, 'tasks/add.ts');
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(TaskDefinitionError);
    expect((error as TaskDefinitionError).field).toBe(field);
  });

  it('refuses two tasks that answer to one Celery name', () => {
    const a = defineTask({ ...base, celeryName: 'tasks.add' });
    const b = defineTask({ ...base, name: 'add-too', celeryName: 'tasks.add' });
    expect(() => createRegistry([a, b], appConfig())).toThrow(/celeryName .*task add does/);
  });

  it('configures the formats a queue accepts: taskworker by default, celery beside it', () => {
    const queues = (accept: unknown) => appConfig({ queues: [{ name: 'urgent', priority: 90, accept } as never] }).queues[0]?.accept;
    expect(queues(undefined)).toEqual(['taskworker']);
    expect(queues(['taskworker', 'celery'])).toEqual(['taskworker', 'celery']);
    for (const bad of [['celery'], ['taskworker', 'pickle'], [], ['taskworker', 'taskworker'], 'celery']) {
      expect(() => queues(bad)).toThrow(ConfigError);
      expect(() => queues(bad)).toThrow(/queues\[0\]\.accept/);
    }
  });
});
