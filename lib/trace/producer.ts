/**
 * The publisher's side of a trace: a PRODUCER span around each publish call (one per
 * `publishBatch` or `emit`, OpenTelemetry's messaging conventions), whose context every message of
 * the call carries as its `traceparent` (and `tracestate`) attribute. A `traceparent` the caller
 * gives in the options is validated and sent as it is instead. Without `@opentelemetry/api`, or
 * with nothing active and no tracer provider registered, a message carries only a given one.
 */
import type * as Api from '@opentelemetry/api';
import { PublishOptionError } from '../errors';
import { otel, TRACER_NAME } from './otel';
import { formatTraceparent, parseTraceparent, TRACEPARENT_ATTRIBUTE, TRACESTATE_ATTRIBUTE, tracestateProblem } from './traceparent';

/** What a caller may give instead of the active context. */
export interface TraceOptions {
  readonly traceparent?: string;
  readonly tracestate?: string;
}

/**
 * The trace attributes a caller gave, checked: a `traceparent` that is not W3C trace context, or a
 * `tracestate` without one or out of shape, is a {@link PublishOptionError} naming it. Undefined when
 * none was given.
 */
export function givenTraceAttributes(options: TraceOptions): Record<string, string> | undefined {
  const { traceparent, tracestate } = options;
  if (traceparent === undefined) {
    if (tracestate !== undefined) throw new PublishOptionError('tracestate', tracestate, 'a tracestate beside a traceparent');
    return undefined;
  }
  const parsed = parseTraceparent(traceparent);
  if (!parsed || traceparent !== traceparent.trim()) {
    throw new PublishOptionError(
      'traceparent',
      traceparent,
      'a W3C traceparent, 00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>, lowercase, ids not all zeros',
    );
  }
  const problem = tracestate === undefined ? undefined : tracestateProblem(tracestate);
  if (problem) throw new PublishOptionError('tracestate', tracestate, `a W3C tracestate: it ${problem}`);
  return { [TRACEPARENT_ATTRIBUTE]: traceparent, ...(tracestate ? { [TRACESTATE_ATTRIBUTE]: tracestate } : {}) };
}

/** One publish call's span: its context's attributes for each message, and its end. */
export interface PublishSpan {
  /**
   * The attributes a message carries: the caller's, checked, or the span's context (none when it
   * has no valid one). `name` (a task or an event) names the span when the call publishes one kind.
   */
  attributesFor(name: string, given: TraceOptions): Record<string, string> | undefined;
  /** Ends the span: with the destination it sent to, or the error it failed with. */
  end(outcome: { readonly destination?: string; readonly count: number } | { readonly error: unknown }): void;
}

const GIVEN_ONLY: PublishSpan = { attributesFor: (_name, given) => givenTraceAttributes(given), end: () => {} };

/** Starts the span of one publish call (`send` to SQS, `publish` to SNS) under the active context. */
export function startPublishSpan(system: 'aws_sqs' | 'aws_sns'): PublishSpan {
  const api = otel();
  if (!api) return GIVEN_ONLY;
  const span = api.trace.getTracer(TRACER_NAME).startSpan('publish', {
    kind: api.SpanKind.PRODUCER,
    attributes: {
      'messaging.system': system,
      'messaging.operation.type': system === 'aws_sqs' ? 'send' : 'publish',
      'messaging.operation.name': system === 'aws_sqs' ? 'send' : 'publish',
    },
  });
  const context = span.spanContext();
  const own = api.isSpanContextValid(context) ? ownAttributes(context) : undefined;
  const names = new Set<string>();
  return {
    attributesFor(name, given) {
      names.add(name);
      return givenTraceAttributes(given) ?? own;
    },
    end(outcome) {
      const [only] = names;
      if (names.size === 1) span.updateName(`${only} publish`);
      if ('error' in outcome) {
        const error = outcome.error;
        span.recordException(error instanceof Error ? error : String(error));
        span.setStatus({ code: api.SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
      } else {
        if (outcome.destination) span.setAttribute('messaging.destination.name', outcome.destination);
        if (outcome.count > 1) span.setAttribute('messaging.batch.message_count', outcome.count);
      }
      span.end();
    },
  };
}

function ownAttributes(context: Api.SpanContext): Record<string, string> {
  const state = context.traceState?.serialize();
  return { [TRACEPARENT_ATTRIBUTE]: formatTraceparent(context), ...(state ? { [TRACESTATE_ATTRIBUTE]: state } : {}) };
}
