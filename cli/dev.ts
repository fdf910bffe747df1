import { createWriteStream, mkdirSync, type WriteStream } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { TaskworkerConfig } from '../lib/config/app-config';
import { type LocalStack, type LocalStackOptions, startLocalStack } from '../lib/local/dev';
import { doorbellQueues } from '../lib/wake-up';
import { atLeast, batchLine, type ConsoleLevel, consoleLine, exitLine, failureLines, LOG_LEVELS, stateLine } from './dev-console';
import { watchSources } from './dev-watch';
import { announceLocalStack, clearDevState, findConfigFile, integerOption, readDevState, UsageError } from './shared';

export const DEV_USAGE = `taskworker dev [--config FILE] [--tasks DIR] [--version V] [--dispatchers N] [--watch]
               [--always-on] [--reset] [--sqs-port P] [--dynamodb-port P] [--join DIR] [--log-level LEVEL]
               [--log-format pretty|json] [--log-file FILE] [--quiet]
  Starts the SQS and DynamoDB emulators in this process, creates the version's queues, and runs
  the same handler Lambda runs, invoked as in AWS: by a schedule every minute (N dispatcher
  containers) and by each doorbell queue's trigger when a message arrives (up to 2 invocations at
  once, its MaximumConcurrency); an invocation that finds its function's containers busy gets a
  new one (up to dispatcher.maxConcurrency for the dispatcher), stopped again after a minute idle.
  An idle version runs nothing. --always-on keeps N dispatchers listening instead. A process that
  dies is replaced.
  Prints each batch, each failed attempt and the dispatchers' log lines at --log-level (ERROR)
  and above; every log line from INFO up goes as JSON to --log-file (.taskworker/dev.log).
  --watch rebuilds, provisions what a config change needs (queues, topic, subscriptions) and
  restarts the dispatchers when a task or the config changes. Jobs outlive a restart: the tables,
  queued messages and stored payloads are kept in .taskworker/emulators (written at a clean stop;
  after a dev that was killed it starts empty, saying so); --reset starts empty. --join DIR runs
  this app on the emulators of the taskworker dev running in DIR (another app: its events reach
  this app's subscribers, as on AWS); stopping this one leaves them running. Ctrl-C stops it.`;

const out = (line: string) => process.stdout.write(`${line}\n`);
const err = (line: string) => process.stderr.write(`${line}\n`);

export async function devCommand(argv: string[]): Promise<void> {
  const dev = devOptions(argv);
  mkdirSync(dirname(dev.logFile), { recursive: true });
  const log = createWriteStream(dev.logFile, { flags: 'a' });
  // Other commands (status) read how many dispatchers run from the state file: kept current.
  let ready: LocalStack | undefined;
  const announce = () => {
    if (ready) announceLocalStack(ready, dev.configFile, dev.logFile);
  };
  const stack: LocalStack = await startLocalStack(stackOptions(dev, log, announce));
  ready = stack;
  announce();
  if (stack.state && stateLine(stack.state).warning) err(stateLine(stack.state).line);
  const { config } = stack.bundle;
  const watcher = dev.values.watch
    ? await watchSources(stack, { tasksDir: resolve(dirname(dev.configFile), config.tasksDir), configFile: dev.configFile }, out, err)
    : undefined;
  out(startedLines(stack, config, dev));
  await untilStopped(stack, watcher, log);
}

