/**
 * W3C trace context from publish to run, on the emulators (fauxqs's SQS and SNS, dynalite) with
 * the real dispatcher and an OpenTelemetry SDK recording into its in-memory exporter: the
 * publisher's span and each attempt's span in one trace (tracing.parent 'child', bodies inline) or
 * linked (the default, bodies in worker threads); the traceparent carried by fauxqs as an SQS
 * message attribute and through SNS raw delivery and a split; Lambda's X-Ray AWSTraceHeader on a
 * doorbell record; a hostile traceparent ignored with a warning while the job runs.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SNSClient } from '@aws-sdk/client-sns';
import { ReceiveMessageCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { context, type Link, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { DispatcherRuntime } from '../../lib/invocation/dispatcher-runtime';
import type { SqsEventRecord } from '../../lib/invocation/doorbell';
import { provisionVersion } from '../../lib/local/version';
import type { Logger } from '../../lib/ports';
import type { TaskBundle } from '../../lib/tasks/bundle';
import { buildFixtureBundle, type EmulatorHarness, startHarness, stopHarness, tempFile } from '../helpers/emulators';
import { runUntil } from '../helpers/run';
import { type System, system } from '../helpers/system';

const FIXTURES = join(__dirname, '..', 'fixtures', 'tracing');
const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const contextManager = new AsyncLocalStorageContextManager();

let h: EmulatorHarness;
let child: TaskBundle;
let link: TaskBundle;
let current: System | undefined;

beforeAll(async () => {
  context.setGlobalContextManager(contextManager.enable());
  trace.setGlobalTracerProvider(provider);
  h = await startHarness();
  [child, link] = await Promise.all([
    buildFixtureBundle(join(FIXTURES, 'child.config.ts')),
    buildFixtureBundle(join(FIXTURES, 'link.config.ts')),
  ]);
}, 120_000);
afterAll(async () => {
  await stopHarness(h);
  trace.disable();
  context.disable();
});
beforeEach(() => exporter.reset());
afterEach(async () => {
  await current?.close();
  current = undefined;
});

interface Noted {
  readonly what: string;
  readonly jobId: string;
  readonly attempt: number;
  readonly thread: 'main' | 'worker';
  readonly active: { readonly traceId: string; readonly spanId: string } | null;
  readonly child: { readonly traceId: string; readonly parentSpanId: string | null };
}
const notes = (journal: string): Noted[] =>
  readFileSync(journal, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Noted);

const spans = (name?: string): ReadableSpan[] => exporter.getFinishedSpans().filter((s) => name === undefined || s.name === name);
const attempts = (task: string) =>
  spans(`${task} process`).sort((a, b) => Number(a.attributes['taskworker.attempt']) - Number(b.attributes['taskworker.attempt']));
const ids = (span: ReadableSpan) => ({ traceId: span.spanContext().traceId, spanId: span.spanContext().spanId });
const linked = (links: readonly Link[]) => links.map((l) => ({ traceId: l.context.traceId, spanId: l.context.spanId }));

/** Publishes inside a span of the test's own, as an API request that publishes would. */
async function inRequest<T>(fn: () => Promise<T>): Promise<{ request: ReadableSpan; result: T }> {
  const result = await trace.getTracer('test').startActiveSpan('POST /checkout', async (span) => {
    try {
      return await fn();
    } finally {
      span.end();
    }
  });
  return { request: spans('POST /checkout')[0] as ReadableSpan, result };
}

