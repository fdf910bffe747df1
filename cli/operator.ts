import { parseArgs } from 'node:util';
import { cloudWatchOldestAge, cloudWatchThroughput } from '../lib/aws/cloudwatch-clients';
import { versionJobLogs } from '../lib/aws/job-log-readers';
import { systemClock } from '../lib/clock';
import { resolveConfig } from '../lib/config/app-config';
import { ResultUnavailableError } from '../lib/errors';
import { type ArchiveFilter, listArchived, replayArchived, shownArchived } from '../lib/operate/archive';
import { redriveDeadLetters } from '../lib/operate/dead-letters';
import { cancelFlow, cancelJob, flowDepsOf, flowOf, jobRelations, listTaggedPage, tagProblem } from '../lib/operate/flow-commands';
import { type JobLogs, jobLogs } from '../lib/operate/job-logs';
import { busiestKeys, keyView, keyViewProblem } from '../lib/operate/keys';
import { type OperatorContext, operatorContext } from '../lib/operate/operator-context';
import { jobShowAnswer, lookUpJob } from '../lib/operate/rejections';
import { throughput, versionStatus } from '../lib/operate/version-status';
import { taskStatsKey, utcDay } from '../lib/policy/stat-sums';
import { waitForResult } from '../lib/publish/results';
import { loadConfigModule } from '../lib/tasks/build';
import { JOB_STATES, type JobState } from '../lib/track/job-record';
import { ARCHIVE_REASONS, type ArchiveReason } from '../lib/wire/archive-reasons';
import { bulkCommand } from './bulk-command';
import {
  progressBar,
  renderArchive,
  renderCancel,
  renderFlow,
  renderFlowCancel,
  renderJobList,
  renderJobLogLine,
  renderJobLogs,
  renderJobLogsHeader,
  renderKeys,
  renderKeyView,
  renderLookup,
  renderResult,
  renderStats,
  renderStatus,
  renderThroughput,
} from './render';
import { type DevState, findConfigFile, integerOption, quoted, UsageError, useLocalEndpointsIfRunning } from './shared';

export const OPERATOR_USAGE = `taskworker status [--version V] [--json]
taskworker jobs show ID [--json]
taskworker jobs list --state S [--queue Q] [--task T] [--key K] [--limit N] [--json]
taskworker jobs list --tag T [--limit N] [--cursor C] [--json]
taskworker jobs flow ID [--json]
taskworker jobs cancel ID [--flow] [--json]
taskworker jobs wait ID [--timeout S] [--json]
taskworker jobs logs ID [--follow] [--json]
taskworker jobs bulk cancel|replay|delete [filters] [--dry-run] [--rate N] [--limit N] [--json]
  filters: --task T --queue Q --since TIME --until TIME; cancel: --state S --tag T --key K;
  replay, delete: --reason R (TIME: 90m, 2h, 7d ago, or ISO-8601 with a zone)
taskworker jobs bulk log [--day YYYY-MM-DD] [--json]
taskworker stats [--queue Q | --task T] [--day YYYY-MM-DD] [--json]
taskworker stats --minutes N [--queue Q] [--json]
taskworker archive list [--reason R] [--task T] [--limit N] [--json]
taskworker archive replay [--reason R] [--task T] [--limit N] [--json]
taskworker dlq redrive [--queue Q] [--json]
taskworker keys [--task T] [--limit N] [--json]
  The busiest keys of tasks limited per key: running (of the limit) and waiting in their line.
taskworker keys show --task T --key K [--json]
  One key: its limit (running of it, waiting), its order (an ordered task's turn, last number,
  pending jobs) and the jobs waiting in its line, in the order they will run.
  Operator commands for one release version (--version, or the running taskworker dev's).
  They talk to AWS with your usual credentials, or to the emulators of a running
  \`taskworker dev\` in this directory (or AWS_ENDPOINT_URL_SQS/_DYNAMODB). All take --config FILE.`;

const common = {
  version: { type: 'string' },
  config: { type: 'string' },
  json: { type: 'boolean', default: false },
  queue: { type: 'string' },
  task: { type: 'string' },
  limit: { type: 'string' },
  state: { type: 'string' },
  reason: { type: 'string' },
  day: { type: 'string' },
  minutes: { type: 'string' },
  timeout: { type: 'string' },
  tag: { type: 'string' },
  cursor: { type: 'string' },
  flow: { type: 'boolean', default: false },
  key: { type: 'string' },
  since: { type: 'string' },
  until: { type: 'string' },
  rate: { type: 'string' },
  'dry-run': { type: 'boolean', default: false },
  follow: { type: 'boolean', default: false },
} as const;

