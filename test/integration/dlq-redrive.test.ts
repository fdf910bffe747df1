/**
 * `dlq redrive` on an endpoint whose StartMessageMoveTask fails in a way that means "not here":
 * another emulator answered it with an HTML error page. The messages must still go back to their
 * queue (moved by the client), and a refusal to the caller (403) must not be papered over.
 */
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { SqsQueueClient } from '../../lib/adapters/sqs';
import { resolveConfig } from '../../lib/config/app-config';
import { type LocalStack, startLocalStack } from '../../lib/local/dev';
import { redriveDeadLetters } from '../../lib/operate/dead-letters';
import { operatorContext } from '../../lib/operate/operator-context';
import { encodeEnvelope } from '../../lib/wire/envelope';
import { FIXTURE_CONFIG } from '../helpers/emulators';

let stack: LocalStack;
let proxy: Server;
let answer: { status: number; type: string; body: string };
const seen: string[] = [];

beforeAll(async () => {
  stack = await startLocalStack({ configFile: FIXTURE_CONFIG, dispatchers: 0 });
  const upstream = new URL(stack.endpoints.sqs);
  // Forwards every SQS call to the emulator except StartMessageMoveTask, which gets `answer`.
  proxy = createServer((req, res) => {
    const target = String(req.headers['x-amz-target'] ?? '');
    seen.push(target);
    if (target.endsWith('.StartMessageMoveTask')) {
      res.writeHead(answer.status, { 'content-type': answer.type });
      res.end(answer.body);
      req.resume();
      return;
    }
    const out = request({ host: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers: req.headers }, (up) => {
      res.writeHead(up.statusCode ?? 500, up.headers);
      up.pipe(res);
    });
    req.pipe(out);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
}, 60_000);

afterAll(async () => {
  proxy.closeAllConnections();
  await new Promise((resolve) => proxy.close(resolve));
  await stack.stop();
});

async function redriveThroughProxy() {
  const sqs = new SQSClient({
    region: 'us-east-1',
    endpoint: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 1,
  });
  const ctx = await operatorContext({
    config: resolveConfig(stack.bundle.config),
    version: stack.version,
    sqs: { client: sqs },
    dynamo: { client: stack.dynamo },
  });
  try {
    return await redriveDeadLetters(ctx, 'bulk');
  } finally {
    sqs.destroy();
  }
}

const depth = async (url: string) => {
  const d = await new SqsQueueClient(stack.sqs).depth(url);
  return d.visible + d.inFlight + d.delayed;
};

describe('dlq redrive where the move task is not available', () => {
  it('an HTML 500 answer: the client moves the messages itself and says why', async () => {
    answer = { status: 500, type: 'text/html', body: '<html><body><h1>500 Internal Server Error</h1></body></html>' };
    for (let n = 0; n < 3; n++) {
      await stack.sqs.send(
        new SendMessageCommand({ QueueUrl: stack.urls.deadLetter.bulk, MessageBody: encodeEnvelope({ task: 'record', payload: { n } }) }),
      );
    }
    const [result] = await redriveThroughProxy();
    expect(result).toMatchObject({ queue: 'bulk', messages: 3, via: 'client', status: 'COMPLETED' });
    expect(result?.moveTaskError).toBeTruthy();
    expect(seen.some((t) => t.endsWith('.StartMessageMoveTask'))).toBe(true);
    expect(await depth(stack.urls.deadLetter.bulk as string)).toBe(0);
    expect(await depth(stack.urls.queues.bulk as string)).toBe(3);
  });

  it('a 403 refusal is reported, not worked around: the messages stay in the DLQ', async () => {
    answer = {
      status: 403,
      type: 'application/x-amz-json-1.0',
      body: JSON.stringify({ __type: 'com.amazon.coral.service#AccessDeniedException', message: 'not allowed' }),
    };
    const url = stack.urls.deadLetter.bulk as string;
    await stack.sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: encodeEnvelope({ task: 'record', payload: {} }) }));
    await expect(redriveThroughProxy()).rejects.toThrow(/not allowed|AccessDenied/);
    expect(await depth(url)).toBe(1);
  });
});
