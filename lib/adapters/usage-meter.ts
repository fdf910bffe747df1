import { AsyncLocalStorage } from 'node:async_hooks';
import type { UsageDelta, UsagePort } from '../policy/cost-attribution';

interface MiddlewareClient {
  middlewareStack: {
    add(middleware: unknown, options: { step: string; name: string; priority?: string }): void;
  };
}

/** Meters made in this process, for their middleware names. */
let meters = 0;

/** DynamoDB operations that take `ReturnConsumedCapacity`. */
const CAPACITY_OPERATIONS = /^(PutItem|UpdateItem|DeleteItem|BatchWriteItem|TransactWriteItems)Command$/;

/** Requests and write units counted in one scope. */
interface Counted {
  sqsRequests: number;
  writeUnits: number;
}

/**
 * Counts what a dispatcher's own clients cost, as AWS bills it: every SQS HTTP request (inside the
 * SDK's retries) and every DynamoDB write unit (writes are asked for their consumed capacity, which
 * costs nothing). A request made while a batch runs ({@link batch}: its claims, deletes, archives,
 * record writes) is that batch's, found through the async context it was sent from; anything else
 * (receives, depth reads, sweeps) is shared. {@link take} returns the batch's own and the shared
 * rest since the last take: the delta the stats attribute to the tasks of the batch settled then
 * (lib/policy/cost-attribution.ts). So every batch carries at least its own settle's requests, even
 * when another batch settling beside it took the shared rest a moment before.
 */
export class UsageMeter implements UsagePort {
  /** Everything counted, for a reader who wants the totals. */
  sqsRequests = 0;
  writeUnits = 0;
  private readonly metered = new WeakSet<object>();
  /**
   * Middleware names are unique per meter: dispatchers that share one SDK client (tests, a dev
   * process) each add their own (each then counts the client's every request: sharing a client
   * shares its bill).
   */
  private readonly name = `taskworkerUsage${++meters}`;
  /** The batch whose work is running, through its awaits. */
  private readonly scope = new AsyncLocalStorage<Counted>();
  /** Counted outside any batch (or left by a batch that took nothing) since the last take. */
  private shared: Counted = { sqsRequests: 0, writeUnits: 0 };
  private lastAt: number;

  constructor(private readonly now: () => number) {
    this.lastAt = now();
  }

  /** Counts the requests an SQS client sends (once per client). */
  meterSqs(client: object): void {
    if (this.metered.has(client) || !isMiddlewareClient(client)) return;
    this.metered.add(client);
    client.middlewareStack.add(
      (next: (args: unknown) => Promise<unknown>) => async (args: unknown) => {
        this.count('sqsRequests', 1);
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
              this.count('writeUnits', c.WriteCapacityUnits ?? c.CapacityUnits ?? 0);
          return out;
        },
      { step: 'initialize', name: `${this.name}WriteUnits` },
    );
  }

  async batch<T>(work: () => Promise<T>): Promise<T> {
    const own: Counted = { sqsRequests: 0, writeUnits: 0 };
    try {
      return await this.scope.run(own, work);
    } finally {
      // A batch that took nothing (no registered task in it) leaves its requests for the next that takes.
      this.shared.sqsRequests += own.sqsRequests;
      this.shared.writeUnits += own.writeUnits;
    }
  }

  addRequests(sqsRequests: number): void {
    this.count('sqsRequests', sqsRequests);
  }

  /**
   * Starts a billed interval (an invocation's start): the time between invocations is not billed.
   * Requests counted since the last take (an invocation's last flush) stay, for the next batch.
   */
  restart(): void {
    this.lastAt = this.now();
  }

  /** The current batch's own usage and the shared rest since the last take (or restart). */
  take(): UsageDelta {
    const at = this.now();
    const own = this.scope.getStore();
    const delta = {
      sqsRequests: this.shared.sqsRequests + (own?.sqsRequests ?? 0),
      writeUnits: this.shared.writeUnits + (own?.writeUnits ?? 0),
      elapsedMs: at - this.lastAt,
    };
    this.shared = { sqsRequests: 0, writeUnits: 0 };
    if (own) Object.assign(own, { sqsRequests: 0, writeUnits: 0 });
    this.lastAt = at;
    return delta;
  }

  private count(what: keyof Counted, n: number): void {
    this[what] += n;
    const own = this.scope.getStore();
    (own ?? this.shared)[what] += n;
  }
}

function isMiddlewareClient(client: object): client is MiddlewareClient {
  return typeof (client as Partial<MiddlewareClient>).middlewareStack?.add === 'function';
}
