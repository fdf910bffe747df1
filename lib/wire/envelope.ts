import { EnvelopeError, type MalformedCode } from '../errors';
import { bodyBytes, SQS_MESSAGE_LIMIT_BYTES } from '../layout/sqs-limits';
import { EVENT_NAME_PATTERN, type EventRef } from './event-ref';
import { type PayloadRef, payloadRefProblem } from './payload-ref';

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
  /**
   * A claim check instead of `payload` (never both): the payload's JSON is the S3 object it names,
   * in the version's bucket under `payloads/`; the dispatcher reads it before the task runs. What
   * the publisher sends for a payload over `payloads.offloadAboveBytes`; any SDK may send one.
   */
  readonly payloadRef?: PayloadRef;
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
  /**
   * Epoch milliseconds after which the job must not start: an attempt that would start then (the
   * first, a retry, a parked or waiting job come due) is not run, and the job is archived `expired`.
   * Celery's `expires`. @defaultValue never
   */
  readonly expiresAt?: number;
  /**
   * Jobs (ids, at most {@link MAX_DEPENDENCIES}) that must end before this one may run: the
   * dispatcher keeps it `waiting` in the jobs table and sends it to its queue once the last of them
   * has succeeded (or ended, with `onDependencyFailure: 'ignore'`). Tracking `full` only.
   */
  readonly dependsOn?: readonly string[];
  /**
   * A fan-in: this job waits for `awaits` members, the jobs `<id>.0` … `<id>.<awaits - 1>`, each
   * published with `memberOf` naming this job. Needs `id`.
   */
  readonly awaits?: number;
  /** This job is member `<i>` of a fan-in: its id is `<memberOf.id>.<i>`, `memberOf.size` its `awaits`. */
  readonly memberOf?: { readonly id: string; readonly size: number };
  /** What a failed dependency does to this job: `fail` archives it (`dependency-failed`), `ignore` runs it anyway. @defaultValue 'fail' */
  readonly onDependencyFailure?: DependencyFailurePolicy;
  /** Labels to find the job by (at most {@link MAX_TAGS}, each 1..{@link MAX_TAG_LENGTH} printable ASCII characters). */
  readonly tags?: readonly string[];
  /**
   * What the job is about, in the app's words (a customer, a document): 1..{@link MAX_KEY_LENGTH}
   * printable characters. A task's `unique` rule runs one job per task and key at a time.
   */
  readonly key?: string;
  /**
   * Its place among its task's and key's jobs (1, 2, …) when the task is `ordered`: the publisher
   * numbers them from the key's counter (lib/settle/key-order.ts); a message without one is numbered
   * by the dispatcher that first receives it.
   */
  readonly seq?: number;
  /** The event this job is a subscriber's run of (written by the dispatcher that turned an event into jobs; see lib/wire/event.ts). */
  readonly event?: EventRef;
  /** Envelope version. @defaultValue 1 */
  readonly v?: 1;
}

export { EVENT_NAME_PATTERN, type EventRef } from './event-ref';
export type { PayloadRef } from './payload-ref';

/** A message body decoded and validated, with defaults filled in from SQS. */
export interface DecodedJob {
  readonly task: string;
  readonly id: string;
  /** The payload: null for a claim check until the dispatcher has read its object. */
  readonly payload: unknown;
  /** Where the payload is kept (a claim check); its identity (task + digest) is the reference's, not the object's. */
  readonly payloadRef?: PayloadRef;
  readonly appData: unknown;
  readonly publishedAt: number;
  /** Epoch ms the job may start at; absent: now. */
  readonly runAt?: number;
  /** Epoch ms after which it must not start; absent: never. */
  readonly expiresAt?: number;
  readonly dependsOn?: readonly string[];
  readonly awaits?: number;
  readonly memberOf?: { readonly id: string; readonly size: number; readonly index: number };
  readonly onDependencyFailure?: DependencyFailurePolicy;
  readonly tags?: readonly string[];
  readonly key?: string;
  readonly seq?: number;
  readonly event?: EventRef;
}

export type DependencyFailurePolicy = 'fail' | 'ignore';

