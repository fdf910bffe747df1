import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { TaskworkerError } from '../lib/errors';
import type { LocalStack } from '../lib/local/dev';

/** A command-line mistake: printed without a stack, exit code 2. */
export class UsageError extends TaskworkerError {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

const CONFIG_CANDIDATES = ['taskworker.config.ts', 'taskworker.config.js', 'taskworker.config.mjs', 'taskworker.config.json'];

/** The config file: `--config`, else `taskworker.config.{ts,js,mjs,json}` in the working directory. */
export function findConfigFile(explicit: string | undefined): string {
  if (explicit) {
    const file = resolve(explicit);
    if (!existsSync(file)) throw new UsageError(`--config ${explicit}: no such file`);
    return file;
  }
  for (const name of CONFIG_CANDIDATES) {
    const file = resolve(name);
    if (existsSync(file)) return file;
  }
  throw new UsageError(`no config file: pass --config FILE or create one of ${CONFIG_CANDIDATES.join(', ')} here`);
}

/** What a running `taskworker dev` leaves for other commands in the same directory. */
export interface DevState {
  readonly pid: number;
  readonly version: string;
  readonly region: string;
  readonly configFile: string;
  readonly sqsEndpoint: string;
  readonly dynamodbEndpoint: string;
}

const STATE_FILE = join('.taskworker', 'dev.json');

/** Records a running local stack for the other commands in this directory. */
export function announceLocalStack(stack: LocalStack, configFile: string): void {
  writeDevState({
    pid: process.pid,
    version: stack.version,
    region: stack.region,
    configFile,
    sqsEndpoint: stack.endpoints.sqs,
    dynamodbEndpoint: stack.endpoints.dynamodb,
  });
}

export function writeDevState(state: DevState): void {
  mkdirSync('.taskworker', { recursive: true });
  writeFileSync(STATE_FILE, `${JSON.stringify(state, null, 2)}\n`);
}

export function clearDevState(): void {
  rmSync(STATE_FILE, { force: true });
}

/** The running `taskworker dev` of this directory, if its process is still alive. */
export function readDevState(): DevState | undefined {
  if (!existsSync(STATE_FILE)) return undefined;
  try {
    const state = JSON.parse(readFileSync(STATE_FILE, 'utf8')) as DevState;
    process.kill(state.pid, 0);
    return state;
  } catch {
    return undefined;
  }
}

/**
 * Points the AWS SDK at the local emulators when no endpoint is set and `taskworker dev` runs
 * here. Explicit environment always wins. Returns the dev state it used, if any.
 */
export function useLocalEndpointsIfRunning(): DevState | undefined {
  if (process.env.AWS_ENDPOINT_URL_SQS || process.env.AWS_ENDPOINT_URL) return undefined;
  const state = readDevState();
  if (!state) return undefined;
  process.env.AWS_ENDPOINT_URL_SQS = state.sqsEndpoint;
  process.env.AWS_ENDPOINT_URL_DYNAMODB = state.dynamodbEndpoint;
  process.env.AWS_REGION ??= state.region;
  process.env.AWS_ACCESS_KEY_ID ??= 'local';
  process.env.AWS_SECRET_ACCESS_KEY ??= 'local';
  process.stderr.write(`using the emulators of taskworker dev (pid ${state.pid}, version ${state.version})\n`);
  return state;
}

/** Parses a JSON option, naming the option on error. */
export function jsonOption(name: string, text: string | undefined, fallback: unknown): unknown {
  if (text === undefined) return fallback;
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new UsageError(`${name} is not valid JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** Parses a whole-number option within bounds, naming the option on error. */
export function integerOption(name: string, text: string | undefined, fallback: number, min: number, max: number): number {
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < min || value > max) throw new UsageError(`${name} ${text}: expected an integer ${min}..${max}`);
  return value;
}

/** Renders rows as an aligned text table; numbers are right-aligned. */
export function table(header: readonly string[], rows: ReadonlyArray<readonly (string | number)[]>): string {
  const cells = [header, ...rows.map((r) => r.map(String))];
  const widths = header.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  const line = (r: readonly (string | number)[]) =>
    r
      .map((c, i) => (typeof c === 'number' ? String(c).padStart(widths[i] ?? 0) : String(c).padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(header), widths.map((w) => '─'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

/** Milliseconds as a short human duration. */
export function formatMs(ms: number): string {
  if (!Number.isFinite(ms)) return '–';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${(ms / 60_000).toFixed(1)} min`;
}