describe('one trace from publish to run', () => {
  it("child mode: the publish span, then attempt 1 (fails) and attempt 2 (succeeds) as its children, the bodies and hooks inside each attempt's span", async () => {
    current = await system(h, child, { tracked: true });
    const s = current;
    const journal = tempFile('trace.jsonl');
    writeFileSync(journal, '');
    const { request, result } = await inRequest(() => s.publisher.publish('charge', { journal, failFirst: true }));

    // The message carries the publish span's context as an SQS message attribute, on fauxqs too.
    const [publish] = spans('charge publish');
    expect(publish?.kind).toBe(SpanKind.PRODUCER);
    expect(publish?.parentSpanContext?.spanId).toBe(request.spanContext().spanId);
    expect(publish?.attributes).toMatchObject({ 'messaging.system': 'aws_sqs', 'messaging.destination.name': `trc-${s.version}-work` });
    const peeked = await h.sqs.send(
      new ReceiveMessageCommand({ QueueUrl: s.urls.queues.work, MessageAttributeNames: ['All'], VisibilityTimeout: 0 }),
    );
    const { traceId, spanId } = ids(publish as ReadableSpan);
    expect(peeked.Messages?.[0]?.MessageAttributes?.traceparent?.StringValue).toBe(`00-${traceId}-${spanId}-01`);

    await runUntil(s.runtime, 'the second attempt to succeed', () => s.jobs().some((j) => j.outcome === 'succeeded'), 30_000);
    const [first, second] = attempts('charge');
    expect(attempts('charge')).toHaveLength(2);
    for (const span of [first, second]) {
      expect(span?.kind).toBe(SpanKind.CONSUMER);
      expect(span?.spanContext().traceId).toBe(traceId);
      expect(span?.parentSpanContext?.spanId).toBe(spanId);
      expect(span?.links).toEqual([]);
    }
    const common = {
      'messaging.system': 'aws_sqs',
      'messaging.operation.type': 'process',
      'messaging.destination.name': `trc-${s.version}-work`,
      'messaging.message.id': peeked.Messages?.[0]?.MessageId,
      'taskworker.job.id': result.jobId,
      'taskworker.task': 'charge',
      'taskworker.queue': 'work',
      'taskworker.trace.source': 'traceparent',
    };
    expect(first?.attributes).toMatchObject({ ...common, 'taskworker.attempt': 1, 'taskworker.outcome': 'retried', 'error.type': 'Error' });
    expect(first?.status).toEqual({ code: SpanStatusCode.ERROR, message: 'card declined' });
    expect(second?.attributes).toMatchObject({
      ...common,
      'taskworker.attempt': 2,
      'taskworker.outcome': 'succeeded',
      'taskworker.hook': 'ran',
    });
    expect(second?.status.code).toBe(SpanStatusCode.UNSET);

    // Inline, the body's active span is its attempt's span, and so is each hook's.
    const seen = notes(journal).map((n) => [n.what, n.attempt, n.active, n.child]);
    const within = (span: ReadableSpan | undefined) => [
      ids(span as ReadableSpan),
      { traceId, parentSpanId: ids(span as ReadableSpan).spanId },
    ];
    expect(seen).toEqual([
      ['run', 1, ...within(first)],
      ['onRetry', 1, ...within(first)],
      ['run', 2, ...within(second)],
      ['onSuccess', 2, ...within(second)],
    ]);
  });

  it("link mode: each attempt starts its own trace linked to the publish span; a body in a worker thread gets the attempt's context as its remote parent", async () => {
    current = await system(h, link, { tracked: true });
    const s = current;
    const journal = tempFile('trace.jsonl');
    writeFileSync(journal, '');
    await inRequest(() => s.publisher.publish('charge', { journal, failFirst: true }));
    const producer = ids(spans('charge publish')[0] as ReadableSpan);

    await runUntil(s.runtime, 'the second attempt to succeed', () => s.jobs().some((j) => j.outcome === 'succeeded'), 30_000);
    const [first, second] = attempts('charge');
    expect(attempts('charge').map((span) => span.attributes['taskworker.outcome'])).toEqual(['retried', 'succeeded']);
    for (const span of [first, second]) {
      expect(span?.spanContext().traceId).not.toBe(producer.traceId);
      expect(span?.parentSpanContext).toBeUndefined();
      expect(linked(span?.links ?? [])).toEqual([producer]);
    }
    expect(first?.spanContext().traceId).not.toBe(second?.spanContext().traceId);

    // In the thread: the attempt's span is the active (remote) context, and the body's own span its child.
    const runs = notes(journal).filter((n) => n.what === 'run');
    expect(runs.map((n) => [n.thread, n.active, n.child])).toEqual(
      [first, second].map((span) => [
        'worker',
        ids(span as ReadableSpan),
        { traceId: ids(span as ReadableSpan).traceId, parentSpanId: ids(span as ReadableSpan).spanId },
      ]),
    );
  });

  it("an event emitted through SNS carries the emit span's context to each subscriber's job, the split copies too", async () => {
    const local = { region: 'us-east-1', credentials: { accessKeyId: 'test', secretAccessKey: 'test' } };
    const sns = new SNSClient({ ...local, endpoint: h.emulators.sqsEndpoint });
    const dynamo = new DynamoDBClient({ ...local, endpoint: h.emulators.dynamodbEndpoint });
    const app = await provisionVersion({ bundle: child, version: 'ev1', sqs: h.sqs, dynamo, sns });
    const outcomes: string[] = [];
    const runtime = app.dispatcher({
      tracked: true,
      workerId: 'events-d1',
      observer: { onBatch: (r) => outcomes.push(...r.jobs.map((j) => j.outcome)) },
    });
    try {
      const journal = tempFile('trace.jsonl');
      writeFileSync(journal, '');
      await inRequest(() => app.publisher.emit('order.placed', { journal }, { id: 'o-1' }));
      const emitted = ids(spans('order.placed publish')[0] as ReadableSpan);
      expect(spans('order.placed publish')[0]?.attributes).toMatchObject({
        'messaging.system': 'aws_sns',
        'messaging.destination.name': `trc-ev1-events`,
      });
      await runUntil(runtime, 'both subscribers', () => spans('audit process').length + spans('notify process').length === 2, 30_000);
      for (const task of ['audit', 'notify']) {
        const [span] = spans(`${task} process`);
        expect(span?.spanContext().traceId).toBe(emitted.traceId);
        expect(span?.parentSpanContext?.spanId).toBe(emitted.spanId);
        expect(span?.attributes).toMatchObject({ 'taskworker.job.id': `o-1/${task}`, 'taskworker.outcome': 'succeeded' });
      }
      // The event's own message was split (one copy per subscriber), each copy keeping the attribute.
      expect(outcomes.sort()).toEqual(['split', 'succeeded', 'succeeded']);
      expect(notes(journal).map((n) => n.active?.traceId)).toEqual([emitted.traceId, emitted.traceId]);
    } finally {
      await runtime.close();
      sns.destroy();
      dynamo.destroy();
    }
  });

  it("honours Lambda's X-Ray AWSTraceHeader on a doorbell record when no traceparent is there", async () => {
    current = await system(h, child, { tracked: true });
    const s = current;
    const journal = tempFile('trace.jsonl');
    writeFileSync(journal, '');
    await h.sqs.send(
      new SendMessageCommand({ QueueUrl: s.urls.queues.work, MessageBody: JSON.stringify({ task: 'charge', payload: { journal } }) }),
    );
    const received = await h.sqs.send(
      new ReceiveMessageCommand({ QueueUrl: s.urls.queues.work, MessageSystemAttributeNames: ['All'], MessageAttributeNames: ['All'] }),
    );
    const [m] = received.Messages ?? [];
    const record: SqsEventRecord = {
      messageId: m?.MessageId as string,
      receiptHandle: m?.ReceiptHandle as string,
      body: m?.Body as string,
      attributes: {
        ApproximateReceiveCount: '1',
        SentTimestamp: String(Date.now()),
        AWSTraceHeader: 'Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1',
      },
      messageAttributes: {},
      eventSource: 'aws:sqs',
      eventSourceARN: `arn:aws:sqs:us-east-1:000000000000:trc-${s.version}-work`,
    };
    await (s.runtime as DispatcherRuntime).ring([record], Date.now() + 20_000);
    const [span] = attempts('charge');
    expect(span?.spanContext().traceId).toBe('5759e988bd862e3fe1be46a994272793');
    expect(span?.parentSpanContext).toMatchObject({ spanId: '53995c3f42cd8ad8', isRemote: true });
    expect(span?.attributes).toMatchObject({ 'taskworker.trace.source': 'xray', 'taskworker.outcome': 'succeeded' });
  });

  it('ignores a traceparent that is not W3C trace context (a new trace, a warning) and runs the job', async () => {
    const warnings: Array<{ message: string; fields?: Record<string, unknown> }> = [];
    const logger: Logger = {
      debug() {},
      info() {},
      error() {},
      warn: (message, fields) => warnings.push({ message, ...(fields ? { fields } : {}) }),
    };
    current = await system(h, child, { tracked: true, logger });
    const s = current;
    const journal = tempFile('trace.jsonl');
    writeFileSync(journal, '');
    const hostile = '00-ffffffffffffffffffffffffffffffff-0000000000000000-01; DROP TABLE';
    await h.sqs.send(
      new SendMessageCommand({
        QueueUrl: s.urls.queues.work,
        MessageBody: JSON.stringify({ task: 'charge', id: 'hostile-1', payload: { journal } }),
        MessageAttributes: { traceparent: { DataType: 'String', StringValue: hostile } },
      }),
    );
    await runUntil(s.runtime, 'the job to run', () => s.jobs().some((j) => j.outcome === 'succeeded'), 30_000);
    const [span] = attempts('charge');
    expect(span?.parentSpanContext).toBeUndefined();
    expect(span?.links).toEqual([]);
    expect(span?.spanContext().traceId).not.toBe('ffffffffffffffffffffffffffffffff');
    expect(span?.attributes['taskworker.trace.source']).toBeUndefined();
    expect(warnings.filter((w) => /traceparent/.test(w.message))).toEqual([
      {
        message: expect.stringMatching(/not W3C trace context/),
        fields: { messageId: expect.any(String), jobId: 'hostile-1', traceparent: hostile },
      },
    ]);
    // The body ran in a trace of its own (the attempt's), not in the one the attribute named.
    const [run] = notes(journal).filter((n) => n.what === 'run');
    expect(run?.active).toEqual(ids(span as ReadableSpan));
  });
});
