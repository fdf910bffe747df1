/**
 * `@opentelemetry/api`, an optional peer: loaded on first use, and only if it is there. Without it,
 * and without a tracer provider registered (the API's no-op default), taskworker makes no spans
 * and sends no trace attributes beyond a `traceparent` given explicitly.
 *
 * The `require` names the package literally, inside a try: a bundler (esbuild for the dispatcher's
 * artifact and a tasks bundle, the user's own for a service that publishes) bundles it when it is
 * installed and leaves the call alone when it is not. Several copies of the API (the artifact's,
 * a tasks bundle's, a Lambda layer's) share one registration: the API keeps its tracer provider and
 * context manager on a global, whichever copy registered them.
 */

import { createRequire } from 'node:module';
import { join } from 'node:path';
import type * as Api from '@opentelemetry/api';
import { formatTraceparent, parseTraceparent, type TraceParent } from './traceparent';

export type OtelApi = typeof Api;

/** The instrumentation scope of every span taskworker starts. */
export const TRACER_NAME = 'taskworker';

let loaded: OtelApi | null | undefined;

/** The OpenTelemetry API, or undefined where it is not installed. Looked up once. */
export function otel(): OtelApi | undefined {
  if (loaded === undefined) loaded = loadApi() ?? null;
  return loaded ?? undefined;
}

function loadApi(): OtelApi | undefined {
  try {
    return require('@opentelemetry/api') as OtelApi;
  } catch {
    // An ES module build has no `require`: look where the application runs from.
    try {
      return createRequire(join(process.cwd(), 'index.js'))('@opentelemetry/api') as OtelApi;
    } catch {
      return undefined;
    }
  }
}

/** For tests: use this API (or none, with `null`), or look it up again (`undefined`). */
export function setOtelForTests(api: OtelApi | null | undefined): void {
  loaded = api;
}

/** A parsed W3C parent as the API's span context of a remote span. */
export function remoteSpanContext(api: OtelApi, parent: TraceParent, tracestate?: string): Api.SpanContext {
  return {
    traceId: parent.traceId,
    spanId: parent.spanId,
    traceFlags: parent.traceFlags & 0xff,
    isRemote: true,
    // createTraceState came with API 1.1; an older API carries no trace state.
    ...(tracestate && typeof api.createTraceState === 'function' ? { traceState: api.createTraceState(tracestate) } : {}),
  };
}

/** The active context's span as a `traceparent` (and its `tracestate`), if there is a valid one. */
export function activeTraceparent(): { traceparent: string; tracestate?: string } | undefined {
  const api = otel();
  const span = api?.trace.getSpanContext(api.context.active());
  if (!api || !span || !api.isSpanContextValid(span)) return undefined;
  const state = span.traceState?.serialize();
  return { traceparent: formatTraceparent(span), ...(state ? { tracestate: state } : {}) };
}

/**
 * Runs `fn` with a remote parent (a `traceparent` handed over, as to a worker thread) as the active
 * context, so spans started inside are its children. Just `fn()` without the API or a valid parent.
 */
export function withRemoteParent<T>(carried: { traceparent?: string; tracestate?: string } | undefined, fn: () => T): T {
  const parent = parseTraceparent(carried?.traceparent);
  const api = parent ? otel() : undefined;
  if (!api || !parent) return fn();
  const remote = remoteSpanContext(api, parent, carried?.tracestate);
  return api.context.with(api.trace.setSpanContext(api.context.active(), remote), fn);
}
