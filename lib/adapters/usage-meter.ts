import type { UsageDelta } from '../policy/cost-attribution';

interface MiddlewareClient {
  middlewareStack: {
    add(middleware: unknown, options: { step: string; name: string; priority?: string }): void;
  };
}

/** Meters made in this process, for their middleware names. */
let meters = 0;

/** DynamoDB operations that take `ReturnConsumedCapacity`. */
const CAPACITY_OPERATIONS = /^(PutItem|UpdateItem|DeleteItem|BatchWriteItem|TransactWriteItems)Command$/;

/**
 * Counts what a dispatcher's own clients cost, as AWS bills it: every SQS HTTP request (inside the
 * SDK's retries) and every DynamoDB write unit (writes are asked for their consumed capacity, which
 * costs nothing). {@link take} returns what was counted since the last take: the one delta that
 * the stats attribute to the tasks of the batch settled then (lib/policy/cost-attribution.ts).
 */
export class UsageMeter {
  sqsRequests = 0;
  writeUnits = 0;
  private readonly metered = new WeakSet<object>();
  /**
   * Middleware names are unique per meter: dispatchers that share one SDK client (tests, a dev
   * process) each add their own (each then counts the client's every request: sharing a client
   * shares its bill).
   */
  private readonly name = `taskworkerUsage${++meters}`;
  private last = { sqsRequests: 0, writeUnits: 0, at: 0 };

  constructor(private readonly now: () => number) {
    this.last.at = now();
  }

  /** Counts the requests an SQS client sends (once per client). */
  meterSqs(client: object): void {
    if (this.metered.has(client) || !isMiddlewareClient(client)) return;
    this.metered.add(client);
    client.middlewareStack.add(
      (next: (args: unknown) => Promise<unknown>) => async (args: unknown) => {
        this.sqsRequests += 1;
        return next(args);
      },
      { step: 'finalizeRequest', name: `${this.name}Requests`, priority: 'low' },
    );
  }

  /** Counts the write units a DynamoDB client's writes consume (once per client). */
  meterDynamo(client: object): void {
    if (this.metered.has(client) || !isMiddlewareClient(client)) return;
    this.metered.add(client);
    client.middlewareStack.add(
      (
        next: (args: { input?: Record<string, unknown> }) => Promise<{ output?: { ConsumedCapacity?: unknown } }>,
        context: { commandName: string },
      ) =>
        async (args: { input?: Record<string, unknown> }) => {
          const writes = CAPACITY_OPERATIONS.test(context.commandName);
          if (writes && args.input && args.input.ReturnConsumedCapacity === undefined) args.input.ReturnConsumedCapacity = 'TOTAL';
          const out = await next(args);
          if (writes)
            for (const c of [out.output?.ConsumedCapacity ?? []].flat() as Array<{ CapacityUnits?: number; WriteCapacityUnits?: number }>)
              this.writeUnits += c.WriteCapacityUnits ?? c.CapacityUnits ?? 0;
          return out;
        },
      { step: 'initialize', name: `${this.name}WriteUnits` },
    );
  }

  /**
   * Starts a billed interval (an invocation's start): the time between invocations is not billed.
   * Requests counted since the last take (an invocation's last flush) stay, for the next batch.
   */
  restart(): void {
    this.last = { ...this.last, at: this.now() };
  }

  /** What was counted since the last take (or restart). */
  take(): UsageDelta {
    const at = this.now();
    const delta = {
      sqsRequests: this.sqsRequests - this.last.sqsRequests,
      writeUnits: this.writeUnits - this.last.writeUnits,
      elapsedMs: at - this.last.at,
    };
    this.last = { sqsRequests: this.sqsRequests, writeUnits: this.writeUnits, at };
    return delta;
  }
}

function isMiddlewareClient(client: object): client is MiddlewareClient {
  return typeof (client as Partial<MiddlewareClient>).middlewareStack?.add === 'function';
}
