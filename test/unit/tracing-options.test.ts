/**
 * Trace context at the edges, on the in-memory fakes: a traceparent given in publish or emit
 * options is checked and carried as it is; config tracing.parent is validated; and without
 * `@opentelemetry/api` (or with it and no provider) publishing and running work as before, with no
 * spans and no trace attributes but a given one.
 */
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { VirtualClock } from '../../lib/clock';
import { resolveConfig } from '../../lib/config/app-config';
import { ConfigError, PublishOptionError } from '../../lib/errors';
import { MemoryEventBus } from '../../lib/fakes/memory-events';
import { MemoryQueueService } from '../../lib/fakes/memory-queue';
import type { QueueUrls } from '../../lib/ports';
import { Publisher } from '../../lib/publish/publisher';
import { setOtelForTests } from '../../lib/trace/otel';
import { appConfig } from '../helpers/factories';
import { world } from '../helpers/world';

const TRACEPARENT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

function setup() {
  const clock = new VirtualClock();
  const sqs = new MemoryQueueService(clock);
  const config = appConfig({ events: [{ name: 'order.placed' }] });
  const urls: QueueUrls = {
    queues: { urgent: sqs.createQueue('urgent'), routine: sqs.createQueue('routine') },
    archive: sqs.createQueue('archive'),
  };
  const bus = new MemoryEventBus(sqs, urls, []);
  const publisher = new Publisher({
    config,
    version: 'v1',
    queues: sqs,
    urls,
    clock,
    events: { bus, topicArn: 'arn:aws:sns:us-east-1:000000000000:t' },
  });
  const sent = () => sqs.peek(urls.queues.urgent as string).map((m) => m.attributes);
  return { publisher, bus, sent };
}

const exporter = new InMemorySpanExporter();

beforeAll(() => {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
});
afterAll(() => {
  trace.disable();
  context.disable();
});
afterEach(() => {
  setOtelForTests(undefined);
  exporter.reset();
});

/** Runs `fn` inside a span of the caller's own, as code that publishes from a traced request does. */
const inSpan = <T>(fn: () => Promise<T>) =>
  trace.getTracer('test').startActiveSpan('request', async (span) => {
    try {
      return await fn();
    } finally {
      span.end();
    }
  });

describe('a traceparent given to publish or emit', () => {
  it('is carried as it is, tracestate beside it, instead of the active context', async () => {
    const { publisher, sent, bus } = setup();
    await inSpan(() => publisher.publish('t', {}, { queue: 'urgent', traceparent: TRACEPARENT, tracestate: 'rojo=00f067aa0ba902b7' }));
    await publisher.emit('order.placed', {}, { traceparent: TRACEPARENT });
    expect(sent()).toEqual([{ traceparent: TRACEPARENT, tracestate: 'rojo=00f067aa0ba902b7' }]);
    expect(bus.published.map((p) => p.attributes)).toEqual([{ traceparent: TRACEPARENT }]);
  });

  it.each([
    ['traceparent', { traceparent: 'not-a-traceparent' }],
    ['traceparent', { traceparent: TRACEPARENT.toUpperCase() }],
    ['traceparent', { traceparent: ` ${TRACEPARENT}` }],
    ['tracestate', { tracestate: 'rojo=1' }],
    ['tracestate', { traceparent: TRACEPARENT, tracestate: 'no-equals-sign' }],
  ])('is refused, naming %s, before anything is sent', async (option, given) => {
    const { publisher, sent, bus } = setup();
    const publishing = publisher.publish('t', {}, { queue: 'urgent', ...given });
    await expect(publishing).rejects.toThrow(PublishOptionError);
    await expect(publishing).rejects.toMatchObject({ option });
    await expect(publisher.emit('order.placed', {}, given)).rejects.toMatchObject({ name: 'PublishOptionError', option });
    expect(sent()).toEqual([]);
    expect(bus.published).toEqual([]);
  });
});

describe('the active context', () => {
  it('rides on every message of a publish as its PRODUCER span, one span per call', async () => {
    const { publisher, sent } = setup();
    await inSpan(() =>
      publisher.publishBatch([
        { task: 't', payload: 1, options: { queue: 'urgent' } },
        { task: 't', payload: 2, options: { queue: 'urgent' } },
      ]),
    );
    const [publish] = exporter.getFinishedSpans().filter((s) => s.name === 't publish');
    const { traceId, spanId } = publish?.spanContext() ?? {};
    expect(sent()).toEqual([{ traceparent: `00-${traceId}-${spanId}-01` }, { traceparent: `00-${traceId}-${spanId}-01` }]);
    expect(publish?.attributes).toMatchObject({ 'messaging.batch.message_count': 2, 'messaging.destination.name': 'test-v1-urgent' });
  });
});

describe('without @opentelemetry/api', () => {
  it('publishes without trace attributes (but a given traceparent) and starts no span', async () => {
    setOtelForTests(null);
    const { publisher, sent } = setup();
    await inSpan(() => publisher.publish('t', {}, { queue: 'urgent' }));
    await publisher.publish('t', {}, { queue: 'urgent', traceparent: TRACEPARENT });
    expect(sent()).toEqual([{}, { traceparent: TRACEPARENT }]);
    expect(exporter.getFinishedSpans().map((s) => s.name)).toEqual(['request']);
    await expect(publisher.publish('t', {}, { queue: 'urgent', traceparent: 'bad' })).rejects.toThrow(PublishOptionError);
  });

  it('runs a job that carries a traceparent as any other, with no span', async () => {
    setOtelForTests(null);
    const w = world([{ name: 'job', queue: 'urgent', timeLimitSeconds: 5, run: () => 'done' }]);
    await w.sqs.sendBatch(w.urls.queues.urgent as string, [{ id: '0', body: '{"task":"job"}', attributes: { traceparent: TRACEPARENT } }]);
    await w.run();
    expect(w.reports.flatMap((r) => r.jobs.map((j) => j.outcome))).toEqual(['succeeded']);
    expect(exporter.getFinishedSpans()).toEqual([]);
  });
});

describe('config tracing', () => {
  it("links by default, or makes each attempt the publisher's child", () => {
    expect(resolveConfig({ app: 'a', queues: [{ name: 'q', priority: 1 }] }).tracing).toEqual({ parent: 'link' });
    expect(resolveConfig({ app: 'a', queues: [{ name: 'q', priority: 1 }], tracing: { parent: 'child' } }).tracing).toEqual({
      parent: 'child',
    });
  });

  it('refuses anything else, naming the field', () => {
    const bad = (tracing: unknown) => () => resolveConfig({ app: 'a', queues: [{ name: 'q', priority: 1 }], tracing });
    expect(bad({ parent: 'sibling' })).toThrow(ConfigError);
    expect(bad({ parent: 'sibling' })).toThrow(/tracing\.parent/);
    expect(bad('child')).toThrow(/tracing/);
  });
});