type Values = ReturnType<typeof parse>['values'];

function parse(argv: string[]) {
  return parseArgs({ args: argv, options: common, allowPositionals: true, strict: true });
}

/**
 * What an operator command (or the dashboard) works on: the running `taskworker dev` it talks to,
 * if any, the version (`--version`, else that dev's) and the config (`--config`, else that dev's or
 * the one here).
 */
export async function operatorTarget(values: { readonly version?: string | undefined; readonly config?: string | undefined }) {
  const local = useLocalEndpointsIfRunning();
  const version = values.version ?? local?.version;
  if (!version) throw new UsageError('--version is required (no taskworker dev is running here or above, nor at AWS_ENDPOINT_URL_SQS)');
  const configFile = findConfigFile(values.config ?? local?.configFile);
  return { local, version, configFile, config: resolveConfig(await loadConfigModule(configFile)) };
}

/**
 * A view command's arguments (`--version V --config FILE --json`, no positionals), its target and
 * an operator context on it: what `taskworker workers` and `taskworker events` start from.
 */
export async function viewTarget(command: string, argv: string[]) {
  const { values, positionals } = parseArgs({
    args: argv,
    options: { version: { type: 'string' }, config: { type: 'string' }, json: { type: 'boolean', default: false } },
    allowPositionals: true,
    strict: true,
  });
  if (positionals.length > 0)
    throw new UsageError(`${command}: unexpected ${JSON.stringify(positionals[0])} (usage: taskworker ${command} [--json])`);
  const target = await operatorTarget(values);
  return { json: values.json === true, ...target, ctx: await operatorContext({ config: target.config, version: target.version }) };
}

/** What a command works on: an operator context on its target, and the running `taskworker dev`, if any. */
type Context = OperatorContext & { readonly local: DevState | undefined };

async function context(values: Values): Promise<Context> {
  const { local, version, config } = await operatorTarget(values);
  const oldestAge = cloudWatchOldestAge();
  const metricsThroughput = cloudWatchThroughput();
  const logs = versionJobLogs(local, config, version);
  return {
    ...(await operatorContext({
      config,
      version,
      ...(oldestAge ? { oldestAge } : {}),
      ...(metricsThroughput ? { metricsThroughput } : {}),
      ...(logs ? { jobLogs: logs } : {}),
    })),
    local,
  };
}

function queueOption(ctx: OperatorContext, queue: string | undefined): string[] {
  if (queue === undefined) return ctx.config.queues.map((q) => q.name);
  if (!ctx.config.queues.some((q) => q.name === queue)) {
    throw new UsageError(`--queue ${queue}: no such queue (configured: ${ctx.config.queues.map((q) => q.name).join(', ')})`);
  }
  return [queue];
}

function reasonOption(reason: string | undefined): ArchiveReason | undefined {
  if (reason === undefined) return undefined;
  if (!(ARCHIVE_REASONS as readonly string[]).includes(reason))
    throw new UsageError(`--reason ${reason}: expected one of ${ARCHIVE_REASONS.join(', ')}`);
  return reason as ArchiveReason;
}

const print = (json: boolean, data: unknown, text: () => string) =>
  process.stdout.write(`${json ? JSON.stringify(data, null, 2) : text()}\n`);

const JOBS_USAGE =
  'usage: taskworker jobs show ID | list --state S | list --tag T | flow ID | cancel ID [--flow] | wait ID [--timeout S] | logs ID [--follow] | bulk cancel|replay|delete|log …';
const ARCHIVE_USAGE = 'usage: taskworker archive list|replay [--reason R] [--task T] [--limit N]';
const subcommandMistake = (command: string, sub: string | undefined) =>
  sub === undefined ? '' : `unknown ${command} command ${JSON.stringify(sub)}; `;

/** An operator command's arguments, with `--json` and `--limit` (checked whichever command it is). */
interface Args {
  readonly values: Values;
  readonly positionals: readonly string[];
  readonly json: boolean;
  readonly limit: number;
}

/** Runs an operator command; `command` is the first word (status, jobs, stats, archive, dlq). */
export async function operatorCommand(command: string, argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv);
  const json = values.json ?? false;
  // A bulk operation's limit is its own (up to a million actions); a list's is a page.
  const bulk = command === 'jobs' && positionals[0] === 'bulk';
  const limit = integerOption('--limit', values.limit, 20, 1, bulk ? 1_000_000 : 10_000);
  const args: Args = { values, positionals, json, limit };
  switch (command) {
    case 'status':
      return statusCommand(args);
    case 'jobs':
      return jobsCommand(args);
    case 'stats':
      return statsCommand(args);
    case 'archive':
      return archiveCommand(args);
    case 'dlq':
      return dlqCommand(args);
    case 'keys':
      return keysCommand(args);
    default:
      throw new UsageError(`unknown command ${command}`);
  }
}

