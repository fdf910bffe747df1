import { createHash } from 'node:crypto';
import { EnvelopeError } from '../errors';
import { MAX_SNS_MESSAGE_BYTES } from '../layout/aws-limits';
import {
  type DecodedJob,
  decodeJobFields,
  decodePayloadRefField,
  EVENT_NAME_PATTERN,
  type EventRef,
  encodeEnvelope,
  JOB_ID_PATTERN,
  MAX_EPOCH_MS,
  type MessageMeta,
  parseBody,
  pinEnvelope,
  preview,
} from './envelope';
import type { PayloadRef } from './payload-ref';

export { EVENT_NAME_PATTERN, type EventRef } from './envelope';

/**
 * The largest event body: SNS takes 256 KiB a message. Each subscriber's job envelope (the event's
 * fields and its task and id) is a few hundred bytes more, well inside SQS's 1 MiB.
 */
export const MAX_EVENT_BYTES = MAX_SNS_MESSAGE_BYTES;

/**
 * The event envelope: the body an emitter publishes to its version's SNS topic, delivered raw to
 * every subscribed queue whose filter policy names the event (a filter on the body's `event`). Any
 * SDK can publish one; the minimal form is `{"event":"orders.created","payload":{...}}`.
 * JSON Schema: `schema/envelope-v1.schema.json` (its `event` branch).
 */
export interface EventEnvelopeV1 {
  /** A declared event name ({@link EVENT_NAME_PATTERN}). */
  readonly event: string;
  /** Any JSON. @defaultValue null */
  readonly payload?: unknown;
  /**
   * The event's id (1..128 printable ASCII): each subscriber's job id is derived from it, so the
   * same id published again runs no subscriber twice. @defaultValue the SQS MessageId of each
   * delivery (then a re-published event is a new one, and its subscribers' jobs differ per queue)
   */
  readonly id?: string;
  /** The emitting app (informational: the topic it came through is what routed it). */
  readonly source?: string;
  /** Epoch milliseconds. @defaultValue the SQS SentTimestamp */
  readonly emittedAt?: number;
  /** Any JSON, passed through to each subscriber as `ctx.appData`. */
  readonly appData?: unknown;
  /**
   * A claim check in place of `payload` (never both), for a payload too large for SNS: the object is
   * under `payloads/` of the subscribing version's bucket, and every subscriber's job reads it (none
   * deletes it; the bucket's lifecycle does). `publisher.emit` writes `payloads/events/<id>/<sha256>.json`.
   */
  readonly payloadRef?: PayloadRef;
  /** Envelope version. @defaultValue 1 */
  readonly v?: 1;
}

/** An event envelope decoded and validated, with defaults filled in from SQS. */
export interface DecodedEvent extends EventRef {
  readonly payload: unknown;
  readonly payloadRef?: PayloadRef;
  readonly appData: unknown;
}

const APP_NAME_PATTERN = /^[a-z][a-z0-9-]{0,29}$/;

/** Serializes an event envelope; `v` is always written. */
export function encodeEventEnvelope(envelope: EventEnvelopeV1): string {
  const body: Record<string, unknown> = { v: 1, event: envelope.event };
  if (envelope.payloadRef !== undefined) body.payloadRef = envelope.payloadRef;
  else body.payload = envelope.payload ?? null;
  if (envelope.id !== undefined) body.id = envelope.id;
  if (envelope.source !== undefined) body.source = envelope.source;
  if (envelope.emittedAt !== undefined) body.emittedAt = envelope.emittedAt;
  if (envelope.appData !== undefined) body.appData = envelope.appData;
  return JSON.stringify(body);
}

/** A received body: a task's job, or an event for the subscribers on the queue it reached. */
export type DecodedMessage = { readonly kind: 'job'; readonly job: DecodedJob } | { readonly kind: 'event'; readonly event: DecodedEvent };

/**
 * Decodes a message body: a body that names a `task` is a job (its envelope as
 * `decodeEnvelope` reads it); one that names an `event` and no task is an event. Throws
 * {@link EnvelopeError} with a machine-readable code; never runs or resolves anything named in it.
 */
export function decodeMessage(body: string, meta: MessageMeta): DecodedMessage {
  const own = parseBody(body);
  if (own('task') === undefined && own('event') !== undefined) return { kind: 'event', event: decodeEventFields(own, meta) };
  return { kind: 'job', job: decodeJobFields(own, meta) };
}

/**
 * The body for a copy of a message (a copy gets a new MessageId and SentTimestamp): a job's id and
 * publish time, or an event's id and emit time, written in where the publisher left them to SQS's
 * defaults, so the copy stays the same job (or event) with the same wait. A body that is neither
 * (not JSON, Celery's, malformed) is returned as it is: whoever reads the copy files it under the
 * copy's own id, as it would have the original.
 *
 * @example
 * pinnedCopy('{"task":"send-email","payload":{}}', { messageId: 'm-1', sentTimestamp: 1_700_000_000_000 });
 * // '{"task":"send-email","payload":{},"id":"m-1","publishedAt":1700000000000}'
 */
