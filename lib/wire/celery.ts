/**
 * Celery's messages, read for a migration: protocol v2 as Celery's SQS transport (kombu) sends it.
 * The SQS body is base64 of kombu's JSON message, whose own `body` is base64 of the JSON
 * `[args, kwargs, embed]`; what taskworker needs is in its `headers` (as Celery 5.2 sends
 * `app.send_task('tasks.add', kwargs={...}, task_id=...)`, checked against the real Celery and kombu):
 *
 * ```json
 * {"body": "W1tdLCB7...", "content-encoding": "utf-8", "content-type": "application/json",
 *  "headers": {"lang": "py", "task": "tasks.add", "id": "<uuid>", "eta": null, "expires": null,
 *              "retries": 0, "root_id": "<uuid>", "parent_id": null, "group": null, ...},
 *  "properties": {"correlation_id": "<uuid>", "reply_to": "...", "delivery_info": {...},
 *                 "body_encoding": "base64", "delivery_tag": "..."}}
 * ```
 *
 * A message becomes the job of the task whose `celeryName` is `headers.task`, with `headers.id` as
 * its id and the kwargs (and the positional args, through the task's `celeryArgs`) as its payload;
 * `eta` (or a `countdown` header) is its `runAt`. Anything taskworker cannot run as Celery would
 * (another serializer such as pickle, protocol v1, canvas callbacks, args without a mapping) is
 * refused with a {@link CeleryRejection} naming the value; `expires` is the job's `expiresAt`.
 * Nothing here runs, imports or resolves anything a message names.
 */
import { TaskworkerError } from '../errors';
import { bodyBytes, SQS_MESSAGE_LIMIT_BYTES } from '../layout/sqs-limits';
import type { ArchiveReason } from './archive-reasons';
import {
  type DecodedJob,
  encodeEnvelope,
  JOB_ID_PATTERN,
  jsonDepth,
  MAX_EPOCH_MS,
  MAX_JSON_DEPTH,
  type MessageMeta,
  preview,
} from './envelope';

/** What the decoder needs of a task that answers to a Celery name. */
export interface CeleryTask {
  /** The taskworker task's name. */
  readonly name: string;
  /** The payload keys of the positional args, in order. */
  readonly celeryArgs?: readonly string[];
}

/** Looks a task up by the Celery name it answers to. */
export type CeleryLookup = (celeryName: string) => CeleryTask | undefined;

/** The tag every job read from a Celery message carries (`taskworker jobs list --tag celery`). */
export const CELERY_TAG = 'celery';

/** Machine-readable reasons a Celery message is refused. */
export type CeleryCode =
  | 'celery-not-accepted'
  | 'celery-not-base64'
  | 'celery-not-kombu'
  | 'celery-protocol'
  | 'celery-content-type'
  | 'celery-body'
  | 'celery-task'
  | 'celery-id'
  | 'celery-args'
  | 'celery-canvas'
  | 'celery-eta'
  | 'celery-expires';

/**
 * A Celery message taskworker will not run: archived with `reason` (`malformed` or `unknown-task`)
 * and `code`. `id` and `task` are what the message named, when they could be read (the
 * rejection's record is filed under that id).
 */
export class CeleryRejection extends TaskworkerError {
  readonly reason: Extract<ArchiveReason, 'malformed' | 'unknown-task'>;
  readonly code: CeleryCode;
  readonly id: string | undefined;
  readonly task: string | undefined;
  constructor(reason: CeleryRejection['reason'], code: CeleryCode, detail: string, named: { id?: string; task?: string } = {}) {
    super(`Celery message refused (${code}): ${detail}`);
    this.name = 'CeleryRejection';
    this.reason = reason;
    this.code = code;
    this.id = named.id;
    this.task = named.task;
  }
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
/** How the Celery names a message carries are shown in details and records: bounded, printable. */
const SHOWN_TASK = /^[\x21-\x7e]{1,200}$/;
/** ISO 8601 as Python's `datetime.isoformat()` writes it (a naive time is UTC, Celery's default). */
const ISO_TIME = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:?\d{2})?$/;
/** Serializers Celery may use, by content type, to say what a refused one was. */
const SERIALIZERS: Readonly<Record<string, string>> = {
  'application/x-python-serialize': 'pickle',
  'application/x-yaml': 'yaml',
  'application/x-msgpack': 'msgpack',
  'application/data': 'raw bytes',
  'application/json': 'json',
};