async function keysCommand({ values, json, limit, positionals }: Args): Promise<number> {
  if (positionals[0] === 'show' && positionals.length === 1) {
    if (values.task === undefined || values.key === undefined)
      throw new UsageError('usage: taskworker keys show --task T --key K [--json]');
    const problem = keyViewProblem(values.task, values.key);
    if (problem) throw new UsageError(problem);
    const ctx = await context(values);
    const view = await keyView(ctx, values.task, values.key);
    print(json, view, () => renderKeyView(view));
    return 0;
  }
  if (positionals.length > 0)
    throw new UsageError('usage: taskworker keys [--task T] [--limit N] [--json] | keys show --task T --key K [--json]');
  const ctx = await context(values);
  const view = await busiestKeys(ctx, { ...(values.task !== undefined ? { task: values.task } : {}), limit });
  print(json, view, () => renderKeys(view));
  return 0;
}

async function statusCommand({ values, json }: Args): Promise<number> {
  const ctx = await context(values);
  const status = await versionStatus(ctx);
  const dispatchers = ctx.local && { alive: ctx.local.dispatchersAlive ?? 0, died: ctx.local.dispatchersDied ?? 0, pid: ctx.local.pid };
  print(json, { ...status, ...(dispatchers ? { localDispatchers: dispatchers } : {}) }, () =>
    [
      renderStatus(status),
      ...(dispatchers
        ? [
            `taskworker dev (pid ${dispatchers.pid}): ${dispatchers.alive} function container(s) alive (dispatchers and doorbells)` +
              (dispatchers.died > 0 ? `, ${dispatchers.died} died and were replaced` : ''),
          ]
        : []),
    ].join('\n'),
  );
  return 0;
}

/** A `taskworker jobs` subcommand's arguments: the words after it, and the context it works on. */
interface JobsArgs extends Args {
  readonly ctx: Context;
  readonly id: string | undefined;
  readonly extra: readonly string[];
}

async function jobsCommand(args: Args): Promise<number> {
  const { values } = args;
  const [sub, id, ...extra] = args.positionals;
  // A mistyped subcommand is named before anything is looked up (a version, a running dev).
  if (!['show', 'list', 'flow', 'cancel', 'wait', 'logs', 'bulk'].includes(sub ?? ''))
    throw new UsageError(`${subcommandMistake('jobs', sub)}${JOBS_USAGE}`);
  const tagMistake = values.tag === undefined ? undefined : tagProblem(values.tag);
  if (tagMistake) throw new UsageError(`--tag ${quoted(values.tag ?? '')}: ${tagMistake}`);
  if (sub === 'bulk')
    return bulkCommand(
      await context(values),
      [id, ...extra].filter((w) => w !== undefined),
      values,
      args.json,
    );
  const jobs: JobsArgs = { ...args, ctx: await context(values), id, extra };
  if (sub === 'show') return jobsShow(jobs);
  if (sub === 'flow') return jobsFlow(jobs);
  if (sub === 'list' && values.tag !== undefined) return jobsListTagged(jobs, values.tag);
  if (values.cursor !== undefined) throw new UsageError('--cursor pages a list by --tag');
  if (sub === 'list') return jobsList(jobs);
  if (sub === 'cancel') return jobsCancel(jobs);
  if (sub === 'wait') return jobsWait(jobs);
  if (sub === 'logs') return jobsLogs(jobs);
  throw new UsageError(JOBS_USAGE);
}

/** The one job ID a subcommand takes, or its usage. */
function onlyId({ id, extra }: JobsArgs, usage: string): string {
  if (!id || extra.length > 0) throw new UsageError(usage);
  return id;
}

async function jobsShow(args: JobsArgs): Promise<number> {
  const { ctx, json } = args;
  const id = onlyId(args, 'usage: taskworker jobs show ID');
  const lookup = await lookUpJob(ctx.jobs, id);
  const found = lookup.job !== undefined || lookup.filed.length > 0;
  const relations = lookup.job ? await jobRelations(ctx.jobs, lookup.job) : undefined;
  // Scripts read one shape whatever was found, nothing included (JobShowAnswer).
  if (json || found) print(json, jobShowAnswer(id, ctx.version, lookup, relations), () => renderLookup(id, ctx.version, lookup, relations));
  if (found) return 0;
  process.stderr.write(
    `taskworker: no job ${id} in version ${ctx.version} (unknown id, expired by its retention, or its queue is not tracked)\n`,
  );
  return 1;
}