export function pinnedCopy(body: string, meta: MessageMeta): string {
  let decoded: DecodedMessage;
  try {
    decoded = decodeMessage(body, meta);
  } catch {
    return body;
  }
  if (decoded.kind === 'job') return pinEnvelope(body, decoded.job);
  const fields = JSON.parse(body) as Record<string, unknown>;
  if (Object.hasOwn(fields, 'id') && Object.hasOwn(fields, 'emittedAt')) return body;
  return JSON.stringify({ ...fields, id: decoded.event.id, emittedAt: decoded.event.emittedAt });
}

/** Validates the fields of a parsed body that names an `event`. Throws {@link EnvelopeError} (`bad-event`) naming the field. */
function decodeEventFields(own: (key: string) => unknown, meta: MessageMeta): DecodedEvent {
  const v = own('v');
  if (v !== undefined && v !== 1) throw new EnvelopeError('bad-version', `v is ${JSON.stringify(v)}; this dispatcher reads version 1`, 'v');
  const name = own('event');
  if (typeof name !== 'string' || !EVENT_NAME_PATTERN.test(name)) {
    throw new EnvelopeError('bad-event', `event is ${preview(name)}; expected a name matching ${EVENT_NAME_PATTERN}`, 'event');
  }
  const id = own('id');
  if (id !== undefined && (typeof id !== 'string' || !JOB_ID_PATTERN.test(id))) {
    throw new EnvelopeError('bad-event', `id is ${preview(id)}; expected 1..128 printable ASCII characters`, 'id');
  }
  const source = own('source');
  if (source !== undefined && (typeof source !== 'string' || !APP_NAME_PATTERN.test(source))) {
    throw new EnvelopeError('bad-event', `source is ${preview(source)}; expected an app name`, 'source');
  }
  const emittedAt = own('emittedAt');
  if (
    emittedAt !== undefined &&
    !(typeof emittedAt === 'number' && Number.isInteger(emittedAt) && emittedAt >= 0 && emittedAt <= MAX_EPOCH_MS)
  ) {
    throw new EnvelopeError('bad-event', `emittedAt is ${preview(emittedAt)}; expected epoch milliseconds 0..${MAX_EPOCH_MS}`, 'emittedAt');
  }
  const payloadRef = decodePayloadRefField(own);
  return {
    name,
    id: (id as string | undefined) ?? meta.messageId,
    ...(source !== undefined ? { source: source as string } : {}),
    emittedAt: (emittedAt as number | undefined) ?? meta.sentTimestamp,
    payload: own('payload') ?? null,
    ...(payloadRef !== undefined ? { payloadRef } : {}),
    appData: own('appData') ?? null,
  };
}

/**
 * The job id of `task`'s run for event `eventId`: `<eventId>/<task>`, or, where that passes 128
 * characters, the event id's first 100 and a digest of both. The same event and subscriber always
 * give the same id, so a repeated event is a duplicate the claim stops.
 */
export function subscriberJobId(eventId: string, task: string): string {
  const plain = `${eventId}/${task}`;
  if (plain.length <= 128) return plain;
  const digest = createHash('sha256').update(eventId).update('\0').update(task).digest('hex').slice(0, 27);
  return `${eventId.slice(0, 100)}/${digest}`;
}

/** The job `task` runs for an event: its derived id, the event's payload and time, and the event itself. */
export function subscriberJob(event: DecodedEvent, task: string): DecodedJob {
  return {
    task,
    id: subscriberJobId(event.id, task),
    payload: event.payload,
    ...(event.payloadRef !== undefined ? { payloadRef: event.payloadRef } : {}),
    appData: event.appData,
    publishedAt: event.emittedAt,
    event: eventRef(event),
  };
}

/** The task envelope of `task`'s job for an event: what a split sends, and what its archive keeps for a replay of that subscriber alone. */
export function subscriberEnvelope(event: DecodedEvent, task: string): string {
  const job = subscriberJob(event, task);
  return encodeEnvelope({
    task,
    id: job.id,
    ...(event.payloadRef !== undefined ? { payloadRef: event.payloadRef } : { payload: job.payload }),
    ...(event.appData !== null ? { appData: event.appData } : {}),
    publishedAt: job.publishedAt,
    event: eventRef(event),
  });
}

export function eventRef(event: EventRef): EventRef {
  return { id: event.id, name: event.name, ...(event.source !== undefined ? { source: event.source } : {}), emittedAt: event.emittedAt };
}