/**
 * Whether a body is shaped like a Celery message from kombu's SQS transport: base64 of a JSON
 * object with a `body` and kombu's `headers` or `properties`. Cheap for anything else (a JSON
 * envelope fails at its first character). Used to name the setting when a queue does not accept Celery.
 */
export function looksLikeCelery(body: string): boolean {
  if (!body.startsWith('ey') || bodyBytes(body) > SQS_MESSAGE_LIMIT_BYTES || body.length % 4 !== 0 || !BASE64.test(body)) return false;
  try {
    const kombu = objectOf(JSON.parse(Buffer.from(body, 'base64').toString('utf8')));
    return (
      kombu !== undefined &&
      Object.hasOwn(kombu, 'body') &&
      (objectOf(kombu.headers) !== undefined || objectOf(kombu.properties) !== undefined)
    );
  } catch {
    return false;
  }
}

/**
 * The Celery task name and id a body carries, as far as they can be read (for the record of a
 * message refused, filed under that id): undefined fields where they cannot. Protocol 2 names both
 * in its headers. Protocol 1 sends empty headers and names them in its body, which only a JSON
 * body shows; but Celery sets kombu's `properties.correlation_id` to the task id in either protocol
 * and with any serializer, so a protocol 1 or pickled message is still found by its Celery id.
 */
export function celeryNames(body: string): { id?: string; task?: string } {
  try {
    const kombu = objectOf(JSON.parse(Buffer.from(body, 'base64').toString('utf8')));
    const properties = objectOf(kombu?.properties);
    return {
      ...named(protocolOneBody(kombu)),
      ...named({ id: properties?.correlation_id }),
      ...named(objectOf(kombu?.headers)),
    };
  } catch {
    return {};
  }
}

/** A protocol 1 message's body (`{"task", "id", "args", …}`) when it is JSON; undefined for anything else. */
function protocolOneBody(kombu: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  const inner = kombu?.body;
  if (kombu?.['content-type'] !== 'application/json' || typeof inner !== 'string' || !BASE64.test(inner)) return undefined;
  const parsed: unknown = JSON.parse(Buffer.from(inner, 'base64').toString('utf8'));
  return jsonDepth(parsed, MAX_JSON_DEPTH) > MAX_JSON_DEPTH ? undefined : objectOf(parsed);
}

/**
 * Decodes a Celery message into the job it asks for. Throws {@link CeleryRejection} for anything
 * taskworker will not run, naming the bad value.
 */