async function jobsFlow(args: JobsArgs): Promise<number> {
  const { ctx, json } = args;
  const id = onlyId(args, 'usage: taskworker jobs flow ID');
  const flow = await flowOf(ctx.jobs, id);
  if (!flow) {
    process.stderr.write(`taskworker: no job ${id} in version ${ctx.version}\n`);
    return 1;
  }
  print(json, flow, () => renderFlow(flow));
  return 0;
}

async function jobsListTagged({ ctx, json, limit, values, id }: JobsArgs, tag: string): Promise<number> {
  if (id !== undefined) throw new UsageError('usage: taskworker jobs list --tag T [--limit N] [--cursor C]');
  const narrowed = (['state', 'queue', 'task', 'key'] as const).find((o) => values[o] !== undefined);
  if (narrowed) throw new UsageError(`--tag lists the tag's jobs in every state, queue and task: --${narrowed} cannot narrow it`);
  const page = await listTaggedPage(ctx.jobs, tag, limit, values.cursor);
  print(json, page, () =>
    [
      page.jobs.length === 0 ? `no jobs tagged ${tag}` : renderJobList(page.jobs),
      ...(page.next ? [`older: taskworker jobs list --tag ${tag} --cursor ${page.next}`] : []),
    ].join('\n'),
  );
  return 0;
}

async function jobsList({ ctx, json, limit, values }: JobsArgs): Promise<number> {
  const state = values.state;
  if (!state || !(JOB_STATES as readonly string[]).includes(state))
    throw new UsageError(`--state (one of ${JOB_STATES.join(', ')}) or --tag T is required`);
  const jobs = await ctx.jobs.list({
    state: state as JobState,
    queues: queueOption(ctx, values.queue),
    ...(values.task ? { task: values.task } : {}),
    ...(values.key !== undefined ? { key: values.key } : {}),
    limit,
  });
  print(json, jobs, () => renderJobList(jobs));
  return 0;
}

async function jobsCancel(args: JobsArgs): Promise<number> {
  const { ctx, json, values } = args;
  const id = onlyId(args, 'usage: taskworker jobs cancel ID [--flow]');
  if (values.flow) {
    const result = await cancelFlow(flowDepsOf(ctx), id, ctx.config.queues);
    print(json, result, () => renderFlowCancel(result));
    return result.cancelled.length > 0 ? 0 : 1;
  }
  const cancelled = await cancelJob(flowDepsOf(ctx), id, ctx.config.queues);
  print(json, cancelled, () => renderCancel(id, cancelled));
  return cancelled.outcome === 'cancelled' || cancelled.outcome === 'requested' ? 0 : 1;
}

async function jobsWait(args: JobsArgs): Promise<number> {
  const { ctx, json, values } = args;
  const id = onlyId(args, 'usage: taskworker jobs wait ID [--timeout S]');
  const timeoutMs = integerOption('--timeout', values.timeout, 30, 1, 86_400) * 1000;
  const result = await waitForResult(
    ctx.jobs,
    id,
    systemClock,
    {
      timeoutMs,
      check: (record) => {
        const queue = ctx.config.queues.find((q) => q.name === record.queue);
        if (queue && queue.tracking !== 'full') throw new ResultUnavailableError(queue.name, queue.tracking);
      },
    },
    ctx.readStoredResult,
  );
  print(json, result, () => renderResult(result));
  return result.state === 'succeeded' ? 0 : 1;
}

/** How often `jobs logs --follow` reads again. */
const FOLLOW_EVERY_MS = 2_000;

async function jobsLogs(args: JobsArgs): Promise<number> {
  const { ctx, json, values } = args;
  const id = onlyId(args, 'usage: taskworker jobs logs ID [--follow] [--json]');
  const first = await jobLogs(ctx, id);
  if (!values.follow) {
    print(json, first, () => renderJobLogs(first));
    return 0;
  }
  // Following: each line once, as JSON lines with --json; until the job has ended and one read after that found nothing new.
  const shown = new Set<string>();
  const show = (logs: JobLogs) => {
    for (const line of logs.lines) {
      const key = JSON.stringify(line);
      if (shown.has(key)) continue;
      shown.add(key);
      process.stdout.write(`${json ? JSON.stringify(line) : renderJobLogLine(line)}\n`);
    }
  };
  if (!json) process.stdout.write(`${renderJobLogsHeader(first)} (following until it ends; Ctrl-C stops)\n`);
  show(first);
  let logs = first;
  while (!logs.ended) {
    await new Promise((resolve) => setTimeout(resolve, FOLLOW_EVERY_MS));
    logs = await jobLogs(ctx, id);
    show(logs);
  }
  return 0;
}

