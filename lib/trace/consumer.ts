/**
 * The dispatcher's side of a trace: one CONSUMER span per attempt (`<task> process`, OpenTelemetry's
 * messaging conventions), from the moment the job takes its slot (claim, run, verdict) until its
 * batch is settled and its hooks have run, which run inside it. The producer's context comes from
 * the message's `traceparent` attribute, else Lambda's X-Ray `AWSTraceHeader`; the span is linked
 * to it (`tracing.parent: 'link'`, the default: a job is its own unit of work, however late it runs)
 * or its child (`'child'`: publish and run in one trace). A `traceparent` that is not W3C trace
 * context is ignored with a warning: the span starts a trace of its own, and the job runs.
 *
 * The task body runs with the span as the active context (with a context manager registered, as
 * the Node SDK and the ADOT layer do): inline, `trace.getActiveSpan()` is the span itself; in a
 * worker thread the span's context is handed over as a remote parent (lib/run/worker-thread.ts).
 */
import type * as Api from '@opentelemetry/api';
import type { QueueConfig, TaskworkerConfig, TraceParentMode } from '../config/app-config';
import type { Logger } from '../ports';
import { otel, remoteSpanContext, TRACER_NAME } from './otel';
import { producerContextOf } from './traceparent';

/** What a batch's spans need of the job it runs: the message and the task. */
export interface TracedJob {
  readonly message: {
    readonly messageId: string;
    readonly attributes: Readonly<Record<string, string>>;
    readonly awsTraceHeader?: string;
  };
  readonly job: { readonly id: string };
  readonly def: { readonly name: string };
}

/**
 * What an attempt's span says of its settled job: the fields of the batch's job reports it reads
 * (structural, so tracing sits below the settle that writes them).
 */
export interface SpanReport {
  readonly messageId: string;
  readonly attempt: number;
  readonly outcome: string;
  readonly timedOut?: boolean;
  /** A `retried` run that asked to run again later (RetryAfterError). */
  readonly retryAfter?: boolean;
  readonly reason?: string;
  readonly unsettled?: boolean;
  readonly hook?: string;
  readonly error?: { readonly type: string; readonly message: string };
}

/** The spans of one batch's attempts, by message id. */
export interface BatchSpans {
  /** Runs one job's attempt (`runOne`) inside its span, started now. */
  run<T>(job: TracedJob, fn: () => Promise<T>): Promise<T>;
  /** Runs the settled batch's hooks, each job's inside its span (`run` is called once per report, or once for all without spans). */
  hooks<R extends SpanReport>(reports: readonly R[], run: (reports: R[]) => Promise<R[]>): Promise<R[]>;
  /** Ends every span, with its job's settled report (outcome, attempt), or as lost with `error`. */
  end(reports: readonly SpanReport[], error?: unknown): void;
}

const UNTRACED: BatchSpans = {
  run: (_job, fn) => fn(),
  hooks: (reports, run) => run([...reports]),
  end: () => {},
};

/** Outcomes that are a failed or abandoned attempt: the span's status is ERROR. */
const FAILED = new Set(['retried', 'archived', 'cancelled']);

/** Starts nothing without `@opentelemetry/api`; with it (a provider registered or not) one span per attempt. */
export function batchSpans(
  deps: {
    readonly config: Pick<TaskworkerConfig, 'tracing'>;
    readonly logger: Logger;
    readonly urls: { readonly queues: Readonly<Record<string, string>> };
  },
  queue: Pick<QueueConfig, 'name'>,
): BatchSpans {
  const api = otel();
  if (!api) return UNTRACED;
  const mode: TraceParentMode = deps.config.tracing?.parent ?? 'link';
  const url = deps.urls.queues[queue.name] ?? '';
  const destination = url.slice(url.lastIndexOf('/') + 1) || queue.name;
  const spans = new Map<string, { span: Api.Span; context: Api.Context }>();
  return {
    run(job, fn) {
      const span = startAttemptSpan(api, deps.logger, mode, { queue: queue.name, destination }, job);
      // No provider and no parent: a no-op span with no context to carry; the attempt runs as it would untraced.
      if (!span.isRecording() && !api.isSpanContextValid(span.spanContext())) return fn();
      const context = api.trace.setSpan(api.context.active(), span);
      spans.set(job.message.messageId, { span, context });
      return api.context.with(context, fn);
    },
    async hooks(reports, run) {
      if (spans.size === 0) return run([...reports]);
      const ran = await Promise.all(
        reports.map((report) => {
          const traced = spans.get(report.messageId);
          return traced ? api.context.with(traced.context, () => run([report])) : run([report]);
        }),
      );
      return ran.flat();
    },
    end(reports, error) {
      const byMessage = new Map(reports.map((r) => [r.messageId, r]));
      for (const [messageId, { span }] of spans) endAttemptSpan(api, span, byMessage.get(messageId), error);
      spans.clear();
    },
  };
}

function startAttemptSpan(
  api: NonNullable<ReturnType<typeof otel>>,
  logger: Logger,
  mode: TraceParentMode,
  where: { readonly queue: string; readonly destination: string },
  job: TracedJob,
): Api.Span {
  const { message } = job;
  const producer = producerContextOf(message.attributes, message.awsTraceHeader);
  if (producer.rejected !== undefined) {
    logger.warn('message attribute traceparent is not W3C trace context; ignored (the job runs in a trace of its own)', {
      messageId: message.messageId,
      jobId: job.job.id,
      traceparent: producer.rejected,
    });
  }
  const remote = producer.parent ? remoteSpanContext(api, producer.parent, producer.tracestate) : undefined;
  const active = api.context.active();
  const parent = remote && mode === 'child' ? api.trace.setSpanContext(active, remote) : active;
  return api.trace.getTracer(TRACER_NAME).startSpan(
    `${job.def.name} process`,
    {
      kind: api.SpanKind.CONSUMER,
      attributes: {
        'messaging.system': 'aws_sqs',
        'messaging.operation.type': 'process',
        'messaging.operation.name': 'process',
        'messaging.destination.name': where.destination,
        'messaging.message.id': message.messageId,
        'taskworker.job.id': job.job.id,
        'taskworker.task': job.def.name,
        'taskworker.queue': where.queue,
        ...(producer.source ? { 'taskworker.trace.source': producer.source } : {}),
      },
      ...(remote && mode === 'link' ? { links: [{ context: remote }] } : {}),
    },
    parent,
  );
}

function endAttemptSpan(api: NonNullable<ReturnType<typeof otel>>, span: Api.Span, report: SpanReport | undefined, error: unknown): void {
  if (!report) {
    span.setAttribute('taskworker.outcome', 'lost');
    span.setStatus({
      code: api.SpanStatusCode.ERROR,
      message: error instanceof Error ? error.message : 'the batch ended without a report',
    });
    span.end();
    return;
  }
  span.setAttributes({
    'taskworker.attempt': report.attempt,
    'taskworker.outcome': report.outcome,
    ...(report.timedOut ? { 'taskworker.timed_out': true } : {}),
    ...(report.reason ? { 'taskworker.archive.reason': report.reason } : {}),
    ...(report.unsettled ? { 'taskworker.unsettled': true } : {}),
    ...(report.hook ? { 'taskworker.hook': report.hook } : {}),
    ...(report.error ? { 'error.type': report.error.type } : {}),
  });
  // A run that asked to run again later (RetryAfterError) did what it meant to: not an error.
  if ((FAILED.has(report.outcome) && !report.retryAfter) || report.timedOut) {
    span.setStatus({ code: api.SpanStatusCode.ERROR, ...(report.error ? { message: report.error.message } : {}) });
  }
  span.end();
}
