import { type Random, seededRandom } from '../../../lib/random';

/**
 * Fault injection as AWS SDK v3 middleware, added to a real client's `middlewareStack`: the
 * dispatcher's own adapters, the SDK's own deserializers and its own retry strategy see the
 * faults exactly as they would see AWS's.
 *
 * - `throttle` and `server-error` answer an attempt with the HTTP response the service sends
 *   (SQS `RequestThrottled` / DynamoDB `ThrottlingException`; 500 / 503), without sending it;
 * - `timeout-before` fails an attempt with a `TimeoutError` before it is sent;
 * - `timeout-after` sends it (the service applies it) and then fails with a `TimeoutError`, as a
 *   lost response does: the caller cannot tell whether it happened;
 * - `partial` takes some entries out of a batch call (SQS `*Batch`, DynamoDB `BatchWriteItem`),
 *   sends the rest, and reports the removed ones as failed (`Failed` / `UnprocessedItems`).
 *
 * Each attempt draws a fault with probability `rate` from a seeded generator. Attempt-level faults
 * sit inside the SDK's retry loop (step `deserialize`, below the deserializer), so the SDK retries
 * them as it would retry AWS's; `partial` sits outside it (step `initialize`), where SQS's
 * per-entry failures land: the SDK returns them, the caller must retry the entries.
 */
export type FaultKind = 'throttle' | 'server-error' | 'timeout-before' | 'timeout-after' | 'partial';
export const FAULT_KINDS: readonly FaultKind[] = ['throttle', 'server-error', 'timeout-before', 'timeout-after', 'partial'];
const ATTEMPT_FAULTS: readonly FaultKind[] = ['throttle', 'server-error', 'timeout-before', 'timeout-after'];

export type Service = 'sqs' | 'dynamodb';

/** A logical SDK call as it ended: how many of its attempts reached the service. */
export interface CallRecord {
  readonly service: Service;
  readonly command: string;
  readonly input: Readonly<Record<string, unknown>>;
  /** Attempts the service received (and applied, if it applies them): 0 when every attempt was faulted before sending. */
  readonly delivered: number;
  readonly attempts: number;
  readonly ok: boolean;
}

export interface FaultCounts {
  calls: number;
  attempts: number;
  /** Attempts beyond the first, made by the SDK's retry strategy. */
  sdkRetries: number;
  /** Calls that still failed with an injected fault after the SDK's retries (the dispatcher saw the error). */
  failedCalls: number;
  injected: Record<FaultKind, number>;
  /** Entries reported failed by `partial`. */
  failedEntries: number;
}

type Input = Record<string, unknown>;
interface Output {
  $metadata?: { attempts?: number };
  [key: string]: unknown;
}
type Handler = (args: { input: Input; request?: unknown }) => Promise<{ output: Output; response?: unknown }>;
interface CallContext {
  commandName?: string;
  chaos?: { planned: FaultKind | undefined; attempts: number; delivered: number };
}
interface LooseStack {
  add(middleware: (next: Handler, context: CallContext) => Handler, options: { step: string; name: string; priority?: string }): void;
}

/** Error names the injected answers turn into (the SDK's classes for them). */
const INJECTED_ERRORS = new Set([
  'RequestThrottled',
  'ThrottlingException',
  'InternalError',
  'InternalServerError',
  'ServiceUnavailable',
  'TimeoutError',
]);
const SQS_BATCH = new Set(['SendMessageBatch', 'DeleteMessageBatch', 'ChangeMessageVisibilityBatch']);
const DYNAMO_BATCH = new Set(['BatchWriteItem']);

export class FaultInjector {
  readonly counts: Record<Service, FaultCounts> = { sqs: emptyCounts(), dynamodb: emptyCounts() };
  readonly commands: Record<Service, Set<string>> = { sqs: new Set(), dynamodb: new Set() };
  private readonly random: Random;
  private readonly observers: Array<(call: CallRecord) => void> = [];
  /** When false, calls pass untouched (setup and audit). */
  enabled = true;

  constructor(
    readonly seed: number,
    readonly rate = 0.1,
  ) {
    this.random = seededRandom(seed);
  }

  /** Called once per logical call, after the SDK is done with it. */
  observe(observer: (call: CallRecord) => void): this {
    this.observers.push(observer);
    return this;
  }

  /** Adds the two middlewares to a client (an SQSClient or a DynamoDBClient); returns the client. */
  attach<C extends { middlewareStack: unknown }>(client: C, service: Service): C {
    const stack = client.middlewareStack as LooseStack;
    stack.add((next, context) => (args) => this.call(service, next, context, args), {
      step: 'initialize',
      name: 'chaosFaultsPerCall',
      priority: 'high',
    });
    stack.add((next, context) => (args) => this.attempt(service, next, context, args), {
      step: 'deserialize',
      name: 'chaosFaultsPerAttempt',
      priority: 'low',
    });
    return client;
  }