export function decodeCelery(body: string, meta: MessageMeta, lookup: CeleryLookup): DecodedJob {
  const kombu = kombuMessage(body);
  const headers = objectOf(kombu.headers);
  const inner = kombu.body;
  if (headers === undefined || headers.task === undefined) {
    throw new CeleryRejection(
      'malformed',
      'celery-protocol',
      'no headers.task: Celery message protocol v1 (or not Celery); taskworker reads protocol 2, Celery 4+’s default (task_protocol = 2)',
    );
  }
  const shown = named(headers);
  const { task, id } = headers;
  if (typeof task !== 'string' || !SHOWN_TASK.test(task)) {
    throw new CeleryRejection('malformed', 'celery-task', `headers.task is ${preview(task)}; expected a Celery task name`, shown);
  }
  if (typeof id !== 'string' || !JOB_ID_PATTERN.test(id)) {
    throw new CeleryRejection('malformed', 'celery-id', `headers.id is ${preview(id)}; expected 1..128 printable ASCII characters`, shown);
  }
  const contentType = kombu['content-type'];
  if (contentType !== 'application/json') {
    const serializer = typeof contentType === 'string' ? SERIALIZERS[contentType.toLowerCase()] : undefined;
    throw new CeleryRejection(
      'malformed',
      'celery-content-type',
      `content-type is ${preview(contentType)}${serializer ? ` (${serializer})` : ''}; taskworker runs only JSON (Celery's serializer='json')`,
      shown,
    );
  }
  const encoding = kombu['content-encoding'];
  if (typeof encoding !== 'string' || !/^utf-?8$/i.test(encoding)) {
    throw new CeleryRejection('malformed', 'celery-content-type', `content-encoding is ${preview(encoding)}; expected "utf-8"`, shown);
  }
  const properties = objectOf(kombu.properties);
  const bodyEncoding = properties?.body_encoding;
  if (bodyEncoding !== 'base64' || typeof inner !== 'string') {
    throw new CeleryRejection(
      'malformed',
      'celery-body',
      `properties.body_encoding is ${preview(bodyEncoding)} and body is ${typeof inner}; expected a base64 body, as kombu's SQS transport sends`,
      shown,
    );
  }
  const def = lookup(task);
  if (!def) {
    throw new CeleryRejection(
      'unknown-task',
      'celery-task',
      `Celery task ${JSON.stringify(task)} is not answered by any task in this version (no task declares celeryName ${JSON.stringify(task)})`,
      shown,
    );
  }
  const onDef = { id, task: def.name };
  const [args, kwargs, embed] = innerBody(inner, onDef);
  const payload = payloadOf(args, kwargs, task, def, onDef);
  checkEmbed(embed, onDef);
  const runAt = runAtOf(headers, meta, onDef);
  // Past its expiry no attempt starts, the first included (Celery's worker revokes it): the job's
  // own end, through its claim (lib/dispatch/job.ts), archived `expired` under its Celery id.
  const expires = headers.expires;
  let expiresAt: number | undefined;
  if (expires !== undefined && expires !== null) {
    expiresAt = isoTime(expires);
    if (expiresAt === undefined) {
      throw new CeleryRejection('malformed', 'celery-expires', `headers.expires is ${preview(expires)}; expected an ISO 8601 time`, onDef);
    }
  }
  const retries = headers.retries;
  const celery: Record<string, unknown> = { task, ...(typeof retries === 'number' && Number.isInteger(retries) ? { retries } : {}) };
  for (const field of ['root_id', 'parent_id', 'group'] as const) {
    const value = headers[field];
    if (typeof value === 'string' && JOB_ID_PATTERN.test(value)) celery[field] = value;
  }
  return {
    task: def.name,
    id,
    payload,
    appData: { celery },
    publishedAt: meta.sentTimestamp,
    ...(runAt !== undefined ? { runAt } : {}),
    ...(expiresAt !== undefined ? { expiresAt } : {}),
    tags: [CELERY_TAG],
  };
}

/**
 * The envelope a decoded Celery job is from here on: what a retry's copy, a parked job and an
 * archived message keep, so every later path (and a replay) reads a native envelope of the same job.
 */
export function celeryJobEnvelope(job: DecodedJob): string {
  return encodeEnvelope({
    task: job.task,
    id: job.id,
    payload: job.payload,
    appData: job.appData,
    publishedAt: job.publishedAt,
    ...(job.runAt !== undefined ? { runAt: job.runAt } : {}),
    ...(job.expiresAt !== undefined ? { expiresAt: job.expiresAt } : {}),
    ...(job.tags ? { tags: job.tags } : {}),
  });
}