/** `taskworker dev`'s options, checked (an unknown one, a bad port, level or format, `--join` with `--reset`). */
function devOptions(argv: string[]) {
  const { values } = parseArgs({
    args: argv,
    options: {
      config: { type: 'string' },
      tasks: { type: 'string' },
      version: { type: 'string', default: 'dev' },
      dispatchers: { type: 'string' },
      'sqs-port': { type: 'string' },
      'dynamodb-port': { type: 'string' },
      join: { type: 'string' },
      'log-level': { type: 'string', default: 'ERROR' },
      'log-format': { type: 'string', default: 'pretty' },
      'log-file': { type: 'string', default: '.taskworker/dev.log' },
      watch: { type: 'boolean', default: false },
      'always-on': { type: 'boolean', default: false },
      reset: { type: 'boolean', default: false },
      quiet: { type: 'boolean', default: false },
    },
    strict: true,
  });
  const configFile = findConfigFile(values.config);
  const sqsPort = values['sqs-port'] === undefined ? undefined : integerOption('--sqs-port', values['sqs-port'], 0, 0, 65535);
  const dynamodbPort =
    values['dynamodb-port'] === undefined ? undefined : integerOption('--dynamodb-port', values['dynamodb-port'], 0, 0, 65535);
  const join = values.join === undefined ? undefined : joinedEmulators(values.join, sqsPort ?? dynamodbPort);
  if (join && values.reset)
    throw new UsageError('--reset empties the state this dev keeps; with --join the joined dev keeps it: reset that one');
  const level = (values['log-level'] ?? 'ERROR').toUpperCase() as ConsoleLevel;
  if (!LOG_LEVELS.includes(level)) throw new UsageError(`--log-level ${values['log-level']}: expected one of ${LOG_LEVELS.join(', ')}`);
  const format = values['log-format'];
  if (format !== 'pretty' && format !== 'json') throw new UsageError(`--log-format ${format}: expected pretty or json`);
  const logFile = resolve(values['log-file'] ?? '.taskworker/dev.log');
  return { values, configFile, sqsPort, dynamodbPort, join, level, format, logFile };
}

type DevOptions = ReturnType<typeof devOptions>;

/** The stack `taskworker dev` starts: what it prints of each batch, log line and dispatcher, and what it writes to the log file. */
function stackOptions(dev: DevOptions, log: WriteStream, announce: () => void): LocalStackOptions {
  const { values, configFile, sqsPort, dynamodbPort, join, level, format } = dev;
  return {
    configFile,
    ...(values.tasks ? { tasksDir: values.tasks } : {}),
    version: values.version ?? 'dev',
    dispatchers: integerOption('--dispatchers', values.dispatchers, 1, 1, 64),
    invocations: values['always-on'] ? 'back-to-back' : 'on-demand',
    ...(sqsPort !== undefined ? { sqsPort } : {}),
    ...(dynamodbPort !== undefined ? { dynamodbPort } : {}),
    ...(join ? { join } : { stateDir: resolve(STATE_DIR), reset: values.reset === true }),
    // The file keeps INFO and up whatever the console shows.
    logLevel: LOG_LEVELS.indexOf(level) < LOG_LEVELS.indexOf('INFO') ? level : 'INFO',
    onOutput: (line, index) => {
      log.write(`${line}\n`);
      if (format === 'json') {
        if (atLeast(line, level)) err(line);
        return;
      }
      const shown = consoleLine(line, index, level);
      if (shown !== undefined) err(shown);
    },
    onBatch: (report, index) => {
      if (!values.quiet) out(batchLine(report, index));
      for (const line of failureLines(report, index)) err(line);
    },
    onDispatcherError: (message, index) =>
      err(index < 0 ? `[local AWS] ${message}` : `[dispatcher ${index}] invocation failed: ${message}`),
    onScheduleTick: (tick) => {
      if (!values.quiet) out(`[schedule] ${tick.schedule} fired for ${tick.scheduledTime}: job ${tick.jobId}`);
    },
    onInvocation: (summary, index) => {
      if (!summary.memoryStop) return;
      const { rssMb, limitMb } = summary.memoryStop;
      err(`[dispatcher ${index}] resident set ${rssMb} MB passed rssLimitMb ${limitMb}: it stopped cleanly`);
    },
    onDispatcherExit: (exit) => {
      err(exitLine(exit));
      announce();
    },
    onDispatcherStart: () => announce(),
    // A container started because the others were busy, stopped again after it idled: the count changed.
    onDispatcherRetired: () => announce(),
  };
}

