import { parseArgs } from 'node:util';
import { cachedFor, packagedAssetsDir, serveUi } from '../dashboard/server/serve';
import { cloudWatchOldestAge, cloudWatchRecentInvocations, cloudWatchThroughput } from '../lib/aws/cloudwatch-clients';
import { versionJobLogs } from '../lib/aws/job-log-readers';
import { sqsQueues } from '../lib/aws/wiring';
import { deployedVersions, operatorContext } from '../lib/operate/operator-context';
import type { TaskDefinition } from '../lib/tasks/task';
import { operatorTarget } from './operator';
import { loadTaskDefinitions } from './publish';
import { devStateByEndpoint, integerOption, UsageError } from './shared';

export const UI_USAGE = `taskworker ui [--port P] [--version V] [--read-only] [--host H] [--config FILE]
  A web dashboard for one release version (pick another in the page): queues, charts, jobs,
  the archive, and guarded actions (replay, redrive, cancel, publish). Talks to a running
  \`taskworker dev\` like the other commands, or to AWS with your usual credentials. Listens on
  127.0.0.1 (port 8470 by default); --host another address asks for a token on every request.`;

export async function uiCommand(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      version: { type: 'string' },
      config: { type: 'string' },
      'read-only': { type: 'boolean', default: false },
    },
    strict: true,
  });
  if (positionals.length > 0) throw new UsageError(`unexpected ${JSON.stringify(positionals[0])}\n${UI_USAGE}`);
  const { local, version, configFile, config } = await operatorTarget(values);
  const cloudWatchAge = cloudWatchOldestAge();
  const oldestAge = cloudWatchAge && cachedFor(60_000, cloudWatchAge);
  const cloudWatchRecent = local ? undefined : cloudWatchRecentInvocations();
  const recent = cloudWatchRecent && cachedFor(60_000, cloudWatchRecent);
  const sqs = sqsQueues();
  let tasks: Promise<readonly TaskDefinition[]> | undefined;
  // Throughput from CloudWatch on AWS (cached a minute: its datapoints are per minute); locally the stats table's minute counters.
  const cloudWatchJobs = local ? undefined : cloudWatchThroughput();
  const metricsThroughput = cloudWatchJobs && cachedFor(60_000, cloudWatchJobs);
  const contextFor = (v: string) => {
    const jobLogs = versionJobLogs(local, config, v);
    return operatorContext({
      config,
      version: v,
      ...(oldestAge ? { oldestAge } : {}),
      ...(metricsThroughput ? { metricsThroughput } : {}),
      ...(jobLogs ? { jobLogs } : {}),
    });
  };
  // The version shown first must exist: a missing region, credentials or version is one line now, not a page of errors.
  const first = contextFor(version);
  await first;
  const port = integerOption('--port', values.port, 8470, 0, 65535);
  const ui = await serveUi({
    app: config.app,
    defaultVersion: version,
    versions: async () => (local ? [local.version] : deployedVersions(sqs, config.app)),
    contextFor: (v) => (v === version ? first : contextFor(v)),
    tasks: () => {
      tasks ??= loadTaskDefinitions(configFile).catch((error: unknown) => {
        tasks = undefined;
        throw error;
      });
      return tasks;
    },
    readOnly: values['read-only'] ?? false,
    ...(local
      ? {
          dispatchers: () => {
            const now = devStateByEndpoint(local.sqsEndpoint) ?? local;
            return { pid: now.pid, alive: now.dispatchersAlive ?? 0, died: now.dispatchersDied ?? 0 };
          },
        }
      : {}),
    // The stack's default function name; a construct given another name shows none.
    ...(recent ? { invocations: (v: string) => recent(`${config.app}-${v}-dispatcher`, 60) } : {}),
    assetsDir: packagedAssetsDir(),
    port,
    ...(values.host ? { host: values.host } : {}),
    log: (line) => process.stderr.write(`${new Date().toISOString()} ui: ${line}\n`),
  }).catch((error: unknown) => {
    if ((error as { code?: string }).code === 'EADDRINUSE')
      throw new UsageError(`--port ${port}: already in use; choose another (0 picks a free one)`);
    throw error;
  });
  process.stdout.write(
    `taskworker ui: ${ui.url} (version ${version}${values['read-only'] ? ', read-only' : ''}${local ? `, taskworker dev pid ${local.pid}` : ', AWS'}); Ctrl-C to stop\n`,
  );
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await ui.close();
}
