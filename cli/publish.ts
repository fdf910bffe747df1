import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { resolveConfig } from '../lib/config';
import { Publisher } from '../lib/publish/publisher';
import { buildTasksBundle, loadConfigModule } from '../lib/tasks/build';
import { loadTaskBundle } from '../lib/tasks/bundle';
import type { TaskDefinition } from '../lib/tasks/task';
import { MAX_SCHEDULE_SECONDS } from '../lib/track/due';
import { dateOption, findConfigFile, integerOption, jsonOption, UsageError, useLocalEndpointsIfRunning } from './shared';

export const PUBLISH_USAGE = `taskworker publish TASK --payload JSON [--queue Q] [--delay S | --at ISO-8601] [--app-data JSON]
                   [--id ID] [--version V] [--config FILE] [--json]
  Publishes one task, now or later (--delay seconds up to a year, or --at a time). Talks to AWS_ENDPOINT_URL_SQS if set, else to a running \`taskworker dev\`
  in this directory, else to AWS. Without --queue, the task's own queue (read from its module).`;

export async function publishCommand(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      payload: { type: 'string' },
      queue: { type: 'string' },
      delay: { type: 'string' },
      at: { type: 'string' },
      'app-data': { type: 'string' },
      id: { type: 'string' },
      version: { type: 'string' },
      config: { type: 'string' },
      json: { type: 'boolean', default: false },
    },
    strict: true,
  });
  const [task, ...extra] = positionals;
  if (!task || extra.length > 0) throw new UsageError(`expected exactly one TASK\n${PUBLISH_USAGE}`);
  if (values.delay !== undefined && values.at !== undefined) throw new UsageError('--delay and --at: give one of them');
  const local = useLocalEndpointsIfRunning();
  const version = values.version ?? local?.version;
  if (!version) throw new UsageError('--version is required (no taskworker dev is running here)');
  const configFile = findConfigFile(values.config ?? local?.configFile);
  const config = resolveConfig(await loadConfigModule(configFile));
  const tasks = values.queue === undefined ? await loadTaskDefinitions(configFile) : [];
  if (values.queue === undefined && !tasks.some((t) => t.name === task)) {
    throw new UsageError(`task ${task} is not defined in ${config.tasksDir} (pass --queue to publish it anyway)`);
  }
  const publisher = new Publisher({ config, version, tasks });
  const published = await publisher.publish(task, jsonOption('--payload', values.payload, null), {
    ...(values.queue !== undefined ? { queue: values.queue } : {}),
    ...(values.delay !== undefined ? { delaySeconds: integerOption('--delay', values.delay, 0, 0, MAX_SCHEDULE_SECONDS) } : {}),
    ...(values.at !== undefined ? { runAt: dateOption('--at', values.at) } : {}),
    ...(values['app-data'] !== undefined ? { appData: jsonOption('--app-data', values['app-data'], undefined) } : {}),
    ...(values.id !== undefined ? { id: values.id } : {}),
  });
  if (values.json) process.stdout.write(`${JSON.stringify({ task, version, ...published })}\n`);
  else
    process.stdout.write(
      `published ${task} to ${published.queue} (version ${version}): job ${published.jobId}, message ${published.messageId}` +
        `${published.runAt !== undefined ? `, due ${new Date(published.runAt).toISOString()}` : ''}\n`,
    );
}

/** Builds the tasks bundle in a scratch directory to read the task definitions (queues, limits). */
export async function loadTaskDefinitions(configFile: string): Promise<readonly TaskDefinition[]> {
  const dir = await mkdtemp(join(tmpdir(), 'taskworker-tasks-'));
  try {
    const { tasksFile } = await buildTasksBundle({ configFile, outFile: join(dir, 'tasks.cjs') });
    return loadTaskBundle(tasksFile).tasks;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
