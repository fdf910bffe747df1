import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { serve } from '@hono/node-server';
import { fileJobLogs } from '../../lib/adapters/file-job-logs';
import type { LocalStack } from '../../lib/local/dev';
import { operatorContext } from '../../lib/operate/operator-context';
import { createUiApp } from './server';
import type { UiOptions } from './ui-options';

export interface ServeUiOptions extends Omit<UiOptions, 'token' | 'tokenForReads' | 'acceptsHost'> {
  /** 0 for a free port. */
  readonly port: number;
  /** 127.0.0.1 unless said otherwise; anything else asks for the token on every request. */
  readonly host?: string;
}

export interface RunningUi {
  /** The address to open (with the token, when bound beyond loopback). */
  readonly url: string;
  readonly port: number;
  readonly token: string;
  close(): Promise<void>;
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1']);
/** Host header names of a loopback-bound server. */
const LOOPBACK_HOSTS = ['127.0.0.1', 'localhost', '[::1]'];

/** Where the prebuilt page sits beside the bundled CLI (dist/cli.js → dist/ui/). */
export function packagedAssetsDir(): string {
  return join(__dirname, 'ui');
}

/** Starts the dashboard's server; resolves once it listens. */
export async function serveUi(options: ServeUiOptions): Promise<RunningUi> {
  const host = options.host ?? '127.0.0.1';
  const loopback = LOOPBACK.has(host);
  const token = randomBytes(24).toString('base64url');
  let port = options.port;
  const app = createUiApp({
    ...options,
    token,
    tokenForReads: !loopback,
    // A page on another site that rebinds its own name to 127.0.0.1 sends its own Host: refused.
    ...(loopback ? { acceptsHost: (value: string) => LOOPBACK_HOSTS.some((name) => value === `${name}:${port}`) } : {}),
  });
  const server = await new Promise<ReturnType<typeof serve>>((resolve, reject) => {
    const started = serve({ fetch: app.fetch, port: options.port, hostname: host }, () => resolve(started));
    started.once('error', reject);
  });
  port = (server.address() as AddressInfo).port;
  const shown = host.includes(':') ? `[${host}]` : host;
  return {
    url: loopback ? `http://${shown}:${port}/` : `http://${shown}:${port}/?token=${token}`,
    port,
    token,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The dashboard's view of a local stack running in this process (the demo, the browser tests). */
export async function localStackUi(
  stack: LocalStack,
  /** The file the stack's output lines are written to (as `taskworker dev`'s log): the job pages read their lines there. */
  options: { readonly logFile?: string } = {},
): Promise<Omit<UiOptions, 'token' | 'tokenForReads' | 'acceptsHost' | 'readOnly' | 'log'>> {
  const config = stack.bundle.config;
  const ctx = await operatorContext({
    config,
    version: stack.version,
    sqs: { client: stack.sqs },
    dynamo: { client: stack.dynamo },
    ...(options.logFile ? { jobLogs: fileJobLogs(options.logFile) } : {}),
  });
  return {
    app: config.app,
    defaultVersion: stack.version,
    versions: async () => [stack.version],
    contextFor: async () => ctx,
    tasks: async () => stack.bundle.tasks,
    dispatchers: () => ({ pid: process.pid, alive: stack.alive(), died: stack.deaths() }),
  };
}

/**
 * Calls `fn` at most once per `ms` for the same arguments (a failure is not kept). CloudWatch
 * answers at one-minute resolution and bills per metric asked: an overview refreshing every 3 s
 * asks it once a minute.
 */
export function cachedFor<A extends readonly unknown[], R>(
  ms: number,
  fn: (...args: A) => Promise<R>,
  now: () => number = Date.now,
): (...args: A) => Promise<R> {
  const kept = new Map<string, { at: number; value: Promise<R> }>();
  return (...args) => {
    const key = JSON.stringify(args);
    const hit = kept.get(key);
    if (hit && now() - hit.at < ms) return hit.value;
    const value = fn(...args);
    kept.set(key, { at: now(), value });
    value.catch(() => kept.delete(key));
    return value;
  };
}
