/** Emitting an event: checked, offloaded when large, and published once to the version's topic. */
import { randomUUID } from 'node:crypto';
import { claimCheckRef, putClaimCheck } from '../claim-check';
import { InvalidEventPayloadError, MessageTooLargeError, PublishOptionError, UnknownEventError } from '../errors';
import { eventPayloadKey } from '../layout/payloads';
import { bodyBytes } from '../layout/sqs-limits';
import { topicArnNear } from '../layout/topics';
import { givenTraceAttributes, startPublishSpan } from '../trace/producer';
import { JOB_ID_PATTERN } from '../wire/envelope';
import { type EventEnvelopeV1, encodeEventEnvelope, MAX_EVENT_BYTES } from '../wire/event';
import { MAX_PAYLOAD_REF_BYTES } from '../wire/payload-ref';
import type { PublishContext } from './publish-context';

import type { EmitOptions, Emitted } from './publish-options';
export async function emitEvent(ctx: PublishContext, name: string, payload: unknown, options: EmitOptions = {}): Promise<Emitted> {
  const declared = ctx.config.events.find((e) => e.name === name);
  if (!declared)
    throw new UnknownEventError(
      String(name),
      ctx.config.events.map((e) => e.name),
    );
  const eventId = options.id ?? randomUUID();
  if (typeof eventId !== 'string' || !JOB_ID_PATTERN.test(eventId))
    throw new PublishOptionError('id', eventId, '1..128 printable ASCII characters');
  if (declared.validate) {
    try {
      declared.validate(payload);
    } catch (error) {
      throw new InvalidEventPayloadError(name, error instanceof Error ? error.message : String(error), { cause: error });
    }
  }
  const envelope: EventEnvelopeV1 & { id: string } = {
    event: name,
    id: eventId,
    source: ctx.config.app,
    emittedAt: ctx.clock.now(),
    payload,
    ...(options.appData !== undefined ? { appData: options.appData } : {}),
  };
  let body: string;
  try {
    body = encodeEventEnvelope(envelope);
  } catch (error) {
    throw new InvalidEventPayloadError(name, `not JSON: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
  givenTraceAttributes(options);
  if (bodyBytes(body) > Math.min(ctx.config.payloads.offloadAboveBytes, MAX_EVENT_BYTES)) body = await offloadEvent(ctx, envelope);
  const topicArn = await versionTopicArn(ctx);
  const eventBus = ctx.eventBus();
  // Its trace context rides as an SNS message attribute, which raw delivery passes on to each queue.
  const span = startPublishSpan('aws_sns');
  try {
    const { messageId } = await eventBus.publish(topicArn, body, span.attributesFor(name, options));
    span.end({ destination: topicArn.slice(topicArn.lastIndexOf(':') + 1), count: 1 });
    return { eventId, messageId, topicArn };
  } catch (error) {
    span.end({ error });
    throw error;
  }
}

/**
 * An event too large for SNS (or over `payloads.offloadAboveBytes`): its payload is put in the
 * version's bucket under `payloads/events/` (one object every subscriber's job reads; the lifecycle
 * expires it) and the event carries the pointer. Up to 10 MiB; larger is refused, nothing sent.
 */
async function offloadEvent(ctx: PublishContext, envelope: EventEnvelopeV1 & { id: string }): Promise<string> {
  const { payload, ...rest } = envelope;
  const text = JSON.stringify(payload ?? null);
  const bytes = bodyBytes(text);
  if (bytes > MAX_PAYLOAD_REF_BYTES) throw new MessageTooLargeError(envelope.event, bytes, MAX_PAYLOAD_REF_BYTES, 'event');
  const payloadRef = claimCheckRef(ctx.bucketNear(await ctx.queueUrls()), (sha256) => eventPayloadKey(envelope.id, sha256), text);
  const pointed = encodeEventEnvelope({ ...rest, payloadRef });
  // What stays in the event (appData, ...) must fit SNS too: checked before the put, so a refused event leaves no object.
  if (bodyBytes(pointed) > MAX_EVENT_BYTES) throw new MessageTooLargeError(envelope.event, bodyBytes(pointed), MAX_EVENT_BYTES, 'event');
  await putClaimCheck(ctx.payloadStore(), payloadRef, text);
  return pointed;
}

/** The version's event topic: given, or beside the version's queues (their URL names the account and region). */
async function versionTopicArn(ctx: PublishContext): Promise<string> {
  if (ctx.givenTopicArn) return ctx.givenTopicArn;
  const urls = await ctx.queueUrls();
  const url = Object.values(urls.queues)[0] ?? urls.archive;
  return topicArnNear(url, ctx.config.app, ctx.version);
}