/** kombu's JSON message from the SQS body, checked for size, base64, JSON and depth. */
function kombuMessage(body: string): Record<string, unknown> {
  const bytes = bodyBytes(body);
  if (bytes > SQS_MESSAGE_LIMIT_BYTES) throw new CeleryRejection('malformed', 'celery-not-base64', `body is ${bytes} bytes`);
  if (body.length % 4 !== 0 || !BASE64.test(body)) {
    throw new CeleryRejection(
      'malformed',
      'celery-not-base64',
      `body is neither an envelope (JSON) nor a Celery message (base64 of kombu's JSON): ${preview(body.slice(0, 40))}`,
    );
  }
  const kombu = jsonObject(Buffer.from(body, 'base64').toString('utf8'), 'the base64 body');
  if (!kombu) {
    throw new CeleryRejection(
      'malformed',
      'celery-not-kombu',
      "the base64 body is not kombu's JSON message (an object with body and headers)",
    );
  }
  return kombu;
}

/** `[args, kwargs, embed]` from the inner body. */
function innerBody(inner: string, named: { id: string; task: string }): [unknown[], Record<string, unknown>, unknown] {
  if (inner.length % 4 !== 0 || !BASE64.test(inner)) {
    throw new CeleryRejection('malformed', 'celery-body', `body is not base64: ${preview(inner.slice(0, 40))}`, named);
  }
  const text = Buffer.from(inner, 'base64').toString('utf8');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new CeleryRejection(
      'malformed',
      'celery-body',
      `body is not JSON (${error instanceof Error ? error.message : 'unparseable'})`,
      named,
    );
  }
  if (jsonDepth(parsed, MAX_JSON_DEPTH) > MAX_JSON_DEPTH) {
    throw new CeleryRejection('malformed', 'celery-body', `body's nesting exceeds ${MAX_JSON_DEPTH} levels`, named);
  }
  if (!Array.isArray(parsed) || parsed.length !== 3) {
    const protocolOne = objectOf(parsed)?.task !== undefined;
    throw new CeleryRejection(
      'malformed',
      protocolOne ? 'celery-protocol' : 'celery-body',
      protocolOne
        ? 'body is a protocol v1 task (an object naming its task); taskworker reads protocol 2, Celery 4+’s default'
        : `body is ${preview(parsed)}; expected [args, kwargs, embed]`,
      named,
    );
  }
  const [args, kwargs, embed] = parsed as [unknown, unknown, unknown];
  const kw = objectOf(kwargs);
  if (!Array.isArray(args) || kw === undefined) {
    throw new CeleryRejection(
      'malformed',
      'celery-body',
      `body's args are ${preview(args)} and kwargs ${preview(kwargs)}; expected a list and an object`,
      named,
    );
  }
  return [args, kw, embed];
}

/** The payload: kwargs, with positional args under the task's `celeryArgs` keys. */
function payloadOf(
  args: unknown[],
  kwargs: Record<string, unknown>,
  celeryName: string,
  def: CeleryTask,
  named: { id: string; task: string },
): Record<string, unknown> {
  if (args.length === 0) return kwargs;
  const keys = def.celeryArgs;
  if (!keys) {
    throw new CeleryRejection(
      'malformed',
      'celery-args',
      `${args.length} positional args for ${JSON.stringify(celeryName)}, whose task ${def.name} declares no celeryArgs to name them (send kwargs, or declare celeryArgs)`,
      named,
    );
  }
  if (args.length > keys.length) {
    throw new CeleryRejection(
      'malformed',
      'celery-args',
      `${args.length} positional args for ${JSON.stringify(celeryName)}; task ${def.name}'s celeryArgs names ${keys.length} (${keys.join(', ')})`,
      named,
    );
  }
  const payload: Record<string, unknown> = {};
  args.forEach((value, i) => {
    const key = keys[i] as string;
    // Python's own rule: an argument given both ways is an error, not a choice.
    if (Object.hasOwn(kwargs, key)) {
      throw new CeleryRejection('malformed', 'celery-args', `${key} is given both as positional arg ${i} and as a kwarg`, named);
    }
    payload[key] = value;
  });
  return { ...payload, ...kwargs };
}

