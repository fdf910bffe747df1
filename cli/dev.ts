import { parseArgs } from 'node:util';
import { startLocalStack } from '../lib/local/dev';
import type { BatchReport } from '../lib/summary';
import { announceLocalStack, clearDevState, findConfigFile, integerOption } from './shared';

export const DEV_USAGE = `taskworker dev [--config FILE] [--tasks DIR] [--version V] [--dispatchers N]
               [--sqs-port P] [--dynamodb-port P] [--log-level LEVEL] [--quiet]
  Starts the SQS and DynamoDB emulators in this process, creates the version's queues,
  and runs N dispatcher processes on the same handler Lambda runs. Ctrl-C stops it.`;

export async function devCommand(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      config: { type: 'string' },
      tasks: { type: 'string' },
      version: { type: 'string', default: 'dev' },
      dispatchers: { type: 'string' },
      'sqs-port': { type: 'string' },
      'dynamodb-port': { type: 'string' },
      'log-level': { type: 'string', default: 'WARN' },
      quiet: { type: 'boolean', default: false },
    },
    strict: true,
  });
  const configFile = findConfigFile(values.config);
  const sqsPort = values['sqs-port'] === undefined ? undefined : integerOption('--sqs-port', values['sqs-port'], 0, 0, 65535);
  const dynamodbPort =
    values['dynamodb-port'] === undefined ? undefined : integerOption('--dynamodb-port', values['dynamodb-port'], 0, 0, 65535);
  const logLevel = (values['log-level'] ?? 'WARN').toUpperCase() as 'DEBUG' | 'INFO' | 'WARN' | 'ERROR';
  let shuttingDown = false;
  const stack = await startLocalStack({
    configFile,
    ...(values.tasks ? { tasksDir: values.tasks } : {}),
    version: values.version ?? 'dev',
    dispatchers: integerOption('--dispatchers', values.dispatchers, 1, 1, 64),
    ...(sqsPort !== undefined ? { sqsPort } : {}),
    ...(dynamodbPort !== undefined ? { dynamodbPort } : {}),
    logLevel,
    ...(values.quiet ? {} : { onBatch: (report: BatchReport, index: number) => process.stdout.write(`${batchLine(report, index)}\n`) }),
    onDispatcherError: (message, index) => process.stderr.write(`[dispatcher ${index}] invocation failed: ${message}\n`),
    onInvocation: (summary, index) => {
      if (!summary.memoryStop || shuttingDown) return;
      const { rssMb, limitMb } = summary.memoryStop;
      process.stderr.write(
        `[dispatcher ${index}] resident set ${rssMb} MB passed rssLimitMb ${limitMb}: it stopped cleanly; starting a fresh one\n`,
      );
      stack.startDispatcher();
    },
  });
  announceLocalStack(stack, configFile);
  const { config } = stack.bundle;
  const out = [
    `taskworker dev: app ${config.app}, version ${stack.version}, ${stack.dispatchers.length} dispatcher(s), ${stack.bundle.tasks.length} task(s): ${stack.bundle.tasks.map((t) => t.name).join(', ')}`,
    `  SQS       ${stack.endpoints.sqs}`,
    `  DynamoDB  ${stack.endpoints.dynamodb}`,
    '  queues:',
    ...config.queues.map((q) => `    ${q.name.padEnd(16)} ${stack.urls.queues[q.name]}  (dlq ${stack.urls.deadLetter[q.name]})`),
    `    ${'archive'.padEnd(16)} ${stack.urls.archive}`,
    '  point any AWS SDK or CLI at it:',
    `    export ${Object.entries(stack.env)
      .map(([k, v]) => `${k}=${v}`)
      .join(' ')}`,
    '  Ctrl-C to stop.',
  ];
  process.stdout.write(`${out.join('\n')}\n`);

  await new Promise<void>((resolve) => {
    let stopping = false;
    const stop = () => {
      if (stopping) process.exit(130);
      stopping = true;
      shuttingDown = true;
      process.stdout.write('stopping: running tasks finish, unstarted ones are released...\n');
      void stack.stop().then(() => {
        clearDevState();
        resolve();
      });
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}

function batchLine(report: BatchReport, dispatcher: number): string {
  const counts = new Map<string, number>();
  for (const job of report.jobs) {
    const key = job.outcome === 'archived' ? `archived(${job.reason})` : job.outcome;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  const parts = [...counts].map(([k, n]) => `${n} ${k}`).join(', ');
  return `[dispatcher ${dispatcher}] ${report.queue}: ${report.jobs.length} received: ${parts}`;
}