async function statsCommand({ values, json }: Args): Promise<number> {
  const ctx = await context(values);
  if (values.minutes !== undefined) {
    // Jobs per minute per queue over the last N minutes (CloudWatch on AWS, the stats table's minute counters locally).
    if (values.task !== undefined || values.day !== undefined)
      throw new UsageError('--minutes reads queues by minute: --task and --day do not apply');
    const minutes = integerOption('--minutes', values.minutes, 60, 1, 180);
    const queues = new Set(queueOption(ctx, values.queue));
    const all = await throughput(ctx, minutes);
    const shown = { ...all, queues: Object.fromEntries(Object.entries(all.queues).filter(([q]) => queues.has(q))) };
    print(json, shown, () => renderThroughput(shown));
    return 0;
  }
  const day = values.day ?? utcDay(ctx.clock.now());
  if (!/^\d{4}-\d{2}-\d{2}$/.test(day)) throw new UsageError(`--day ${day}: expected YYYY-MM-DD (UTC)`);
  if (values.task !== undefined && values.queue !== undefined) throw new UsageError('--task and --queue: give one of them');
  const keys = values.task !== undefined ? [taskStatsKey(values.task)] : queueOption(ctx, values.queue);
  const days = (await Promise.all(keys.map((key) => ctx.stats.get(key, day)))).filter((s) => s !== undefined);
  print(json, days, () => renderStats(days));
  return 0;
}

async function archiveCommand(args: Args): Promise<number> {
  const { values, json, limit } = args;
  const [sub] = args.positionals;
  if (sub !== 'list' && sub !== 'replay') throw new UsageError(`${subcommandMistake('archive', sub)}${ARCHIVE_USAGE}`);
  const ctx = await context(values);
  const reason = reasonOption(values.reason);
  const filter: ArchiveFilter = { ...(reason ? { reason } : {}), ...(values.task ? { task: values.task } : {}) };
  if (sub === 'list') {
    const messages = await listArchived(ctx, filter, limit);
    print(json, messages.map(shownArchived), () => renderArchive(messages));
    return 0;
  }
  if (sub === 'replay') return archiveReplay(args, ctx, filter);
  throw new UsageError(ARCHIVE_USAGE);
}

/** Replays the archived messages the filter selects (all, or `--limit`), showing its progress on stderr. */
async function archiveReplay({ values, json, limit }: Args, ctx: Context, filter: ArchiveFilter): Promise<number> {
  const total = values.limit === undefined ? (await ctx.queues.depth(ctx.urls.archive)).visible : limit;
  const tty = process.stderr.isTTY === true;
  const result = await replayArchived(ctx, filter, values.limit === undefined ? Number.MAX_SAFE_INTEGER : limit, (done) => {
    if (tty) process.stderr.write(`\rreplaying ${progressBar(done, Math.max(total, done))}`);
    else if (done % 100 === 0) process.stderr.write(`replayed ${done}\n`);
  });
  if (tty) process.stderr.write('\n');
  print(json, result, () =>
    [
      `replayed ${result.replayed} message(s) to their queues (attempts reset)`,
      ...result.skipped.map((s) => `skipped ${s.messageId}: ${s.why}`),
    ].join('\n'),
  );
  return 0;
}

async function dlqCommand({ values, json, positionals }: Args): Promise<number> {
  const [sub] = positionals;
  if (sub !== 'redrive') throw new UsageError(`${subcommandMistake('dlq', sub)}usage: taskworker dlq redrive [--queue Q]`);
  const ctx = await context(values);
  const results = await redriveDeadLetters(ctx, values.queue === undefined ? undefined : (queueOption(ctx, values.queue)[0] as string));
  print(json, results, () =>
    results
      .map((r) => {
        if (r.messages === 0) return `${r.queue}: DLQ empty`;
        const how = r.via === 'client' ? `, by this process: the endpoint ran no move task (${r.moveTaskError})` : '';
        return `${r.queue}: moved ${r.messages} message(s) back (${r.status}${how})`;
      })
      .join('\n'),
  );
  return 0;
}
