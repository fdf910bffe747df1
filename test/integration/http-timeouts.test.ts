import { createServer, type Server, type Socket } from 'node:net';
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { dynamoClientFrom } from '../../lib/aws/clients';
import { DYNAMO_TIMEOUTS, SQS_TIMEOUTS, withHttpTimeouts } from '../../lib/aws/http-timeouts';
import { sqsQueues } from '../../lib/aws/wiring';

/** A server that accepts connections and never answers: a stalled AWS endpoint. */
let server: Server;
let endpoint: string;
const sockets = new Set<Socket>();
beforeAll(async () => {
  server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('no port');
  endpoint = `http://127.0.0.1:${address.port}`;
});
afterAll(async () => {
  for (const socket of sockets) socket.destroy();
  await new Promise((resolve) => server.close(resolve));
});

const clientConfig = () => ({ endpoint, region: 'us-east-1', credentials: { accessKeyId: 'k', secretAccessKey: 's' }, maxAttempts: 1 });
const fast = { connectionTimeout: 1000, requestTimeout: 300 };

describe('SDK request time limits', () => {
  it('fails an SQS receive that gets no answer, instead of waiting for ever', async () => {
    const queues = sqsQueues({ clientConfig: clientConfig(), timeouts: fast });
    const error = await queues
      .receive(`${endpoint}/000000000000/q`, { maxMessages: 10, waitSeconds: 0, visibilityTimeoutSeconds: 30 })
      .then(
        () => undefined,
        (e: unknown) => e as Error,
      );
    expect(error?.name).toBe('TimeoutError');
    queues.sqs.destroy();
  });

  it('fails a DynamoDB call that gets no answer', async () => {
    const dynamo = dynamoClientFrom({ clientConfig: clientConfig(), timeouts: fast });
    const error = await dynamo.send(new GetItemCommand({ TableName: 't', Key: { jobId: { S: 'j' } } })).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(error?.name).toBe('TimeoutError');
    dynamo.destroy();
  });

  it('defaults leave room for a 20 s long poll, and a caller’s own request handler wins', () => {
    expect(SQS_TIMEOUTS.requestTimeout).toBeGreaterThan(20_000);
    expect(DYNAMO_TIMEOUTS.requestTimeout).toBeLessThan(SQS_TIMEOUTS.requestTimeout);
    expect(withHttpTimeouts({}, SQS_TIMEOUTS)).toEqual({ requestHandler: { ...SQS_TIMEOUTS, throwOnRequestTimeout: true } });
    const own = { requestHandler: { requestTimeout: 5 } };
    expect(withHttpTimeouts(own, SQS_TIMEOUTS)).toBe(own);
  });
});
