import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';

/** Requests per operation and capacity units, counted by SDK middleware as AWS bills them. */
export interface Meter {
  requests: Record<string, number>;
  writeUnits: number;
  readUnits: number;
}

export const newMeter = (): Meter => ({ requests: {}, writeUnits: 0, readUnits: 0 });
export const total = (m: Meter) => Object.values(m.requests).reduce((a, n) => a + n, 0);

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