  totals(): FaultCounts {
    const sum = emptyCounts();
    for (const c of Object.values(this.counts)) {
      sum.calls += c.calls;
      sum.attempts += c.attempts;
      sum.sdkRetries += c.sdkRetries;
      sum.failedCalls += c.failedCalls;
      sum.failedEntries += c.failedEntries;
      for (const k of FAULT_KINDS) sum.injected[k] += c.injected[k];
    }
    return sum;
  }

  private draw(kinds: readonly FaultKind[]): FaultKind | undefined {
    if (!this.enabled || this.random() >= this.rate) return undefined;
    return kinds[Math.floor(this.random() * kinds.length)];
  }

  private async call(service: Service, next: Handler, context: CallContext, args: { input: Input }) {
    const command = (context.commandName ?? 'Unknown').replace(/Command$/, '');
    const counts = this.counts[service];
    const batch = (service === 'sqs' ? SQS_BATCH : DYNAMO_BATCH).has(command);
    let planned = this.draw(batch ? FAULT_KINDS : ATTEMPT_FAULTS);
    const split = planned === 'partial' ? splitBatch(service, command, args.input, this.random) : undefined;
    if (planned === 'partial') planned = undefined;
    if (this.enabled) {
      counts.calls += 1;
      this.commands[service].add(command);
    }
    context.chaos = { planned, attempts: 0, delivered: 0 };
    const finish = (ok: boolean, error?: unknown) => {
      const chaos = context.chaos as NonNullable<CallContext['chaos']>;
      if (!this.enabled) return;
      counts.sdkRetries += Math.max(0, chaos.attempts - 1);
      if (!ok && error instanceof Error && INJECTED_ERRORS.has(error.name)) counts.failedCalls += 1;
      const record: CallRecord = { service, command, input: args.input, delivered: chaos.delivered, attempts: chaos.attempts, ok };
      for (const observer of this.observers) observer(record);
    };
    if (split) {
      counts.injected.partial += 1;
      counts.failedEntries += split.removed;
      if (split.input === undefined) {
        finish(true);
        return { output: split.merge({ $metadata: {} }) };
      }
    }
    try {
      const result = await next(split?.input ? { ...args, input: split.input } : args);
      finish(true);
      return split ? { ...result, output: split.merge(result.output) } : result;
    } catch (error) {
      finish(false, error);
      throw error;
    }
  }

  private async attempt(service: Service, next: Handler, context: CallContext, args: { input: Input; request?: unknown }) {
    const chaos = context.chaos ?? { planned: undefined, attempts: 0, delivered: 0 };
    context.chaos = chaos;
    chaos.attempts += 1;
    const first = chaos.attempts === 1;
    const kind = first ? chaos.planned : this.draw(ATTEMPT_FAULTS);
    if (this.enabled) this.counts[service].attempts += 1;
    if (kind) this.counts[service].injected[kind] += 1;
    switch (kind) {
      case 'throttle':
      case 'server-error':
        return { output: {}, response: errorResponse(service, kind, this.random) };
      case 'timeout-before':
        throw timeoutError();
      case 'timeout-after': {
        chaos.delivered += 1;
        await next(args);
        throw timeoutError();
      }
      default:
        chaos.delivered += 1;
        return next(args);
    }
  }
}

function emptyCounts(): FaultCounts {
  return {
    calls: 0,
    attempts: 0,
    sdkRetries: 0,
    failedCalls: 0,
    failedEntries: 0,
    injected: { throttle: 0, 'server-error': 0, 'timeout-before': 0, 'timeout-after': 0, partial: 0 },
  };
}

/** What the node HTTP handler throws when a socket times out; the SDK classifies it as transient. */
function timeoutError(): Error {
  return Object.assign(new Error('socket timed out (injected)'), { name: 'TimeoutError' });
}