/** The most dependencies one envelope may list; a larger fan-in is a group (`awaits` / `memberOf`). */
export const MAX_DEPENDENCIES = 100;
/** The most members a fan-in may await. */
export const MAX_AWAITS = 100_000;
export const MAX_TAGS = 10;
export const MAX_TAG_LENGTH = 64;
/** Tags: printable ASCII, no spaces. */
export const TAG_PATTERN = /^[\x21-\x7e]{1,64}$/;

export const MAX_KEY_LENGTH = 128;
/** Keys: 1..128 printable characters (any script; no control, format or unassigned code points). */
export const KEY_PATTERN = /^[^\p{C}]{1,128}$/u;

/** What is wrong with a job's `key`, or undefined. Shared with the publisher and the CLI. */
export function keyProblem(value: unknown): string | undefined {
  if (typeof value !== 'string') return `is ${preview(value)}; expected a string`;
  if (!KEY_PATTERN.test(value)) return `is ${preview(value)}; expected 1..${MAX_KEY_LENGTH} printable characters`;
  return undefined;
}

/** Whether a job waits for others before it may run. */
export function hasDependencies(job: Pick<DecodedJob, 'dependsOn' | 'awaits'>): boolean {
  return (job.dependsOn?.length ?? 0) > 0 || (job.awaits ?? 0) > 0;
}

/** What SQS says about a message, used for the envelope's defaults. */
export interface MessageMeta {
  readonly messageId: string;
  readonly sentTimestamp: number;
}

/** Task names: a letter or digit, then letters, digits, `.`, `_`, `-`; no slashes or colons, so no paths or module specifiers. */
export const TASK_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** Job ids: 1..128 printable ASCII characters. */
export const JOB_ID_PATTERN = /^[\x21-\x7e]{1,128}$/;
/** Deepest nesting accepted in a body; deeper bodies are archived as `too-deep` before they can exhaust a stack. */
export const MAX_JSON_DEPTH = 64;
/** Kept free in every published message so the archive can add its reason attributes. */
export const ARCHIVE_RESERVE_BYTES = 8_192;
/** The largest body `publish` accepts. */
export const MAX_BODY_BYTES = SQS_MESSAGE_LIMIT_BYTES - ARCHIVE_RESERVE_BYTES;

const KNOWN_VERSION = 1;
/**
 * The earliest `expiresAt` a body may carry (2001-09-09 in epoch ms): anything smaller is a time in
 * seconds (10 digits until 2286) mistaken for milliseconds, never a deadline anyone meant.
 */
export const MIN_EXPIRES_AT_MS = 1_000_000_000_000;
/** The latest instant a JavaScript `Date` holds (year 275760). */
export const MAX_EPOCH_MS = 8_640_000_000_000_000;

/** Serializes an envelope; `v` is always written so future readers can tell versions apart. */
export function encodeEnvelope(envelope: EnvelopeV1): string {
  const body: Record<string, unknown> = { v: KNOWN_VERSION, task: envelope.task };
  if (envelope.payloadRef !== undefined) body.payloadRef = envelope.payloadRef;
  else body.payload = envelope.payload ?? null;
  if (envelope.id !== undefined) body.id = envelope.id;
  if (envelope.appData !== undefined) body.appData = envelope.appData;
  if (envelope.publishedAt !== undefined) body.publishedAt = envelope.publishedAt;
  if (envelope.runAt !== undefined) body.runAt = envelope.runAt;
  if (envelope.expiresAt !== undefined) body.expiresAt = envelope.expiresAt;
  if (envelope.dependsOn !== undefined && envelope.dependsOn.length > 0) body.dependsOn = envelope.dependsOn;
  if (envelope.awaits !== undefined) body.awaits = envelope.awaits;
  if (envelope.memberOf !== undefined) body.memberOf = envelope.memberOf;
  if (envelope.onDependencyFailure !== undefined) body.onDependencyFailure = envelope.onDependencyFailure;
  if (envelope.tags !== undefined && envelope.tags.length > 0) body.tags = envelope.tags;
  if (envelope.key !== undefined) body.key = envelope.key;
  if (envelope.seq !== undefined) body.seq = envelope.seq;
  if (envelope.event !== undefined) body.event = envelope.event;
  return JSON.stringify(body);
}