/** Canvas work taskworker would silently drop (callbacks, errbacks, chains, chords) is refused instead. */
function checkEmbed(embed: unknown, named: { id: string; task: string }): void {
  if (embed === null || embed === undefined) return;
  const fields = objectOf(embed);
  if (!fields) throw new CeleryRejection('malformed', 'celery-body', `body's embed is ${preview(embed)}; expected an object`, named);
  for (const field of ['callbacks', 'errbacks', 'chain', 'chord'] as const) {
    const value = fields[field];
    if (value === null || value === undefined || (Array.isArray(value) && value.length === 0)) continue;
    throw new CeleryRejection(
      'malformed',
      'celery-canvas',
      `embed.${field} is set (${preview(value)}); taskworker does not run Celery's canvas (link, chain, chord): publish the steps as taskworker jobs (dependsOn)`,
      named,
    );
  }
}

/** `eta` (an ISO time), else `countdown` (seconds after it was sent), as epoch ms. */
function runAtOf(headers: Record<string, unknown>, meta: MessageMeta, named: { id: string; task: string }): number | undefined {
  const { eta, countdown } = headers;
  if (eta !== undefined && eta !== null) {
    const at = isoTime(eta);
    if (at === undefined)
      throw new CeleryRejection('malformed', 'celery-eta', `headers.eta is ${preview(eta)}; expected an ISO 8601 time`, named);
    return at;
  }
  if (countdown !== undefined && countdown !== null) {
    if (typeof countdown !== 'number' || !Number.isFinite(countdown) || countdown < 0 || countdown > MAX_EPOCH_MS / 1000) {
      throw new CeleryRejection('malformed', 'celery-eta', `headers.countdown is ${preview(countdown)}; expected seconds ≥ 0`, named);
    }
    return Math.min(MAX_EPOCH_MS, meta.sentTimestamp + Math.round(countdown * 1000));
  }
  return undefined;
}

/** Epoch ms of an ISO 8601 time as Python writes it; undefined for anything else (a naive time is UTC). */
export function isoTime(value: unknown): number | undefined {
  if (typeof value !== 'string') return undefined;
  const m = ISO_TIME.exec(value);
  if (!m) return undefined;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  const ms = Number((m[7] ?? '0').padEnd(3, '0').slice(0, 3));
  const utc = Date.UTC(year, month - 1, day, hour, minute, second, ms);
  // Date.UTC rolls 31 February over to March: a date that is not one is refused.
  const check = new Date(utc);
  if (check.getUTCMonth() !== month - 1 || check.getUTCDate() !== day || hour > 23 || minute > 59 || second > 59) return undefined;
  const zone = m[8];
  let offsetMs = 0;
  if (zone && zone !== 'Z') {
    const digits = zone.replace(':', '');
    const hours = Number(digits.slice(1, 3));
    const minutes = Number(digits.slice(3, 5));
    if (hours > 23 || minutes > 59) return undefined;
    offsetMs = (digits[0] === '-' ? -1 : 1) * (hours * 60 + minutes) * 60_000;
  }
  const at = utc - offsetMs;
  return at >= 0 && at <= MAX_EPOCH_MS ? at : undefined;
}

/** The id and task name a message's headers carry, where each reads as one. */
function named(headers: Record<string, unknown> | undefined): { id?: string; task?: string } {
  const id = headers?.id;
  const task = headers?.task;
  return {
    ...(typeof id === 'string' && JOB_ID_PATTERN.test(id) ? { id } : {}),
    ...(typeof task === 'string' && SHOWN_TASK.test(task) ? { task } : {}),
  };
}

/** A JSON object from text, its depth checked; undefined for anything else. */
function jsonObject(text: string, what: string): Record<string, unknown> | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (jsonDepth(parsed, MAX_JSON_DEPTH) > MAX_JSON_DEPTH) {
    throw new CeleryRejection('malformed', 'celery-not-kombu', `${what}'s nesting exceeds ${MAX_JSON_DEPTH} levels`);
  }
  const object = objectOf(parsed);
  return object && Object.hasOwn(object, 'body') ? object : undefined;
}

/**
 * A JSON object, or undefined. The fields read from it are none of Object.prototype's, and JSON.parse
 * makes a body's "__proto__" an own field, so a message cannot reach the prototype through them.
 */
function objectOf(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}
