/**
 * The dashboard's server over an in-memory system (test/helpers/world.ts): two queues, five tasks
 * (one echoes, one always fails, one validates its payload, two subscribe to the app's event
 * orders.placed, one of them to billing's invoices.paid too), the operator context the server reads,
 * a publisher, and requests as the page sends them. For the route tests (test/unit/ui-*.test.ts).
 */
import { TOKEN_HEADER } from '../../dashboard/api-types';
import { createUiApp } from '../../dashboard/server/server';
import type { UiOptions } from '../../dashboard/server/ui-options';
import { MoveTaskUnavailableError } from '../../lib/errors';
import { MemoryControlStore } from '../../lib/fakes/memory-controls';
import { MemoryOperationLog } from '../../lib/fakes/memory-operation-log';
import { MemoryPayloadStore } from '../../lib/fakes/memory-payloads';
import { MemoryWorkerRegistry } from '../../lib/fakes/memory-workers';
import type { OperatorContext } from '../../lib/operate/operator-context';
import { payloadDigest } from '../../lib/policy/job-rules';
import type { DeadLetterMover, QueueClient } from '../../lib/ports';
import { Publisher } from '../../lib/publish/publisher';
import { storedResultReader } from '../../lib/publish/results';
import { defineTask, type TaskOptions } from '../../lib/tasks/task';
import type { JobLogEntry } from '../../lib/track/job-logs';
import { encodeEnvelope } from '../../lib/wire/envelope';
import { type World, world } from './world';

export const TOKEN = 'test-token-0123456789';
const ok: TaskOptions = { name: 'ok', queue: 'urgent', timeLimitSeconds: 5, run: (p: unknown) => ({ echo: p }) };
const broken: TaskOptions = {
  name: 'broken',
  queue: 'routine',
  timeLimitSeconds: 5,
  maxRetries: 0,
  run: (p: unknown) => {
    throw new Error(`refused ${JSON.stringify(p)}`);
  },
};
const strict: TaskOptions = {
  name: 'strict',
  queue: 'urgent',
  timeLimitSeconds: 5,
  validate: (p: unknown) => {
    if (typeof (p as { to?: unknown })?.to !== 'string')
      throw new TypeError(`to must be a string, got ${JSON.stringify((p as { to?: unknown })?.to)}`);
    return p;
  },
  run: () => 'sent',
};

/** Two subscribers of the app's own orders.placed, one on each queue; points also takes billing's invoices.paid. */
const confirm: TaskOptions = { name: 'confirm', queue: 'urgent', timeLimitSeconds: 5, on: 'orders.placed', run: () => 'confirmed' };
const points: TaskOptions = {
  name: 'points',
  queue: 'routine',
  timeLimitSeconds: 5,
  on: ['orders.placed', 'invoices.paid'],
  run: () => 'awarded',
};
const TASKS = [ok, broken, strict, confirm, points];

/** The emulators' answer to a move task, as the memory queues give it. */
export function operatorQueues(w: World): QueueClient & DeadLetterMover {
  return {
    receive: (url, request, signal) => w.sqs.receive(url, request, signal),
    sendBatch: (url, entries) => w.sqs.sendBatch(url, entries),
    deleteBatch: (url, entries) => w.sqs.deleteBatch(url, entries),
    changeVisibilityBatch: (url, entries) => w.sqs.changeVisibilityBatch(url, entries),
    depth: (url) => w.sqs.depth(url),
    startMove: async () => {
      throw new MoveTaskUnavailableError('memory queues have no move task');
    },
    moveStatus: async () => 'COMPLETED',
  };
}

export function dashboard(options: Partial<UiOptions> = {}) {
  // The version's bucket, in memory: large payloads and results over 1 KB go there.
  const payloads = { store: new MemoryPayloadStore(), bucket: 'test-v1-000000000000-us-east-1' };
  const w = world(
    TASKS,
    {
      queues: [
        { name: 'urgent', priority: 90, visibilityTimeoutSeconds: 30 },
        { name: 'routine', priority: 10, visibilityTimeoutSeconds: 30 },
      ],
      events: [{ name: 'orders.placed', description: 'A customer placed an order' }],
      subscriptions: [{ app: 'billing', version: 'v2', events: ['invoices.paid'] }],
    },
    { tracked: true, deadLetters: true, payloads },
  );
  // Job log lines as a reader would find them (dev's file and CloudWatch have their own tests).
  const jobLogLines = new Map<string, JobLogEntry[]>();
  const ctx: OperatorContext = {
    jobLogs: { where: 'the test', linesOf: async (jobId) => jobLogLines.get(jobId) ?? [] },
    config: w.config,
    version: 'v1',
    queues: operatorQueues(w),
    urls: { ...w.urls, deadLetter: Object.fromEntries(w.config.queues.map((q) => [q.name, w.sqs.createQueue(`${q.name}-dlq`)])) },
    jobs: w.jobs,
    stats: w.stats,
    controls: new MemoryControlStore(),
    workers: new MemoryWorkerRegistry(),
    operations: new MemoryOperationLog(),
    clock: w.clock,
    readStoredResult: storedResultReader(() => payloads.store),
  };
  const logged: string[] = [];
  const app = createUiApp({
    app: 'test',
    defaultVersion: 'v1',
    versions: async () => ['v0', 'v1'],
    contextFor: async (version) => {
      if (version !== 'v1') throw new Error(`no ${version}`);
      return ctx;
    },
    tasks: async () => TASKS.map((t) => defineTask(t)),
    readOnly: false,
    token: TOKEN,
    tokenForReads: false,
    log: (line) => logged.push(line),
    ...options,
  });
  const get = (path: string, headers: Record<string, string> = {}) => app.request(path, { headers });
  const post = (path: string, body: unknown, headers: Record<string, string> = { [TOKEN_HEADER]: TOKEN }) =>
    app.request(path, {
      method: 'POST',
      body: typeof body === 'string' ? body : JSON.stringify(body),
      headers: { 'content-type': 'application/json', ...headers },
    });
  const publisher = new Publisher({
    config: w.config,
    version: 'v1',
    tasks: TASKS.map((t) => defineTask(t)),
    queues: ctx.queues,
    urls: w.urls,
    jobs: w.jobs,
    clock: w.clock,
    payloads,
  });
  return { w, ctx, app, get, post, logged, publisher, payloads, jobLogLines };
}

/** A job held by a dispatcher right now (running, its lease live), with no message anywhere. */
export async function running(d: ReturnType<typeof dashboard>, jobId: string): Promise<void> {
  const now = d.w.clock.now();
  const claim = await d.w.jobs.claim({
    jobId,
    task: 'ok',
    payloadDigest: payloadDigest(null),
    queue: 'urgent',
    version: 'v1',
    publishedAt: now,
    workerId: 'elsewhere',
    now,
    leaseUntil: now + 3_600_000,
  });
  expect(claim.outcome).toBe('claimed');
}

/** A job parked until an hour from now (scheduled). */
export async function parked(d: ReturnType<typeof dashboard>, jobId: string): Promise<void> {
  const now = d.w.clock.now();
  const result = await d.w.jobs.park({
    jobId,
    task: 'ok',
    payloadDigest: payloadDigest(1),
    queue: 'urgent',
    version: 'v1',
    publishedAt: now,
    runAt: now + 3_600_000,
    body: encodeEnvelope({ task: 'ok', payload: 1, id: jobId }),
    workerId: 'test',
    now,
  });
  expect(result.outcome).toBe('parked');
}

export const json = async <T = Record<string, unknown>>(response: Response): Promise<T> => (await response.json()) as T;