/**
 * The job id a body names even when it is not a valid envelope (a JSON object whose `id` is a job
 * id), so the record of a rejected message can say which id its publisher gave it. Undefined when
 * there is none to read. Never trusted for anything but finding that record.
 */
export function readableEnvelopeId(body: string): string | undefined {
  if (bodyBytes(body) > SQS_MESSAGE_LIMIT_BYTES) return undefined;
  try {
    const parsed: unknown = JSON.parse(body);
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed) || !Object.hasOwn(parsed, 'id')) return undefined;
    const id = (parsed as { id?: unknown }).id;
    return typeof id === 'string' && JOB_ID_PATTERN.test(id) ? id : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Decodes and validates a message body. Throws {@link EnvelopeError} with a machine-readable code;
 * never runs or resolves anything named in the message.
 */
export function decodeEnvelope(body: string, meta: MessageMeta): DecodedJob {
  return decodeJobFields(parseBody(body), meta);
}

/**
 * A body's JSON object, checked for size and depth before anything reads its fields (shared by
 * task and event envelopes). Throws {@link EnvelopeError}.
 */
export function parseBody(body: string): (key: string) => unknown {
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
  return (key: string): unknown => (Object.hasOwn(fields, key) ? fields[key] : undefined);
}

/** Validates a task envelope's fields (see {@link decodeEnvelope}). */
export function decodeJobFields(own: (key: string) => unknown, meta: MessageMeta): DecodedJob {
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
  const publishedAt = epochMsField(own, 'publishedAt', 'bad-published-at');
  const runAt = epochMsField(own, 'runAt', 'bad-run-at');
  const expiresAt = epochMsField(own, 'expiresAt', 'bad-expires-at');
  if (expiresAt !== undefined && expiresAt < MIN_EXPIRES_AT_MS) {
    // Seconds given for milliseconds (Python's time.time(), Unix time) would expire the job unrun.
    throw new EnvelopeError(
      'bad-expires-at',
      `expiresAt is ${expiresAt} (${new Date(expiresAt).toISOString()}); expected epoch milliseconds — it looks like seconds`,
      'expiresAt',
    );
  }
  const payloadRef = decodePayloadRefField(own);
  const jobId = (id as string | undefined) ?? meta.messageId;
  const relations = decodeRelations(own, jobId, id !== undefined);
  const key = own('key');
  if (key !== undefined) {
    const problem = keyProblem(key);
    if (problem) throw new EnvelopeError('bad-key', `key ${problem}`, 'key');
  }
  const seq = own('seq');
  if (seq !== undefined && !(Number.isSafeInteger(seq) && (seq as number) >= 1)) {
    throw new EnvelopeError('bad-seq', `seq is ${preview(seq)}; expected an integer 1..${Number.MAX_SAFE_INTEGER}`, 'seq');
  }
  const event = own('event');
  return {
    task,
    id: jobId,
    payload: own('payload') ?? null,
    ...(payloadRef !== undefined ? { payloadRef } : {}),
    appData: own('appData') ?? null,
    publishedAt: publishedAt ?? meta.sentTimestamp,
    ...(runAt !== undefined ? { runAt } : {}),
    ...(expiresAt !== undefined ? { expiresAt } : {}),
    ...relations,
    ...(key !== undefined ? { key: key as string } : {}),
    ...(seq !== undefined ? { seq: seq as number } : {}),
    ...(event !== undefined ? { event: decodeEventRef(event) } : {}),
  };
}

/**
 * A body's `payloadRef` (a task's or an event's), checked and with only its own fields (a raw
 * message's extras left behind); undefined when there is none. Throws {@link EnvelopeError}
 * (`bad-payload-ref`) for a bad one, or one given beside a `payload`.
 */
export function decodePayloadRefField(own: (key: string) => unknown): PayloadRef | undefined {
  const value = own('payloadRef');
  if (value === undefined) return undefined;
  const problem = payloadRefProblem(value);
  if (problem) throw new EnvelopeError('bad-payload-ref', `payloadRef ${problem}`, 'payloadRef');
  if (own('payload') !== undefined)
    throw new EnvelopeError('bad-payload-ref', 'payloadRef and payload are both given; a claim check replaces the payload', 'payloadRef');
  const ref = value as PayloadRef;
  return { bucket: ref.bucket, key: ref.key, bytes: ref.bytes, ...(ref.sha256 !== undefined ? { sha256: ref.sha256 } : {}) };
}

