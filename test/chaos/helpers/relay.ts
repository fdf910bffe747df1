import { Agent, createServer, type IncomingMessage, request, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * What a dispatcher is doing when it makes a call, read off the call itself (its `X-Amz-Target`
 * and body): the points a crash can hit.
 */
export type Phase =
  | 'receive'
  | 'claim'
  | 'task'
  | 'heartbeat'
  | 'settle-archive'
  | 'settle-record'
  | 'settle-delete'
  | 'settle-visibility'
  | 'settle-stats'
  | 'other';

/** One call through the relay: its phase, operation and JSON body. */
export interface Exchange {
  readonly phase: Phase;
  /** `AmazonSQS.ReceiveMessage`, `DynamoDB_20120810.UpdateItem`, … */
  readonly target: string;
  readonly body: Record<string, unknown>;
}

export interface RelayHooks {
  readonly classify: (target: string, body: Record<string, unknown>) => Phase;
  /** Before the call reaches the service: true kills the dispatcher instead (the call never lands). */
  readonly before: (exchange: Exchange) => boolean;
  /** The service has answered (and applied the call, if it succeeded): called for every call that reached it. */
  readonly landed: (exchange: Exchange, status: number, answer: Record<string, unknown>) => void;
  /** After {@link landed}: true kills the dispatcher before it hears the answer. */
  readonly after: (exchange: Exchange, status: number, answer: Record<string, unknown>) => boolean;
  /** Kills the dispatcher and resolves once it has exited. */
  readonly kill: () => Promise<void>;
}

/**
 * A loopback HTTP relay between one dispatcher process and one emulator. It forwards every call
 * untouched, and lets the crash schedule kill the process at an exact point: before a call reaches
 * the service, or after the service applied it but before the process hears the answer.
 */
export class Relay {
  private readonly agent = new Agent({ keepAlive: true });
  private dead = false;

  private constructor(
    private readonly server: Server,
    private readonly upstream: URL,
    private readonly hooks: RelayHooks,
    readonly url: string,
  ) {}

  static async start(upstream: string, hooks: RelayHooks): Promise<Relay> {
    let relay: Relay | undefined;
    const server = createServer((req, res) => void relay?.handle(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    relay = new Relay(server, new URL(upstream), hooks, `http://127.0.0.1:${port}`);
    return relay;
  }

  /** Stops listening; calls already forwarded finish. */
  async close(): Promise<void> {
    this.dead = true;
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.agent.destroy();
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks);
    const target = String(req.headers['x-amz-target'] ?? '');
    let body: Record<string, unknown> = {};
    try {
      body = JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
    } catch {
      // not JSON: forwarded as it is
    }
    const exchange: Exchange = { phase: this.hooks.classify(target, body), target, body };
    if (this.dead || this.hooks.before(exchange)) return this.die(res);
    let answer: { status: number; headers: IncomingMessage['headers']; body: Buffer };
    try {
      answer = await this.forward(req, raw);
    } catch {
      res.destroy();
      return;
    }
    let parsed: Record<string, unknown> = {};
    try {
      parsed = JSON.parse(answer.body.toString('utf8')) as Record<string, unknown>;
    } catch {
      // an empty or non-JSON answer
    }
    this.hooks.landed(exchange, answer.status, parsed);
    if (this.dead || this.hooks.after(exchange, answer.status, parsed)) return this.die(res);
    if (res.destroyed) return;
    res.writeHead(answer.status, answer.headers);
    res.end(answer.body);
  }

  private async die(res: ServerResponse): Promise<void> {
    if (!this.dead) {
      this.dead = true;
      await this.hooks.kill();
    }
    res.destroy();
  }

  private forward(req: IncomingMessage, body: Buffer): Promise<{ status: number; headers: IncomingMessage['headers']; body: Buffer }> {
    return new Promise((resolve, reject) => {
      const out = request(
        {
          host: this.upstream.hostname,
          port: this.upstream.port,
          method: req.method,
          path: req.url,
          headers: { ...req.headers, host: this.upstream.host },
          agent: this.agent,
        },
        async (answer) => {
          const chunks: Buffer[] = [];
          for await (const chunk of answer) chunks.push(chunk as Buffer);
          resolve({ status: answer.statusCode ?? 500, headers: answer.headers, body: Buffer.concat(chunks) });
        },
      );
      out.on('error', reject);
      out.end(body);
    });
  }
}

/** The state an `UpdateItem` body assigns (`SET #state = :v`), if any. */
export function assignedState(body: Record<string, unknown>): string | undefined {
  const names = (body.ExpressionAttributeNames ?? {}) as Record<string, string>;
  const values = (body.ExpressionAttributeValues ?? {}) as Record<string, { S?: string }>;
  const placeholder = Object.entries(names).find(([, name]) => name === 'state')?.[0];
  if (!placeholder) return undefined;
  const set = /\bSET\s+(.+?)(?:\s+(?:ADD|REMOVE|DELETE)\s|$)/.exec(String(body.UpdateExpression ?? ''))?.[1] ?? '';
  const value = new RegExp(`${placeholder}\\s*=\\s*(:\\w+)`).exec(set)?.[1];
  return value ? values[value]?.S : undefined;
}

/** Whether an `UpdateItem` body takes an archive fence (`SET #archiveHolder = :h`, lib/policy/archive-fences.ts). */
export function takesArchiveFence(body: Record<string, unknown>): boolean {
  const names = (body.ExpressionAttributeNames ?? {}) as Record<string, string>;
  const placeholder = Object.entries(names).find(([, name]) => name === 'archiveHolder')?.[0];
  if (!placeholder) return false;
  const set = /\bSET\s+(.+?)(?:\s+(?:ADD|REMOVE|DELETE)\s|$)/.exec(String(body.UpdateExpression ?? ''))?.[1] ?? '';
  return new RegExp(`${placeholder}\\s*=`).test(set);
}