/** The HTTP answer each service gives for the fault, for the SDK's own deserializer to read. */
function errorResponse(service: Service, kind: 'throttle' | 'server-error', random: Random) {
  const server = random() < 0.5 ? { status: 500, code: 'InternalError' } : { status: 503, code: 'ServiceUnavailable' };
  const { status, type, query } =
    service === 'sqs'
      ? kind === 'throttle'
        ? { status: 403, type: 'com.amazonaws.sqs#RequestThrottled', query: 'RequestThrottled;Sender' }
        : { status: server.status, type: `com.amazonaws.sqs#${server.code}`, query: `${server.code};Receiver` }
      : kind === 'throttle'
        ? { status: 400, type: 'com.amazonaws.dynamodb.v20120810#ThrottlingException', query: undefined }
        : {
            status: server.status,
            type: `com.amazonaws.dynamodb.v20120810#${server.status === 500 ? 'InternalServerError' : 'ServiceUnavailable'}`,
            query: undefined,
          };
  const body = new TextEncoder().encode(JSON.stringify({ __type: type, message: `injected ${kind}` }));
  return {
    statusCode: status,
    reason: undefined,
    headers: {
      'content-type': 'application/x-amz-json-1.0',
      'content-length': String(body.byteLength),
      'x-amzn-requestid': `chaos-${Math.floor(random() * 1e9)}`,
      ...(query ? { 'x-amzn-query-error': query } : {}),
    },
    body,
  };
}

/**
 * Takes 1..n entries out of a batch call. `input` is what is still sent (undefined: nothing),
 * `merge` adds the removed entries to the answer as the service reports per-entry failures.
 */
function splitBatch(
  service: Service,
  command: string,
  input: Input,
  random: Random,
): { input: Input | undefined; removed: number; merge: (output: Output) => Output } | undefined {
  if (service === 'sqs') {
    const entries = (input.Entries as Array<{ Id: string }> | undefined) ?? [];
    if (entries.length === 0) return undefined;
    const removed = entries.filter(() => random() < 0.5);
    if (removed.length === 0) removed.push(entries[0] as { Id: string });
    const kept = entries.filter((e) => !removed.includes(e));
    return {
      input: kept.length > 0 ? { ...input, Entries: kept } : undefined,
      removed: removed.length,
      merge: (output) => ({
        ...output,
        Successful: (output.Successful as unknown[] | undefined) ?? [],
        Failed: [
          ...((output.Failed as unknown[] | undefined) ?? []),
          ...removed.map((e) => ({ Id: e.Id, Code: 'InternalError', SenderFault: false, Message: 'injected partial batch failure' })),
        ],
      }),
    };
  }
  if (command === 'BatchWriteItem') {
    const items = (input.RequestItems as Record<string, unknown[]> | undefined) ?? {};
    const kept: Record<string, unknown[]> = {};
    const unprocessed: Record<string, unknown[]> = {};
    let removed = 0;
    for (const [table, requests] of Object.entries(items)) {
      for (const request of requests) {
        const bucket = random() < 0.5 ? unprocessed : kept;
        bucket[table] = [...(bucket[table] ?? []), request];
        if (bucket === unprocessed) removed += 1;
      }
    }
    if (removed === 0) return undefined;
    return {
      input: Object.keys(kept).length > 0 ? { ...input, RequestItems: kept } : undefined,
      removed,
      merge: (output) => ({ ...output, UnprocessedItems: { ...((output.UnprocessedItems as object | undefined) ?? {}), ...unprocessed } }),
    };
  }
  return undefined;
}

/**
 * The counters an `UpdateItem` ADDs (`ADD #a :x, #b :y`), by attribute name: how a stats write's
 * delta reads on the wire. Works on the command input and on the DynamoDB JSON request body alike.
 */
/**
 * Whether a stats UpdateItem adds to a queue's day, not a task's (`task:<name>#<day>`, the same
 * counts again): the suites compare the queues' totals with the jobs table.
 */
export function isQueueStatsWrite(input: Readonly<Record<string, unknown>>): boolean {
  const pk = (input.Key as { pk?: { S?: string } } | undefined)?.pk?.S ?? '';
  // A queue's day (`<queue>#YYYY-MM-DD`), not a task's day nor a queue's minute counter (`…THH:MM`, the throughput chart's).
  return !pk.startsWith('task:') && /#\d{4}-\d{2}-\d{2}$/.test(pk);
}

export function addedCounters(input: Readonly<Record<string, unknown>>): Record<string, number> {
  const expression = String(input.UpdateExpression ?? '');
  const names = (input.ExpressionAttributeNames ?? {}) as Record<string, string>;
  const values = (input.ExpressionAttributeValues ?? {}) as Record<string, { N?: string }>;
  const add = /\bADD\s+(.+?)(?:\s+(?:SET|REMOVE|DELETE)\s|$)/.exec(expression)?.[1] ?? '';
  const out: Record<string, number> = {};
  for (const pair of add.split(',')) {
    const [name, value] = pair.trim().split(/\s+/);
    if (!name || !value) continue;
    out[names[name] ?? name] = Number(values[value]?.N ?? 0);
  }
  return out;
}
