import { TaskworkerError } from '../lib/errors';
import { explainAwsError } from '../lib/operate/aws-errors';
import { VersionNotFoundError } from '../lib/operate/operator-context';
import { DEMO_USAGE, demoCommand } from './demo';
import { DEV_USAGE, devCommand } from './dev';
import { EMIT_USAGE, EVENTS_USAGE, emitCommand, eventsCommand } from './events-command';
import { INIT_USAGE, initCommand } from './init';
import { OPERATOR_USAGE, operatorCommand } from './operator';
import { PUBLISH_USAGE, publishCommand } from './publish';
import { QUEUES_USAGE, queuesCommand } from './queues-command';
import { SCHEDULES_USAGE, schedulesCommand } from './schedules-command';
import { UsageError } from './shared';
import { TOKENS_USAGE, tokensCommand } from './tokens-command';
import { UI_USAGE, uiCommand } from './ui-command';
import { WORKERS_USAGE, workersCommand } from './workers-command';

/** Each command's own usage, for `taskworker COMMAND --help`; in the order the full usage lists them. */
const COMMAND_USAGE: Readonly<Record<string, string>> = {
  init: INIT_USAGE,
  dev: DEV_USAGE,
  publish: PUBLISH_USAGE,
  emit: EMIT_USAGE,
  events: EVENTS_USAGE,
  demo: DEMO_USAGE,
  schedules: SCHEDULES_USAGE,
  status: OPERATOR_USAGE,
  jobs: OPERATOR_USAGE,
  stats: OPERATOR_USAGE,
  archive: OPERATOR_USAGE,
  dlq: OPERATOR_USAGE,
  keys: OPERATOR_USAGE,
  queues: QUEUES_USAGE,
  workers: WORKERS_USAGE,
  tokens: TOKENS_USAGE,
  ui: UI_USAGE,
};

const USAGE = ['usage:', ...new Set(Object.values(COMMAND_USAGE))].join('\n\n');

/** `--help` or `-h` among a command's options (not after a `--`, where it would be an argument). */
function asksForHelp(args: readonly string[]): boolean {
  const end = args.indexOf('--');
  return (end === -1 ? args : args.slice(0, end)).some((a) => a === '--help' || a === '-h');
}

/** Node's parseArgs refusals, by their code (not `instanceof`: under a test runner they come from another realm). */
const isParseArgsError = (error: unknown): error is Error & { code: string } =>
  typeof error === 'object' && error !== null && 'code' in error && String(error.code).startsWith('ERR_PARSE_ARGS') && 'message' in error;

/**
 * The package a "Cannot find module" error names (`@scope/name` or `name`), undefined for a file
 * path or another error. (bin/taskworker.js says the same when the command itself cannot load.)
 */
export function missingPackage(error: unknown): string | undefined {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  if (code !== 'MODULE_NOT_FOUND' && code !== 'ERR_MODULE_NOT_FOUND') return undefined;
  const named = /Cannot find (?:module|package) '([^']+)'/.exec(String(message))?.[1];
  if (!named || /^(\.|\/|node:)/.test(named)) return undefined;
  return named.startsWith('@') ? named.split('/').slice(0, 2).join('/') : named.split('/')[0];
}

/** Runs one CLI command; returns the process exit code. */
export async function main(argv: readonly string[]): Promise<number> {
  // Local tooling on Node 20 should not print the SDK's Node-support notice on every run.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  // Errors from the user's modules (a task that throws while loading) point at their source.
  process.setSourceMapsEnabled(true);
  const [command, ...rest] = argv;
  const usage = command === undefined ? undefined : COMMAND_USAGE[command];
  if (usage && asksForHelp(rest)) {
    process.stdout.write(`usage:\n\n${usage}\n`);
    return 0;
  }
  try {
    switch (command) {
      case 'init':
        await initCommand(rest);
        return 0;
      case 'dev':
        await devCommand(rest);
        return 0;
      case 'publish':
        await publishCommand(rest);
        return 0;
      case 'emit':
        return await emitCommand(rest);
      case 'events':
        return await eventsCommand(rest);
      case 'demo':
        return await demoCommand(rest);
      case 'schedules':
        await schedulesCommand(rest);
        return 0;
      case 'ui':
        await uiCommand(rest);
        return 0;
      case 'queues':
        return await queuesCommand(rest);
      case 'workers':
        return await workersCommand(rest);
      case 'tokens':
        return await tokensCommand(rest);
      case 'status':
      case 'jobs':
      case 'stats':
      case 'archive':
      case 'dlq':
      case 'keys':
        return await operatorCommand(command, rest);
      case undefined:
      case 'help':
      case '--help':
      case '-h':
        process.stdout.write(`${USAGE}\n`);
        return command === undefined ? 2 : 0;
      default:
        throw new UsageError(`unknown command ${JSON.stringify(command)}\n\n${USAGE}`);
    }
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`taskworker: ${error.message}\n`);
      return 2;
    }
    const explained = explainAwsError(error);
    if (explained) {
      process.stderr.write(`taskworker: ${explained}\n`);
      return 1;
    }
    if (error instanceof VersionNotFoundError) {
      process.stderr.write(`taskworker: ${error.message}\n`);
      return 1;
    }
    if (isParseArgsError(error)) {
      // Node's parseArgs words it for programmers ("To specify a positional argument…"): keep the first sentence.
      const first = error.message.split(/\.\s/)[0]?.replace(/\.$/, '') ?? error.message;
      process.stderr.write(`taskworker ${command}: ${first} (taskworker ${command} --help lists its options)\n`);
      return 2;
    }
    if (error instanceof TaskworkerError) {
      process.stderr.write(`taskworker: ${error.name}: ${error.message}\n`);
      return 2;
    }
    const absent = missingPackage(error);
    if (absent) {
      process.stderr.write(
        `taskworker ${command}: ${absent} is not installed, and this command needs it: npm install --save-dev ${absent}\n`,
      );
      return 1;
    }
    // Anything else is still one line; the stack only on request.
    const debug = process.env.TASKWORKER_DEBUG === '1';
    const text = error instanceof Error ? (debug ? (error.stack ?? error.message) : `${error.name}: ${error.message}`) : String(error);
    process.stderr.write(`taskworker: ${text}${debug ? '' : ' (TASKWORKER_DEBUG=1 prints the stack)'}\n`);
    return 1;
  }
}

if (require.main === module) {
  void main(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  });
}