/** What the started stack is: its app, containers, schedules, endpoints, queues and environment. */
function startedLines(stack: LocalStack, config: TaskworkerConfig, { values, logFile }: DevOptions): string {
  const doorbells = values['always-on'] ? 0 : doorbellQueues(config).length;
  const containers = `${stack.dispatchers.length - doorbells} dispatcher(s)${doorbells > 0 ? ` + ${doorbells} doorbell(s)` : ''}`;
  return [
    `taskworker dev: app ${config.app}, version ${stack.version}, ${containers}, ${stack.bundle.tasks.length} task(s): ${stack.bundle.tasks.map((t) => t.name).join(', ')}`,
    values['always-on']
      ? '  dispatchers always listening (--always-on)'
      : `  invoked as in AWS: the schedule every minute; doorbells on ${
          doorbellQueues(config)
            .map((q) => q.name)
            .join(', ') || 'no queue'
        }`,
    ...(config.schedules.length > 0
      ? [
          `  schedules: ${config.schedules
            .map((sc) => `${sc.name} (${sc.cron ?? `every ${sc.rate?.value} ${sc.rate?.unit}(s)`}${sc.cron ? ` ${sc.timezone}` : ''})`)
            .join(', ')} — \`taskworker schedules\` lists their next times`,
        ]
      : []),
    ...(stack.state && !stateLine(stack.state).warning ? [`  ${stateLine(stack.state).line}`] : []),
    `  SQS       ${stack.endpoints.sqs}`,
    `  DynamoDB  ${stack.endpoints.dynamodb}`,
    '  queues:',
    ...config.queues.map((q) => `    ${q.name.padEnd(16)} ${stack.urls.queues[q.name]}  (dlq ${stack.urls.deadLetter[q.name]})`),
    `    ${'archive'.padEnd(16)} ${stack.urls.archive}`,
    '  point any AWS SDK or CLI at it:',
    `    export ${Object.entries(stack.env)
      .map(([k, v]) => `${k}=${v}`)
      .join(' ')}`,
    `  log lines (JSON): ${relative(process.cwd(), logFile) || logFile}`,
    ...(values.watch ? ['  watching the tasks and the config for changes'] : []),
    '  Ctrl-C to stop.',
  ].join('\n');
}

/** Runs until Ctrl-C, SIGTERM or a closed terminal, then stops cleanly (a second Ctrl-C exits at once). */
function untilStopped(stack: LocalStack, watcher: { close(): Promise<void> } | undefined, log: WriteStream): Promise<void> {
  return new Promise<void>((done) => {
    let stopping = false;
    const stop = () => {
      if (stopping) process.exit(130);
      stopping = true;
      out('stopping: running tasks finish, unstarted ones are released...');
      void Promise.all([watcher?.close(), stack.stop()])
        .catch((error: unknown) => err(error instanceof Error ? error.message : String(error)))
        .then(() => {
          clearDevState();
          log.end(done);
        });
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
    // A closed terminal: still a clean stop, so the jobs are kept.
    process.on('SIGHUP', stop);
  });
}

/** Where a dev keeps its emulators' state between runs, beside its dev.json. */
const STATE_DIR = '.taskworker/emulators';

/** `--join DIR`: the emulators of the taskworker dev running in DIR (or above it). */
function joinedEmulators(dir: string, port: number | undefined): { sqsEndpoint: string; dynamodbEndpoint: string } {
  if (port !== undefined) throw new UsageError("--join uses the other dev's emulators: give it without --sqs-port and --dynamodb-port");
  const state = readDevState(dir);
  if (!state) throw new UsageError(`--join ${JSON.stringify(dir)}: no taskworker dev is running there (start one in that directory first)`);
  return { sqsEndpoint: state.sqsEndpoint, dynamodbEndpoint: state.dynamodbEndpoint };
}
