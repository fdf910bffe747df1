import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';

/** Requests per operation and capacity units, counted by SDK middleware as AWS bills them. */
export interface Meter {
  requests: Record<string, number>;
  writeUnits: number;
  readUnits: number;
}

export const newMeter = (): Meter => ({ requests: {}, writeUnits: 0, readUnits: 0 });
export const total = (m: Meter) => Object.values(m.requests).reduce((a, n) => a + n, 0);

/** What an SQS meter and a DynamoDB meter counted, at a moment or between two. */
export interface Usage {
  readonly sqsRequests: number;
  readonly dynamoRequests: number;
  readonly writeUnits: number;
  readonly readUnits: number;
}

export const usage = (sqs: Meter, dynamo: Meter): Usage => ({
  sqsRequests: total(sqs),
  dynamoRequests: total(dynamo),
  writeUnits: dynamo.writeUnits,
  readUnits: dynamo.readUnits,
});

export const usageMinus = (a: Usage, b: Usage): Usage => ({
  sqsRequests: a.sqsRequests - b.sqsRequests,
  dynamoRequests: a.dynamoRequests - b.dynamoRequests,
  writeUnits: a.writeUnits - b.writeUnits,
  readUnits: a.readUnits - b.readUnits,
});

/** `u` divided by `n`, rounded to `digits`. */
export const usagePer = (u: Usage, n: number, digits = 3): Usage => {
  const r = (x: number) => Math.round((x / n) * 10 ** digits) / 10 ** digits;
  return { sqsRequests: r(u.sqsRequests), dynamoRequests: r(u.dynamoRequests), writeUnits: r(u.writeUnits), readUnits: r(u.readUnits) };
};

interface MeteredClient {
  middlewareStack: {
    add(middleware: unknown, options: { step: string; name: string; priority?: string }): void;
  };
}

/** Counts every HTTP attempt (inside the retry middleware) and sums the ConsumedCapacity answers. */
export function meter<C extends SQSClient | DynamoDBClient>(sdkClient: C, m: Meter): C {
  const client = sdkClient as unknown as MeteredClient;
  client.middlewareStack.add(
    (next: (args: unknown) => Promise<unknown>, context: { commandName: string }) => async (args: unknown) => {
      m.requests[context.commandName] = (m.requests[context.commandName] ?? 0) + 1;
      return next(args);
    },
    { step: 'finalizeRequest', name: 'benchCountRequests', priority: 'low' },
  );
  client.middlewareStack.add(
    (next: (args: unknown) => Promise<{ output?: { ConsumedCapacity?: unknown } }>, context: { commandName: string }) =>
      async (args: unknown) => {
        const out = await next(args);
        for (const c of [out.output?.ConsumedCapacity ?? []].flat() as Array<{
          CapacityUnits?: number;
          ReadCapacityUnits?: number;
          WriteCapacityUnits?: number;
        }>) {
          const reads = /^(Get|BatchGet|Query|Scan)/.test(context.commandName);
          m.readUnits += c.ReadCapacityUnits ?? (reads ? (c.CapacityUnits ?? 0) : 0);
          m.writeUnits += c.WriteCapacityUnits ?? (reads ? 0 : (c.CapacityUnits ?? 0));
        }
        return out;
      },
    { step: 'initialize', name: 'benchCountCapacity' },
  );
  return sdkClient;
}

/** DynamoDB operations that take `ReturnConsumedCapacity`. */
const CAPACITY_OPERATIONS =
  /^(PutItem|UpdateItem|DeleteItem|GetItem|Query|Scan|BatchGetItem|BatchWriteItem|TransactGetItems|TransactWriteItems)Command$/;

/**
 * Asks DynamoDB for the units of every request that does not ask already (`ReturnConsumedCapacity:
 * 'TOTAL'`), so a client whose library never asks (Powertools' persistence layer) is counted as
 * one that does. Asking changes what the answer reports, not what the request costs.
 */
export function askCapacity(sdkClient: DynamoDBClient): DynamoDBClient {
  const client = sdkClient as unknown as MeteredClient;
  client.middlewareStack.add(
    (next: (args: { input: Record<string, unknown> }) => Promise<unknown>, context: { commandName: string }) =>
      async (args: { input: Record<string, unknown> }) => {
        if (CAPACITY_OPERATIONS.test(context.commandName) && args.input.ReturnConsumedCapacity === undefined) {
          args.input = { ...args.input, ReturnConsumedCapacity: 'TOTAL' };
        }
        return next(args);
      },
    { step: 'initialize', name: 'benchAskCapacity', priority: 'high' },
  );
  return sdkClient;
}

