import { EnvelopeError } from '../errors';
import { bodyBytes, SQS_MESSAGE_LIMIT_BYTES } from '../layout/sqs-limits';
import { TASK_NAME_PATTERN } from '../tasks/task';

/**
 * Envelope v1: the SQS message body, UTF-8 JSON. Any SDK can send one;
 * the minimal form is `{"task":"send-email","payload":{...}}`.
 * JSON Schema: `schema/envelope-v1.schema.json`.
 */
export interface EnvelopeV1 {
  /** Registered task name. Only registered names ever run. */
  readonly task: string;
  /** Any JSON. @defaultValue null */
  readonly payload?: unknown;
  /** Job id. @defaultValue the SQS MessageId */
  readonly id?: string;
  /** Any JSON, passed through to the handler as `ctx.appData`. */
  readonly appData?: unknown;
  /** Epoch milliseconds. @defaultValue the SQS SentTimestamp */
  readonly publishedAt?: number;
  /**
   * Epoch milliseconds before which the job must not start. More than 15 minutes away, the
   * dispatcher parks it in the jobs table and a sweep sends it back when it is due; nearer, it is
   * delayed in its queue. @defaultValue now
   */
  readonly runAt?: number;
  /** Envelope version. @defaultValue 1 */
  readonly v?: 1;
}

/** A message body decoded and validated, with defaults filled in from SQS. */
export interface DecodedJob {
  readonly task: string;
  readonly id: string;
  readonly payload: unknown;
  readonly appData: unknown;
  readonly publishedAt: number;
  /** Epoch ms the job may start at; absent: now. */
  readonly runAt?: number;
}

/** What SQS says about a message, used for the envelope's defaults. */
export interface MessageMeta {
  readonly messageId: string;
  readonly sentTimestamp: number;
}

/** Job ids: 1..128 printable ASCII characters. */
export const JOB_ID_PATTERN = /^[\x21-\x7e]{1,128}$/;
/** Deepest nesting accepted in a body; deeper bodies are archived as `too-deep` before they can exhaust a stack. */
export const MAX_JSON_DEPTH = 64;
/** Kept free in every published message so the archive can add its reason attributes. */
export const ARCHIVE_RESERVE_BYTES = 8_192;
/** The largest body `publish` accepts. */
export const MAX_BODY_BYTES = SQS_MESSAGE_LIMIT_BYTES - ARCHIVE_RESERVE_BYTES;

const KNOWN_VERSION = 1;
/** The latest instant a JavaScript `Date` holds (year 275760). */
export const MAX_EPOCH_MS = 8_640_000_000_000_000;

/** Serializes an envelope; `v` is always written so future readers can tell versions apart. */
export function encodeEnvelope(envelope: EnvelopeV1): string {
  const body: Record<string, unknown> = { v: KNOWN_VERSION, task: envelope.task, payload: envelope.payload ?? null };
  if (envelope.id !== undefined) body.id = envelope.id;
  if (envelope.appData !== undefined) body.appData = envelope.appData;
  if (envelope.publishedAt !== undefined) body.publishedAt = envelope.publishedAt;
  if (envelope.runAt !== undefined) body.runAt = envelope.runAt;
  return JSON.stringify(body);
}

/**
 * Decodes and validates a message body. Throws {@link EnvelopeError} with a machine-readable code;
 * never runs or resolves anything named in the message.
 */
export function decodeEnvelope(body: string, meta: MessageMeta): DecodedJob {
  if (bodyBytes(body) > SQS_MESSAGE_LIMIT_BYTES) throw new EnvelopeError('too-large', `body is ${bodyBytes(body)} bytes`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch (error) {
    throw new EnvelopeError('not-json', error instanceof Error ? error.message : 'unparseable body');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    const kind = parsed === null ? 'null' : Array.isArray(parsed) ? 'an array' : `a ${typeof parsed}`;
    throw new EnvelopeError('not-object', `body is ${kind}, not an object`);
  }
  const depth = jsonDepth(parsed, MAX_JSON_DEPTH);
  if (depth > MAX_JSON_DEPTH) throw new EnvelopeError('too-deep', `nesting exceeds ${MAX_JSON_DEPTH} levels`);
  const fields = parsed as Record<string, unknown>;
  const own = (key: string): unknown => (Object.hasOwn(fields, key) ? fields[key] : undefined);

  const v = own('v');
  if (v !== undefined && v !== KNOWN_VERSION) {
    throw new EnvelopeError('bad-version', `v is ${JSON.stringify(v)}; this dispatcher reads version ${KNOWN_VERSION}`, 'v');
  }
  const task = own('task');
  if (typeof task !== 'string' || !TASK_NAME_PATTERN.test(task)) {
    throw new EnvelopeError('bad-task-name', `task is ${preview(task)}; expected a name matching ${TASK_NAME_PATTERN}`, 'task');
  }
  const id = own('id');
  if (id !== undefined && (typeof id !== 'string' || !JOB_ID_PATTERN.test(id))) {
    throw new EnvelopeError('bad-id', `id is ${preview(id)}; expected 1..128 printable ASCII characters`, 'id');
  }
  const publishedAt = own('publishedAt');
  if (publishedAt !== undefined && !isEpochMs(publishedAt)) {
    throw new EnvelopeError(
      'bad-published-at',
      `publishedAt is ${preview(publishedAt)}; expected epoch milliseconds 0..${MAX_EPOCH_MS}`,
      'publishedAt',
    );
  }
  const runAt = own('runAt');
  if (runAt !== undefined && !isEpochMs(runAt)) {
    throw new EnvelopeError('bad-run-at', `runAt is ${preview(runAt)}; expected epoch milliseconds 0..${MAX_EPOCH_MS}`, 'runAt');
  }
  return {
    task,
    id: id ?? meta.messageId,
    payload: own('payload') ?? null,
    appData: own('appData') ?? null,
    publishedAt: publishedAt ?? meta.sentTimestamp,
    ...(runAt !== undefined ? { runAt } : {}),
  };
}

/**
 * A body with its job's id and publish time written in (when the publisher left them to SQS's
 * defaults), for a copy of the message: the copy gets a new MessageId and SentTimestamp but must
 * stay the same job with the same wait. Other fields are kept as they were.
 */
export function pinEnvelope(body: string, job: Pick<DecodedJob, 'id' | 'publishedAt'>): string {
  const fields = JSON.parse(body) as Record<string, unknown>;
  if (Object.hasOwn(fields, 'id') && Object.hasOwn(fields, 'publishedAt')) return body;
  return JSON.stringify({ ...fields, id: job.id, publishedAt: job.publishedAt });
}

function isEpochMs(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= MAX_EPOCH_MS;
}

/** Depth of a parsed JSON value, walked without recursion; stops counting past `limit`. */
export function jsonDepth(value: unknown, limit: number): number {
  let deepest = 0;
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop() as [unknown, number];
    if (typeof node !== 'object' || node === null) continue;
    if (depth > deepest) deepest = depth;
    if (deepest > limit) return deepest;
    for (const child of Array.isArray(node) ? node : Object.values(node)) {
      if (typeof child === 'object' && child !== null) stack.push([child, depth + 1]);
    }
  }
  return deepest;
}

function preview(value: unknown): string {
  if (value === undefined) return 'missing';
  // JSON has no Infinity or NaN (JSON.stringify writes null): name them.
  if (typeof value === 'number' && !Number.isFinite(value)) return String(value);
  const json = typeof value === 'string' ? JSON.stringify(value) : (JSON.stringify(value) ?? String(value));
  return json.length > 60 ? `${json.slice(0, 57)}...` : json;
}
