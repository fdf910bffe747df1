import type { AddressInfo } from 'node:net';
import type Dynalite from 'dynalite';
import type { buildApp } from 'fauxqs';
import { optionalDependencies } from '../tasks/package-root';

export interface EmulatorOptions {
  /** @defaultValue a free port */
  readonly sqsPort?: number;
  /** @defaultValue a free port */
  readonly dynamodbPort?: number;
  /** @defaultValue '127.0.0.1' */
  readonly host?: string;
  /**
   * A directory where DynamoDB keeps its tables (LevelDB, through dynalite's `path`), so they outlive
   * this process. @defaultValue in memory
   */
  readonly dynamodbPath?: string;
}

export interface Emulators {
  readonly sqsEndpoint: string;
  readonly dynamodbEndpoint: string;
  stop(): Promise<void>;
}

/** Starts the SQS emulator (fauxqs) and the DynamoDB emulator (dynalite) in this process. */
export async function startEmulators(options: EmulatorOptions = {}): Promise<Emulators> {
  const host = options.host ?? '127.0.0.1';
  // Optional peers: a service that only publishes does not install the emulators. Both are loaded
  // before either is used, so a project missing both hears of both at once. fauxqs ships ESM only,
  // so it is imported; dynalite is CommonJS.
  const loaded = await optionalDependencies('the local emulators (taskworker dev)', {
    fauxqs: () => import('fauxqs'),
    dynalite: () => (require('dynalite') as { default?: typeof Dynalite }).default ?? (require('dynalite') as typeof Dynalite),
  });
  const { buildApp } = loaded.fauxqs;
  const dynalite = loaded.dynalite;
  // fauxqs's own start helper listens on every interface; build its app and bind loopback only.
  // Queue URLs it hands out read http://sqs.<region>.localhost:<port>/000000000000/<name>.
  const sqs = buildApp({ logger: false, host: 'localhost' });
  let sqsEndpoint = '';
  countLapsedAsVisible(sqs, () => sqsEndpoint);
  sqsEndpoint = await sqs.listen({ port: options.sqsPort ?? 0, host });
  const dynamo = dynalite({
    createTableMs: 0,
    deleteTableMs: 0,
    updateTableMs: 0,
    ...(options.dynamodbPath !== undefined ? { path: options.dynamodbPath } : {}),
  });
  try {
    await new Promise<void>((resolve, reject) => {
      dynamo.once('error', reject);
      dynamo.listen(options.dynamodbPort ?? 0, host, () => resolve());
    });
  } catch (error) {
    await sqs.close();
    throw error;
  }
  const dynamoPort = (dynamo.address() as AddressInfo).port;
  return {
    sqsEndpoint,
    dynamodbEndpoint: `http://${host}:${dynamoPort}`,
    async stop() {
      await sqs.close();
      // Keep-alive connections of clients that were not destroyed would hold close() open.
      dynamo.closeAllConnections();
      await new Promise<void>((resolve) => dynamo.close(() => resolve()));
    },
  };
}

/** What fauxqs's inspection route says of a queue's messages, the fields read here. */
interface InspectedQueue {
  readonly messages: {
    readonly delayed: ReadonlyArray<{ readonly delayUntil?: number }>;
    readonly inflight: ReadonlyArray<{ readonly visibilityDeadline: number }>;
  };
}

/**
 * fauxqs 1.9 moves a message whose visibility timeout lapsed (or whose delay passed) back among the
 * visible ones only when something receives from its queue; SQS counts it visible at once. An idle
 * version's scheduled dispatcher asks the depths first and ends when nothing is visible, so locally a
 * retry on a `wakeUp: 'schedule'` queue (or a delayed message there) would wait for ever where AWS
 * runs it at the next minute. So when the emulator answers a GetQueueAttributes with nothing visible
 * but messages in flight or delayed, it counts the lapsed and due ones as visible, read from its own
 * inspection of the queue (with messages visible the dispatcher receives anyway, and a receive moves
 * them; the inspection, which lists the queue's messages, is then not worth its cost).
 */
function countLapsedAsVisible(app: ReturnType<typeof buildApp>, endpoint: () => string): void {
  app.addHook(
    'preSerialization',
    async (request: { readonly headers: Record<string, unknown>; readonly body: unknown }, _reply: unknown, payload: unknown) => {
      if (request.headers['x-amz-target'] !== 'AmazonSQS.GetQueueAttributes') return payload;
      const attributes = (payload as { Attributes?: Record<string, string> } | null)?.Attributes;
      const queueUrl = parsedBody(request.body)?.QueueUrl;
      if (!attributes || typeof queueUrl !== 'string' || attributes.ApproximateNumberOfMessages !== '0') return payload;
      // Neither asked for, or none of either: nothing to look at.
      const inFlight = Number(attributes.ApproximateNumberOfMessagesNotVisible ?? Number.NaN);
      const delayed = Number(attributes.ApproximateNumberOfMessagesDelayed ?? Number.NaN);
      if (!(inFlight > 0) && !(delayed > 0) && !(Number.isNaN(inFlight) && Number.isNaN(delayed))) return payload;
      const name = queueUrl.slice(queueUrl.lastIndexOf('/') + 1);
      const inspected = await fetch(`${endpoint()}/_fauxqs/queues/${encodeURIComponent(name)}`);
      if (!inspected.ok) return payload;
      const { messages } = (await inspected.json()) as InspectedQueue;
      const now = Date.now();
      const lapsed = messages.inflight.filter((m) => m.visibilityDeadline <= now).length;
      const due = messages.delayed.filter((m) => (m.delayUntil ?? 0) <= now).length;
      if (lapsed + due === 0) return payload;
      const counted: Record<string, string> = { ...attributes, ApproximateNumberOfMessages: String(lapsed + due) };
      if (!Number.isNaN(inFlight)) counted.ApproximateNumberOfMessagesNotVisible = String(inFlight - lapsed);
      if (!Number.isNaN(delayed)) counted.ApproximateNumberOfMessagesDelayed = String(delayed - due);
      return { ...(payload as object), Attributes: counted };
    },
  );
}

/** The SQS JSON protocol's body, as fauxqs parsed it. */
function parsedBody(body: unknown): { QueueUrl?: unknown } | undefined {
  return typeof body === 'object' && body !== null ? (body as { QueueUrl?: unknown }) : undefined;
}