/** One request as a client saw it: when it was sent and answered (performance.now(), ms). */
export interface Span {
  readonly op: string;
  readonly start: number;
  readonly end: number;
  /** DynamoDB: the table and the item's key (its first attribute's value). */
  readonly table?: string;
  readonly key?: string;
  /** ReceiveMessage: the job ids of the messages received (the envelope's `id`, else the message id). */
  readonly jobs?: readonly string[];
  /** ReceiveMessage: the receipt handles received; DeleteMessageBatch and DeleteMessage: those deleted. */
  readonly handles?: readonly string[];
}

/**
 * Records every request's span (from the first middleware to the answer, SDK retries included).
 * `jobIds: false` leaves out the received messages' job ids (parsing every body costs the consumer's CPU).
 */
export function timeline<C extends SQSClient | DynamoDBClient>(sdkClient: C, spans: Span[], { jobIds = true } = {}): C {
  const client = sdkClient as unknown as MeteredClient;
  client.middlewareStack.add(
    (next: (args: { input: Record<string, unknown> }) => Promise<{ output?: Record<string, unknown> }>, context: { commandName: string }) =>
      async (args: { input: Record<string, unknown> }) => {
        const start = performance.now();
        const out = await next(args);
        const input = args.input;
        const key = input.Key as Record<string, Record<string, string>> | undefined;
        const item = input.Item as Record<string, Record<string, string>> | undefined;
        const first = Object.values(key ?? item ?? {})[0];
        const messages = out.output?.Messages as Array<{ Body?: string; MessageId?: string; ReceiptHandle?: string }> | undefined;
        const entries =
          (input.Entries as Array<{ ReceiptHandle?: string }> | undefined) ??
          (typeof input.ReceiptHandle === 'string' ? [{ ReceiptHandle: input.ReceiptHandle }] : undefined);
        spans.push({
          op: context.commandName.replace(/Command$/, ''),
          start,
          end: performance.now(),
          ...(typeof input.TableName === 'string' ? { table: input.TableName } : {}),
          ...(first ? { key: first.S ?? first.N ?? '' } : {}),
          ...(messages
            ? { jobs: jobIds ? messages.map(jobIdOf) : messages.map(() => ''), handles: messages.map((m) => m.ReceiptHandle ?? '') }
            : {}),
          ...(entries ? { handles: entries.map((e) => e.ReceiptHandle ?? '') } : {}),
        });
        return out;
      },
    { step: 'initialize', name: 'benchTimeline', priority: 'low' },
  );
  return sdkClient;
}

function jobIdOf(message: { Body?: string; MessageId?: string }): string {
  try {
    const id = (JSON.parse(message.Body ?? '') as { id?: unknown }).id;
    return typeof id === 'string' ? id : (message.MessageId ?? '');
  } catch {
    return message.MessageId ?? '';
  }
}

/**
 * The SQS and DynamoDB clients a benchmark gives the system under test, each on its own meter,
 * against the emulators, and an unmetered DynamoDB client for the benchmark's own reads (what it
 * observes is not what the system pays). `metered` puts another client (SNS, S3) on a meter of its own.
 */
export function meteredClients(endpoints: { readonly sqsEndpoint: string; readonly dynamodbEndpoint: string }) {
  const local = { region: 'us-east-1', credentials: { accessKeyId: 'bench', secretAccessKey: 'bench' } };
  const sqsMeter = newMeter();
  const dynamoMeter = newMeter();
  const made: Array<{ destroy(): void }> = [];
  const keep = <C extends { destroy(): void }>(client: C): C => {
    made.push(client);
    return client;
  };
  return {
    local,
    sqsMeter,
    dynamoMeter,
    sqs: keep(meter(new SQSClient({ ...local, endpoint: endpoints.sqsEndpoint }), sqsMeter)),
    dynamo: keep(meter(new DynamoDBClient({ ...local, endpoint: endpoints.dynamodbEndpoint }), dynamoMeter)),
    unmetered: keep(new DynamoDBClient({ ...local, endpoint: endpoints.dynamodbEndpoint })),
    /** `client` on `m`: every request counted (SNS and S3 clients share the SDK's middleware stack). */
    metered<C extends { destroy(): void }>(client: C, m: Meter): C {
      return keep(meter(client as unknown as SQSClient, m) as unknown as C);
    },
    destroy: () => {
      for (const client of made) client.destroy();
    },
  };
}
