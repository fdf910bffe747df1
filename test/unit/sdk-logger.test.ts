/**
 * taskworker's AWS clients get a logger with no `info`: the SDK builds a redacted copy of every
 * request and response only to hand it to `logger?.info?.(…)`, and with none it does not. Counted:
 * how often the SDK asked the operation's schema for a redacted copy, through the very middleware
 * that builds it, on a request that never leaves the process.
 */
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { dynamoClientFrom, sqsClientFrom } from '../../lib/aws/clients';
import { SDK_LOGGER } from '../../lib/aws/sdk-logger';

const offline = { region: 'us-east-1', credentials: { accessKeyId: 'a', secretAccessKey: 'b' } };

/** Sends one GetItem answered in-process, counting the filters the SDK's logger middleware ran. */
async function filtersRun(client: ReturnType<typeof dynamoClientFrom>): Promise<number> {
  let runs = 0;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const filter = context.inputFilterSensitiveLog as ((input: unknown) => unknown) | undefined;
      if (filter) {
        context.inputFilterSensitiveLog = (input: unknown) => {
          runs += 1;
          return filter(input);
        };
      }
      return next(args);
    },
    { step: 'initialize', priority: 'high' },
  );
  client.middlewareStack.add(
    () => async () => ({ response: { statusCode: 200, headers: {}, body: undefined }, output: { $metadata: {} } }) as never,
    { step: 'deserialize', priority: 'low' },
  );
  await client.send(new GetItemCommand({ TableName: 't', Key: { id: { S: 'x' } } }));
  return runs;
}

it('gives its clients a logger with no info, so no redacted copy of a request is built', async () => {
  const client = dynamoClientFrom({ clientConfig: offline });
  expect(client.config.logger).toBe(SDK_LOGGER);
  expect((client.config.logger as { info?: unknown }).info).toBeUndefined();
  expect(await filtersRun(client)).toBe(0);
  expect(sqsClientFrom({ clientConfig: offline }).config.logger).toBe(SDK_LOGGER);
});

it('keeps a logger the config names, and the SDK logs through it as it would', async () => {
  const seen: unknown[] = [];
  const logger = { debug() {}, info: (entry: unknown) => seen.push(entry), warn() {}, error() {} };
  const client = dynamoClientFrom({ clientConfig: { ...offline, logger } });
  expect(client.config.logger).toBe(logger);
  expect(await filtersRun(client)).toBe(1);
  expect(seen).toHaveLength(1);
});
