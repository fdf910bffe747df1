/**
 * W3C trace context (https://www.w3.org/TR/trace-context/) as it rides on a message: the
 * `traceparent` and `tracestate` message attributes, and Lambda's X-Ray `AWSTraceHeader` read as
 * one. Pure: no OpenTelemetry import, so the publisher validates a caller's `traceparent` whether
 * or not `@opentelemetry/api` is installed.
 */

/** The message attribute (SQS and SNS) that carries the producer's context. */
export const TRACEPARENT_ATTRIBUTE = 'traceparent';
/** The message attribute that carries vendor state beside it, when there is any. */
export const TRACESTATE_ATTRIBUTE = 'tracestate';
/** The longest `tracestate` carried (the W3C limit a propagator must accept; longer ones are dropped). */
export const MAX_TRACESTATE_CHARS = 512;

/** A producer's span context, as read from a message: ids in lowercase hex. */
export interface TraceParent {
  /** 32 hex digits, not all zeros. */
  readonly traceId: string;
  /** 16 hex digits, not all zeros: the producer's span. */
  readonly spanId: string;
  /** The trace flags byte; bit 0 is `sampled`. */
  readonly traceFlags: number;
}

/**
 * Version 00 is exactly 55 characters; a later version may append fields after a `-`, which a
 * version-00 reader ignores (the spec's forward compatibility). Version ff is invalid.
 */
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/**
 * Reads a `traceparent` header value; undefined for anything the spec says to ignore (wrong shape,
 * upper-case hex, version ff, all-zero ids, version 00 with extra fields).
 * @example
 * parseTraceparent('00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01');
 * // { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', traceFlags: 1 }
 */
export function parseTraceparent(value: unknown): TraceParent | undefined {
  if (typeof value !== 'string' || value.length > 512) return undefined;
  const match = TRACEPARENT.exec(value.trim());
  if (!match) return undefined;
  const [, version, traceId, spanId, flags, rest] = match as unknown as [string, string, string, string, string, string | undefined];
  if (version === 'ff' || (version === '00' && rest !== undefined)) return undefined;
  if (/^0+$/.test(traceId) || /^0+$/.test(spanId)) return undefined;
  return { traceId, spanId, traceFlags: Number.parseInt(flags, 16) };
}

/**
 * The version-00 `traceparent` of a span context (flags reduced to the bits version 00 defines).
 * @example
 * formatTraceparent({ traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', traceFlags: 1 });
 * // '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'
 */
export function formatTraceparent(parent: TraceParent): string {
  return `00-${parent.traceId}-${parent.spanId}-${(parent.traceFlags & 0xff).toString(16).padStart(2, '0')}`;
}

/**
 * Why a `tracestate` value is not one to carry (undefined when it is): its shape is checked
 * loosely (printable ASCII list members `key=value`, at most 32), its length against
 * {@link MAX_TRACESTATE_CHARS}. The OpenTelemetry API parses it fully where it is used.
 */
export function tracestateProblem(value: unknown): string | undefined {
  if (typeof value !== 'string') return 'is not a string';
  if (value.length > MAX_TRACESTATE_CHARS) return `is longer than ${MAX_TRACESTATE_CHARS} characters`;
  if (!/^[\x20-\x7e]*$/.test(value)) return 'has characters outside printable ASCII';
  const members = value.split(',').filter((m) => m.trim().length > 0);
  if (members.length > 32) return 'has more than 32 members';
  if (members.some((m) => !/^\s*[^=\s]+=[^,=]*[^,=\s]\s*$/.test(m))) return 'has a member that is not key=value';
  return undefined;
}

/**
 * Lambda's `AWSTraceHeader` system attribute (X-Ray: `Root=1-<8 hex>-<24 hex>;Parent=<16 hex>;Sampled=1`)
 * as a W3C parent: the trace id is Root's 8 + 24 hex digits, the span id Parent, sampled when
 * `Sampled=1`. Undefined without a Root and a Parent in that shape.
 * @example
 * traceParentFromXray('Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1');
 * // { traceId: '5759e988bd862e3fe1be46a994272793', spanId: '53995c3f42cd8ad8', traceFlags: 1 }
 */
export function traceParentFromXray(header: unknown): TraceParent | undefined {
  if (typeof header !== 'string' || header.length > 1024) return undefined;
  const fields = new Map<string, string>();
  for (const part of header.split(';')) {
    const at = part.indexOf('=');
    if (at > 0) fields.set(part.slice(0, at).trim().toLowerCase(), part.slice(at + 1).trim());
  }
  const root = /^1-([0-9a-f]{8})-([0-9a-f]{24})$/i.exec(fields.get('root') ?? '');
  const parent = fields.get('parent') ?? '';
  if (!root || !/^[0-9a-f]{16}$/i.test(parent)) return undefined;
  const traceId = `${root[1]}${root[2]}`.toLowerCase();
  const spanId = parent.toLowerCase();
  if (/^0+$/.test(traceId) || /^0+$/.test(spanId)) return undefined;
  return { traceId, spanId, traceFlags: fields.get('sampled') === '1' ? 1 : 0 };
}

/** What a received message says of its producer, and whether it said something unreadable. */
export interface ProducerContext {
  readonly parent?: TraceParent;
  /** The `tracestate` beside a readable `traceparent`, if any and well formed. */
  readonly tracestate?: string;
  /** Where it came from: the message's own attribute, or Lambda's X-Ray header. */
  readonly source?: 'traceparent' | 'xray';
  /** A `traceparent` attribute was there but not W3C trace context (ignored; a hostile or broken publisher). */
  readonly rejected?: string;
}

/**
 * The producer's context of a received message: its `traceparent` attribute, else its
 * `AWSTraceHeader`. A `traceparent` that does not parse is reported (`rejected`) and ignored.
 */
export function producerContextOf(attributes: Readonly<Record<string, string>>, awsTraceHeader?: string): ProducerContext {
  const raw = attributes[TRACEPARENT_ATTRIBUTE];
  const parent = raw === undefined ? undefined : parseTraceparent(raw);
  const rejected = raw !== undefined && !parent ? { rejected: raw.length > 80 ? `${raw.slice(0, 79)}…` : raw } : {};
  if (parent) {
    const state = attributes[TRACESTATE_ATTRIBUTE];
    return { parent, source: 'traceparent', ...(state !== undefined && !tracestateProblem(state) ? { tracestate: state } : {}) };
  }
  const xray = awsTraceHeader === undefined ? undefined : traceParentFromXray(awsTraceHeader);
  return xray ? { parent: xray, source: 'xray', ...rejected } : rejected;
}