/** A task envelope's `event`: the event a subscriber's job runs for. */
function decodeEventRef(value: unknown): EventRef {
  if (typeof value === 'string') {
    // A careless publisher's event envelope with a task added: say which, not what a ref looks like.
    throw new EnvelopeError('bad-event', `a body names a task or an event, not both (task and event ${preview(value)})`, 'event');
  }
  const f = typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  const ok =
    f !== undefined &&
    typeof f.id === 'string' &&
    JOB_ID_PATTERN.test(f.id) &&
    typeof f.name === 'string' &&
    EVENT_NAME_PATTERN.test(f.name) &&
    isEpochMs(f.emittedAt) &&
    (f.source === undefined || (typeof f.source === 'string' && f.source.length <= 30));
  if (!ok) {
    throw new EnvelopeError('bad-event', `event is ${preview(value)}; expected {"id", "name", "emittedAt"[, "source"]}`, 'event');
  }
  return {
    id: f.id as string,
    name: f.name as string,
    ...(f.source !== undefined ? { source: f.source as string } : {}),
    emittedAt: f.emittedAt as number,
  };
}

/** The fields that relate a job to others (dependencies, fan-in membership) and its tags, validated. */
function decodeRelations(
  own: (key: string) => unknown,
  jobId: string,
  explicitId: boolean,
): Pick<DecodedJob, 'dependsOn' | 'awaits' | 'memberOf' | 'onDependencyFailure' | 'tags'> {
  const out: { -readonly [K in keyof DecodedJob]?: DecodedJob[K] } = {};
  const dependsOn = own('dependsOn');
  if (dependsOn !== undefined) {
    const problem = dependencyListProblem(dependsOn, jobId);
    if (problem) throw new EnvelopeError('bad-depends-on', `dependsOn ${problem}`, 'dependsOn');
    if ((dependsOn as string[]).length > 0) out.dependsOn = dependsOn as string[];
  }
  const awaits = own('awaits');
  if (awaits !== undefined) {
    if (typeof awaits !== 'number' || !Number.isInteger(awaits) || awaits < 1 || awaits > MAX_AWAITS) {
      throw new EnvelopeError('bad-awaits', `awaits is ${preview(awaits)}; expected an integer 1..${MAX_AWAITS}`, 'awaits');
    }
    if (!explicitId) throw new EnvelopeError('bad-awaits', 'awaits needs an explicit id (its members are named <id>.<i>)', 'awaits');
    out.awaits = awaits;
  }
  const memberOf = own('memberOf');
  if (memberOf !== undefined) out.memberOf = decodeMembership(memberOf, jobId);
  const policy = own('onDependencyFailure');
  if (policy !== undefined) {
    if (policy !== 'fail' && policy !== 'ignore') {
      throw new EnvelopeError(
        'bad-on-dependency-failure',
        `onDependencyFailure is ${preview(policy)}; expected "fail" or "ignore"`,
        'onDependencyFailure',
      );
    }
    out.onDependencyFailure = policy;
  }
  const tags = own('tags');
  if (tags !== undefined) {
    const problem = tagListProblem(tags);
    if (problem) throw new EnvelopeError('bad-tags', `tags ${problem}`, 'tags');
    if ((tags as string[]).length > 0) out.tags = tags as string[];
  }
  return out;
}

/** What is wrong with a `dependsOn` value for job `jobId`, or undefined. Shared with the publisher. */
export function dependencyListProblem(value: unknown, jobId: string | undefined): string | undefined {
  if (!Array.isArray(value)) return `is ${preview(value)}; expected an array of job ids`;
  if (value.length > MAX_DEPENDENCIES) return `lists ${value.length} jobs; at most ${MAX_DEPENDENCIES} (a larger fan-in is a group)`;
  const seen = new Set<string>();
  for (const dep of value) {
    if (typeof dep !== 'string' || !JOB_ID_PATTERN.test(dep))
      return `has ${preview(dep)}; expected job ids of 1..128 printable ASCII characters`;
    if (dep === jobId) return `names the job itself (${JSON.stringify(dep)})`;
    if (seen.has(dep)) return `names ${JSON.stringify(dep)} twice`;
    seen.add(dep);
  }
  return undefined;
}

