import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { resolveConfig } from '../lib/config/app-config';
import { MAX_SCHEDULE_SECONDS } from '../lib/policy/due-times';
import type { Published } from '../lib/publish/publish-options';
import { Publisher } from '../lib/publish/publisher';
import { buildTasksBundle, loadConfigModule } from '../lib/tasks/build';
import { loadTaskBundle } from '../lib/tasks/bundle';
import type { TaskDefinition } from '../lib/tasks/task';
import { JOB_ID_PATTERN, keyProblem, MAX_DEPENDENCIES, MAX_TAG_LENGTH, MAX_TAGS, TAG_PATTERN } from '../lib/wire/envelope';
import {
  dateOption,
  findConfigFile,
  integerOption,
  jsonOption,
  jsonOrFileOption,
  quoted,
  UsageError,
  useLocalEndpointsIfRunning,
} from './shared';

export const PUBLISH_USAGE = `taskworker publish TASK --payload JSON|@FILE [--queue Q] [--delay S | --at ISO-8601] [--app-data JSON]
                   [--expires-in S | --expires-at ISO-8601]
                   [--id ID] [--depends-on ID,ID] [--on-dependency-failure fail|ignore] [--tag T]... [--key K]
                   [--version V] [--config FILE] [--json]
  Publishes one task, now or later. --payload @FILE reads the payload's JSON from FILE; one over the config's
  payloads.offloadAboveBytes (200 KB) goes to the version's S3 bucket, the message carrying a pointer (up to 10 MiB). (--delay seconds up to a year, or --at a time). With --depends-on it
  waits until those jobs have ended (and is archived if one did not succeed, unless
  --on-dependency-failure ignore). --expires-in S (seconds from now) or --expires-at: no attempt starts after it
  (the job is archived expired instead). --tag (repeatable) labels it for \`taskworker jobs list --tag T\`. --key K
  says what the job is about; on a task with a unique rule, a live job of the same key is answered instead
  (deduplicated, nothing sent); on a debounced task, a pending job of the key is joined (debounced: it runs
  once, with the last payload; nothing sent). Talks to AWS_ENDPOINT_URL_SQS if set, else to a running \`taskworker dev\`
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
      'expires-in': { type: 'string' },
      'expires-at': { type: 'string' },
      'app-data': { type: 'string' },
      id: { type: 'string' },
      'depends-on': { type: 'string', multiple: true },
      'on-dependency-failure': { type: 'string' },
      tag: { type: 'string', multiple: true },
      key: { type: 'string' },
      version: { type: 'string' },
      config: { type: 'string' },
      json: { type: 'boolean', default: false },
    },
    strict: true,
  });
  const [task, ...extra] = positionals;
  if (!task || extra.length > 0) throw new UsageError(`expected exactly one TASK\n${PUBLISH_USAGE}`);
  if (values.delay !== undefined && values.at !== undefined) throw new UsageError('--delay and --at: give one of them');
  if (values['expires-in'] !== undefined && values['expires-at'] !== undefined)
    throw new UsageError('--expires-in and --expires-at: give one of them');
  // Checked now, counted from the publish (loading the config and tasks takes a moment).
  const expiresInSeconds =
    values['expires-in'] !== undefined ? integerOption('--expires-in', values['expires-in'], 0, 1, MAX_SCHEDULE_SECONDS) : undefined;
  const expiresAtOption = values['expires-at'] !== undefined ? dateOption('--expires-at', values['expires-at']) : undefined;
  const flow = flowOptions(values);
  const key = keyOption(values.key);
  const local = useLocalEndpointsIfRunning();
  const version = values.version ?? local?.version;
  if (!version) throw new UsageError('--version is required (no taskworker dev is running here)');
  const configFile = findConfigFile(values.config ?? local?.configFile);
  const config = resolveConfig(await loadConfigModule(configFile));
  // With a key, the task's module too: its unique or debounce rule is the publisher's to apply.
  const tasks = values.queue === undefined || key !== undefined ? await loadTaskDefinitions(configFile) : [];
  if (values.queue === undefined && !tasks.some((t) => t.name === task)) {
    throw new UsageError(`task ${task} is not defined in ${config.tasksDir} (pass --queue to publish it anyway)`);
  }
  // Recorded at once (queues tracked full) — `queued`, or `scheduled` with its due time when given --delay or --at (any
  // delay, as every publisher does): `jobs show` finds it, `jobs cancel` cancels a later one, and a job published next
  // may name it in --depends-on.
  const publisher = new Publisher({ config, version, tasks, recordQueued: true });
  const expiresAt = expiresInSeconds !== undefined ? new Date(Date.now() + expiresInSeconds * 1000) : expiresAtOption;
  const published = await publisher.publish(task, jsonOrFileOption('--payload', values.payload, null), {
    ...(values.queue !== undefined ? { queue: values.queue } : {}),
    ...(values.delay !== undefined ? { delaySeconds: integerOption('--delay', values.delay, 0, 0, MAX_SCHEDULE_SECONDS) } : {}),
    ...(values.at !== undefined ? { runAt: dateOption('--at', values.at) } : {}),
    ...(expiresAt !== undefined ? { expiresAt } : {}),
    ...(values['app-data'] !== undefined ? { appData: jsonOption('--app-data', values['app-data'], undefined) } : {}),
    ...(values.id !== undefined ? { id: values.id } : {}),
    ...(key !== undefined ? { key } : {}),
    ...flow,
  });
  if (values.json)
    process.stdout.write(
      `${JSON.stringify({ task, version, ...published, ...(expiresAt !== undefined ? { expiresAt: expiresAt.getTime() } : {}) })}\n`,
    );
  else if (published.deduplicated)
    process.stdout.write(
      `deduplicated: job ${published.jobId} of ${task} with key ${JSON.stringify(key)} is live on ${published.queue} (version ${version}); nothing was sent\n`,
    );
  else if (published.debounced) process.stdout.write(`${debouncedLine(task, key as string, version, published)}\n`);
  else
    process.stdout.write(
      `published ${task} to ${published.queue} (version ${version}): job ${published.jobId}, ` +
        `${published.inLine ? `waiting in key ${JSON.stringify(key)}'s line for its turn (sent when the job before it ends)` : `message ${published.messageId}`}` +
        `${published.runAt !== undefined ? `, due ${new Date(published.runAt).toISOString()}` : ''}` +
        `${expiresAt !== undefined ? `, expires ${expiresAt.toISOString()}` : ''}` +
        `${flow.dependsOn ? `, waiting for ${flow.dependsOn.length} job(s)` : ''}${flow.tags ? `, tagged ${flow.tags.join(', ')}` : ''}\n`,
    );
}

/** `--depends-on` (comma-separated, repeatable), `--on-dependency-failure` and `--tag` (repeatable), checked before anything is looked up. */
export function flowOptions(values: {
  readonly 'depends-on'?: readonly string[] | undefined;
  readonly 'on-dependency-failure'?: string | undefined;
  readonly tag?: readonly string[] | undefined;
}): { dependsOn?: string[]; onDependencyFailure?: 'fail' | 'ignore'; tags?: string[] } {
  const dependsOn = (values['depends-on'] ?? []).flatMap((list) => list.split(',')).map((id) => id.trim());
  for (const id of dependsOn) {
    if (!JOB_ID_PATTERN.test(id))
      throw new UsageError(`--depends-on ${quoted(id)}: expected job ids of 1..128 printable ASCII characters, comma-separated`);
  }
  if (dependsOn.length > MAX_DEPENDENCIES) {
    throw new UsageError(
      `--depends-on names ${dependsOn.length} jobs: at most ${MAX_DEPENDENCIES} (a larger fan-in is a chord, publisher.chord)`,
    );
  }
  const duplicate = dependsOn.find((id, i) => dependsOn.indexOf(id) !== i);
  if (duplicate !== undefined) throw new UsageError(`--depends-on names ${quoted(duplicate)} twice`);
  const policy = values['on-dependency-failure'];
  if (policy !== undefined && policy !== 'fail' && policy !== 'ignore') {
    throw new UsageError(`--on-dependency-failure ${quoted(policy)}: expected fail or ignore`);
  }
  if (policy !== undefined && dependsOn.length === 0) throw new UsageError('--on-dependency-failure: only with --depends-on');
  const tags = values.tag ?? [];
  for (const tag of tags) {
    if (!TAG_PATTERN.test(tag))
      throw new UsageError(`--tag ${quoted(tag)}: expected 1..${MAX_TAG_LENGTH} printable ASCII characters, no spaces`);
  }
  if (tags.length > MAX_TAGS)
    throw new UsageError(`--tag given ${tags.length} times (${tags.map(quoted).join(', ')}): at most ${MAX_TAGS} tags a job`);
  return {
    ...(dependsOn.length > 0 ? { dependsOn } : {}),
    ...(policy !== undefined ? { onDependencyFailure: policy } : {}),
    ...(tags.length > 0 ? { tags: [...new Set(tags)] } : {}),
  };
}

/** What `publish` prints for a publish that joined its key's pending job (a debounced task). */
export function debouncedLine(task: string, key: string, version: string, published: Pick<Published, 'jobId' | 'queue' | 'runAt'>): string {
  const due = published.runAt !== undefined ? `, due ${new Date(published.runAt).toISOString()}` : '';
  return `debounced: job ${published.jobId} of ${task} with key ${JSON.stringify(key)} is pending on ${published.queue} (version ${version}) and runs with this payload unless a later publish joins${due}; nothing was sent`;
}

/** `--key`, checked before anything is looked up. */
export function keyOption(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const problem = keyProblem(value);
  if (problem) throw new UsageError(`--key ${problem}`);
  return value;
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
