import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { type DevState, devStateByEndpoint, readDevState, writeDevState } from '../lib/aws/dev-file';
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

export { clearDevState, type DevState, devStateByEndpoint, readDevState } from '../lib/aws/dev-file';

/** Records a running local stack for the other commands in this directory (and below it). */
export function announceLocalStack(stack: LocalStack, configFile: string, logFile?: string): void {
  writeDevState({
    ...(logFile ? { logFile } : {}),
    pid: process.pid,
    version: stack.version,
    region: stack.region,
    configFile,
    sqsEndpoint: stack.endpoints.sqs,
    dynamodbEndpoint: stack.endpoints.dynamodb,
    dispatchersAlive: stack.alive(),
    dispatchersDied: stack.deaths(),
  });
}

/**
 * The running `taskworker dev` this command talks to: the one `AWS_ENDPOINT_URL_SQS` points at (the
 * export line dev prints sets it), else, when no endpoint is set, the one started in this directory
 * or a directory above. With no endpoint set, points the AWS SDK at its emulators. An endpoint that
 * is set and is not a dev's is left alone (another emulator, or AWS): undefined.
 */
export function useLocalEndpointsIfRunning(): DevState | undefined {
  const endpoint = process.env.AWS_ENDPOINT_URL_SQS ?? process.env.AWS_ENDPOINT_URL;
  const state = endpoint ? devStateByEndpoint(endpoint) : readDevState();
  if (!state) return undefined;
  process.env.AWS_ENDPOINT_URL_SQS ??= state.sqsEndpoint;
  // fauxqs serves SNS on the same endpoint (taskworker emit).
  process.env.AWS_ENDPOINT_URL_SNS ??= state.sqsEndpoint;
  // And S3: the version's payload bucket, where a payload too large for a message goes.
  process.env.AWS_ENDPOINT_URL_S3 ??= state.sqsEndpoint;
  process.env.AWS_ENDPOINT_URL_DYNAMODB ??= state.dynamodbEndpoint;
  process.env.AWS_REGION ??= state.region;
  process.env.AWS_ACCESS_KEY_ID ??= 'local';
  process.env.AWS_SECRET_ACCESS_KEY ??= 'local';
  process.stderr.write(`using the emulators of taskworker dev (pid ${state.pid}, version ${state.version})\n`);
  return state;
}

/** A value as a refusal names it: quoted, and cut short (with its length) when long. */
export function quoted(value: string): string {
  return value.length > 60 ? `${JSON.stringify(value.slice(0, 60))}… (${value.length} characters)` : JSON.stringify(value);
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

/**
 * A JSON option that may name a file instead (`@FILE`, read against the working directory): large
 * payloads do not fit a command line. Names the option and the file on error.
 */
export function jsonOrFileOption(name: string, text: string | undefined, fallback: unknown): unknown {
  if (text === undefined || !text.startsWith('@')) return jsonOption(name, text, fallback);
  const file = text.slice(1);
  if (file.length === 0) throw new UsageError(`${name} @: expected a file name after @`);
  let contents: string;
  try {
    contents = readFileSync(resolve(process.cwd(), file), 'utf8');
  } catch (error) {
    throw new UsageError(`${name} ${text}: cannot read ${quoted(file)} (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
  }
  try {
    return JSON.parse(contents);
  } catch (error) {
    throw new UsageError(`${name} ${text}: ${quoted(file)} is not valid JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** Parses a whole-number option within bounds, naming the option on error. */
export function integerOption(name: string, text: string | undefined, fallback: number, min: number, max: number): number {
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < min || value > max) throw new UsageError(`${name} ${text}: expected an integer ${min}..${max}`);
  return value;
}

/** An ISO-8601 time with its zone (`2027-01-01T09:00:00Z`, `…+01:00`): a local time without one would mean different instants on different machines. */
export function dateOption(name: string, text: string): Date {
  const date = new Date(text);
  if (!/(Z|[+-]\d\d:?\d\d)$/i.test(text.trim()) || Number.isNaN(date.getTime())) {
    throw new UsageError(`${name} ${text}: expected an ISO-8601 time with a zone, e.g. 2027-01-01T09:00:00Z`);
  }
  return date;
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