/** What is wrong with a `tags` value, or undefined. Shared with the publisher. */
export function tagListProblem(value: unknown): string | undefined {
  if (!Array.isArray(value)) return `is ${preview(value)}; expected an array of strings`;
  if (value.length > MAX_TAGS) return `has ${value.length} tags; at most ${MAX_TAGS}`;
  for (const tag of value) {
    if (typeof tag !== 'string' || !TAG_PATTERN.test(tag))
      return `has ${preview(tag)}; expected 1..${MAX_TAG_LENGTH} printable ASCII characters, no spaces`;
  }
  return undefined;
}

function decodeMembership(value: unknown, jobId: string): NonNullable<DecodedJob['memberOf']> {
  const fields = typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  const group = fields?.id;
  const size = fields?.size;
  if (
    typeof group !== 'string' ||
    !JOB_ID_PATTERN.test(group) ||
    typeof size !== 'number' ||
    !Number.isInteger(size) ||
    size < 1 ||
    size > MAX_AWAITS
  ) {
    throw new EnvelopeError(
      'bad-member-of',
      `memberOf is ${preview(value)}; expected {"id": job id, "size": 1..${MAX_AWAITS}}`,
      'memberOf',
    );
  }
  const index = memberIndex(group, jobId);
  if (index === undefined || index >= size) {
    throw new EnvelopeError(
      'bad-member-of',
      `job id ${JSON.stringify(jobId)} is not a member of ${JSON.stringify(group)} (members are ${group}.0 … ${group}.${size - 1})`,
      'memberOf',
    );
  }
  return { id: group, size, index };
}

/** The member index `i` of job `jobId` in the fan-in `group` (`<group>.<i>`), if it is one. */
export function memberIndex(group: string, jobId: string): number | undefined {
  if (!jobId.startsWith(`${group}.`)) return undefined;
  const suffix = jobId.slice(group.length + 1);
  return /^(0|[1-9]\d{0,5})$/.test(suffix) ? Number(suffix) : undefined;
}

/** The id of member `index` of the fan-in `group`. */
export function memberId(group: string, index: number): string {
  return `${group}.${index}`;
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

/** A body numbered `seq` in its key's order (lib/settle/key-order.ts), every other field kept. */
export function withSeq(body: string, seq: number): string {
  return JSON.stringify({ ...(JSON.parse(body) as Record<string, unknown>), seq });
}

/**
 * A body with one time field left out, every other field kept as it was: `runAt` for an operator's
 * run-now of a parked job (a dispatcher whose clock is a little behind would otherwise hold it
 * again), `expiresAt` for the replay of an expired job (the operator wants it run; with its expiry
 * it would only be archived again).
 */
export function envelopeWithout(body: string, field: 'runAt' | 'expiresAt'): string {
  const fields = JSON.parse(body) as Record<string, unknown>;
  if (!Object.hasOwn(fields, field)) return body;
  delete fields[field];
  return JSON.stringify(fields);
}

/** A time field of the body, in epoch milliseconds, checked; undefined when absent. */
function epochMsField(own: (key: string) => unknown, name: string, code: MalformedCode): number | undefined {
  const value = own(name);
  if (value === undefined) return undefined;
  if (!isEpochMs(value))
    throw new EnvelopeError(code, `${name} is ${preview(value)}; expected epoch milliseconds 0..${MAX_EPOCH_MS}`, name);
  return value;
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

export function preview(value: unknown): string {
  if (value === undefined) return 'missing';
  // JSON has no Infinity or NaN (JSON.stringify writes null): name them.
  if (typeof value === 'number' && !Number.isFinite(value)) return String(value);
  const json = typeof value === 'string' ? JSON.stringify(value) : (JSON.stringify(value) ?? String(value));
  return json.length > 60 ? `${json.slice(0, 57)}...` : json;
}
