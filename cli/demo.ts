import { parseArgs } from 'node:util';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { localStackUi, packagedAssetsDir, type RunningUi, serveUi } from '../dashboard/server/serve';
import { sqsQueues } from '../lib/aws/wiring';
import type { TaskworkerConfig } from '../lib/config/app-config';
import { SCHEDULE_PERIOD_MS } from '../lib/invocation/scaling';
import { STATS_FLUSH_MS } from '../lib/invocation/stats-buffer';
import { type LocalStack, startLocalStack } from '../lib/local/dev';
import { quantile } from '../lib/policy/histogram';
import { utcDay } from '../lib/policy/stat-sums';
import type { PublishItem } from '../lib/publish/publish-options';
import {
  addBatch,
  archivedTotal,
  type BatchReport,
  type DispatcherSummary,
  emptySummary,
  type JobReport,
  statsBehind,
} from '../lib/settle/report';
import type { TaskDefinition } from '../lib/tasks/task';
import type { QueueDayStats } from '../lib/track/stats-store';
import { subscriberJobId } from '../lib/wire/event';
import { renderJob, renderStats } from './render';
import { announceLocalStack, clearDevState, findConfigFile, formatMs, integerOption, table } from './shared';

export const DEMO_USAGE = `taskworker demo [--config FILE] [--dispatchers N] [--timeout S] [--as-deployed] [--keep] [--ui [--port P]]
  The newcomer's tour (npm start): runs taskworker dev with the example tasks, publishes a
  mixed workload over three priorities, shows progress, prints a summary (with each queue's
  wake-up mode and its first job's wait), two job records and the stats histograms, and exits 0
  once every job has succeeded or been archived. Its dispatchers listen throughout
  (taskworker dev --always-on); with --as-deployed (npm start -- --as-deployed) they are invoked
  as in AWS, as taskworker dev does: doorbell queues start at once, a schedule queue's jobs wait
  for the next minute's dispatcher (it takes a few minutes; --timeout defaults to 300 s). With
  --keep the system stays up afterwards for \`taskworker jobs show\`, \`stats\`, \`archive\` in another
  shell. With --ui (npm start -- --ui) the web dashboard watches the run too, and stays up afterwards.`;

/** The mixed workload: steady work on every queue plus one of each kind of trouble. */
function workload(): PublishItem[] {
  const items: PublishItem[] = [];
  const add = (task: string, count: number, payload: (i: number) => unknown) => {
    for (let i = 0; i < count; i++) items.push({ task, payload: payload(i) });
  };
  add('rebuild-index', 30, (i) => ({ shard: i }));
  add('sync-crm', 2, (i) => ({ account: `acct-${i}` }));
  add('build-report', 1, () => ({ rows: 1e13 }));
  add('resize-image', 60, (i) => ({ image: `photo-${i}.jpg`, width: 320 }));
  add('charge-card', 4, (i) => ({ order: `order-${i}`, cents: 1999 }));
  add('send-notification', 150, (i) => ({ user: `user-${i}`, text: 'Someone replied to your post' }));
  return items;
}

/** Emitted once each: SNS runs every task subscribed to orders.placed (`on`), each on its own queue. */
const EVENTS = [0, 1, 2].map((i) => ({
  id: `demo-order-${i}-placed`,
  payload: { order: `order-${i}`, email: `customer-${i}@example.com`, cents: 1999 + i * 1000 },
}));
const EVENT_NAME = 'orders.placed';

/** Sent with a plain SendMessage, as any other SDK would: both end in the archive with a reason. */
const RAW_MESSAGES = [
  { queue: 'low_priority', body: 'this is not JSON' },
  { queue: 'default', body: JSON.stringify({ task: 'no-such-task', payload: {} }) },
];

export async function demoCommand(argv: string[]): Promise<number> {
  const { values, asDeployed, timeoutMs } = demoOptions(argv);
  const run: Run = { started: Date.now(), summary: emptySummary(), archivedJobs: [], retriedJobs: [], firstWaits: {} };
  const configFile = findConfigFile(values.config);
  const stack = await startLocalStack({
    configFile,
    dispatchers: integerOption('--dispatchers', values.dispatchers, 2, 1, 16),
    version: 'demo',
    logLevel: 'ERROR',
    // The demo counts its own workload; the config's schedules fire in `taskworker dev`.
    schedules: false,
    ...(asDeployed ? { invocations: 'on-demand' as const } : {}),
    onBatch: (report) => recordBatch(run, report),
  });
  let ui: RunningUi | undefined;
  try {
    if (values.ui) {
      ui = await startUi(stack, values.port);
      process.stdout.write(`taskworker demo: the dashboard is at ${ui.url} (open it now to watch the run)\n`);
    }
    const plan = planFor(stack, workload());
    const containers = stack.containersByFunction();
    if (asDeployed) {
      // Publish into an idle version, as a deployed one is between bursts: the schedule's first
      // dispatcher has found nothing and ended, and nothing runs until a doorbell or the next minute.
      while (!stack.invocationDurations().some((d) => d.fn === 'dispatcher')) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    process.stdout.write(planLine(stack, plan, asDeployed ? containers : undefined));
    await publish(stack, plan);
    if (!(await untilSettled(stack, run, plan, timeoutMs))) return 1;
    await report(stack, run, plan, asDeployed);
    if (values.keep || ui) await keepRunning(stack, configFile, ui);
    return 0;
  } finally {
    await ui?.close();
    await stack.stop();
  }
}

/** `taskworker demo`'s options, and its time limit (longer as deployed). */
function demoOptions(argv: string[]) {
  const { values } = parseArgs({
    args: argv,
    options: {
      config: { type: 'string' },
      dispatchers: { type: 'string' },
      timeout: { type: 'string' },
      keep: { type: 'boolean', default: false },
      'as-deployed': { type: 'boolean', default: false },
      ui: { type: 'boolean', default: false },
      port: { type: 'string' },
    },
    strict: true,
  });
  const asDeployed = values['as-deployed'] === true;
  // As deployed, a schedule queue's retry that comes back after the fleet scaled in waits for the next minute.
  const timeoutMs = integerOption('--timeout', values.timeout, asDeployed ? 300 : 110, 10, 3600) * 1000;
  return { values, asDeployed, timeoutMs };
}

/** What the batches of the run reported. */
interface Run {
  readonly started: number;
  readonly summary: DispatcherSummary;
  readonly archivedJobs: JobReport[];
  readonly retriedJobs: JobReport[];
  /** Each queue's first started job's wait (publish → start), in the order the batches were reported. */
  readonly firstWaits: Record<string, number>;
}

function recordBatch(run: Run, report: BatchReport): void {
  addBatch(run.summary, report);
  const first = report.jobs.find((j) => j.waitMs !== undefined && j.attempt === 1);
  if (first?.waitMs !== undefined && run.firstWaits[report.queue] === undefined) run.firstWaits[report.queue] = first.waitMs;
  for (const job of report.jobs) {
    if (job.outcome === 'archived') run.archivedJobs.push(job);
    if (job.outcome === 'retried') run.retriedJobs.push(job);
  }
}

/** The web dashboard on the demo's stack (`--ui`). */
async function startUi(stack: LocalStack, port: string | undefined): Promise<RunningUi> {
  return serveUi({
    ...(await localStackUi(stack)),
    readOnly: false,
    assetsDir: packagedAssetsDir(),
    port: integerOption('--port', port, 8470, 0, 65535),
    log: (line) => process.stderr.write(`ui: ${line}\n`),
  });
}

/** What the demo sends, and how many jobs each queue settles once it has. */
interface Plan {
  readonly items: readonly PublishItem[];
  /** The events emitted (none when the app does not declare the example's), and their subscribers. */
  readonly emits: typeof EVENTS;
  readonly subscribers: readonly TaskDefinition[];
  readonly expected: Record<string, number>;
  readonly queueNames: readonly string[];
}

function planFor(stack: LocalStack, items: PublishItem[]): Plan {
  const expected: Record<string, number> = {};
  for (const item of items) {
    const queue = stack.bundle.registry.get(item.task as string)?.queue as string;
    expected[queue] = (expected[queue] ?? 0) + 1;
  }
  for (const raw of RAW_MESSAGES) expected[raw.queue] = (expected[raw.queue] ?? 0) + 1;
  // Each event is one job per subscriber (an app without the example's event emits none).
  const emits = stack.bundle.config.events.some((e) => e.name === EVENT_NAME) ? EVENTS : [];
  const subscribers = [...stack.bundle.registry.values()].filter((t) => t.on.includes(EVENT_NAME));
  for (const t of subscribers) expected[t.queue] = (expected[t.queue] ?? 0) + emits.length;
  const queueNames = stack.bundle.config.queues.map((q) => q.name);
  return { items, emits, subscribers, expected, queueNames };
}

/** What runs and what is published; `containers` as deployed, counted before the version went idle. */
function planLine(stack: LocalStack, plan: Plan, containers: Readonly<Record<string, number>> | undefined): string {
  const { items, emits, subscribers, expected, queueNames } = plan;
  const doorbells = Object.keys(containers ?? {}).filter((fn) => fn !== 'dispatcher').length;
  return (
    `taskworker demo: ${containers ? `${containers.dispatcher ?? 0} dispatchers + ${doorbells} doorbells, invoked as deployed,` : `${stack.dispatchers.length} dispatchers`} ` +
    `on fauxqs ${stack.endpoints.sqs}; publishing ${items.length + RAW_MESSAGES.length} jobs ` +
    `and emitting ${emits.length} ${EVENT_NAME} events for ${subscribers.length} subscribers ` +
    `(${queueNames.map((q) => `${q} ${expected[q] ?? 0}`).join(', ')})\n`
  );
}

async function publish(stack: LocalStack, { items, emits }: Plan): Promise<void> {
  await stack.publisher.publishBatch(items);
  for (const e of emits) await stack.publisher.emit(EVENT_NAME, e.payload, { id: e.id });
  for (const raw of RAW_MESSAGES)
    await stack.sqs.send(new SendMessageCommand({ QueueUrl: stack.urls.queues[raw.queue], MessageBody: raw.body }));
}

/** Prints each queue's progress when it changes until every job has settled: false, said, past the time limit. */
async function untilSettled(stack: LocalStack, { started, summary }: Run, plan: Plan, timeoutMs: number): Promise<boolean> {
  const { queueNames, expected } = plan;
  const queues = sqsQueues({ client: stack.sqs });
  let lastLine = '';
  for (;;) {
    const depths = await Promise.all(queueNames.map((q) => queues.depth(stack.urls.queues[q] as string)));
    const pending = depths.reduce((n, d) => n + d.visible + d.inFlight + d.delayed, 0);
    const done = (q: string) => {
      const s = summary.queues[q];
      return s ? s.succeeded + archivedTotal(s) : 0;
    };
    const line = queueNames
      .map((q, i) => {
        const d = depths[i] as { visible: number; inFlight: number; delayed: number };
        return `${q} ${done(q)}/${expected[q] ?? 0} done (${d.visible} waiting, ${d.inFlight} running, ${d.delayed} delayed)`;
      })
      .join(' · ');
    if (line !== lastLine) process.stdout.write(`  ${((Date.now() - started) / 1000).toFixed(1).padStart(5)}s  ${line}\n`);
    lastLine = line;
    if (pending === 0 && queueNames.every((q) => done(q) >= (expected[q] ?? 0))) return true;
    if (Date.now() - started > timeoutMs) {
      process.stdout.write(`demo did not settle within ${timeoutMs / 1000} s\n`);
      return false;
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

/** The summary of a settled run, two job records, the stats and the events' jobs. */
async function report(stack: LocalStack, run: Run, plan: Plan, asDeployed: boolean): Promise<void> {
  const { summary, archivedJobs, retriedJobs } = run;
  process.stdout.write(
    `\n${summaryTable(summary, plan.queueNames, plan.expected)}\n\n${wakeUpNote(stack.bundle.config, run.firstWaits, asDeployed)}\n\n${archiveList(archivedJobs)}\n`,
  );
  process.stdout.write(
    `\nall ${Object.values(plan.expected).reduce((a, n) => a + n, 0)} jobs settled in ${formatMs(Date.now() - run.started)}\n`,
  );
  await showRecords(stack, summary, [retriedJobs[0]?.jobId, archivedJobs.find((j) => j.reason === 'timed-out')?.jobId]);
  if (plan.emits.length > 0)
    await showEvents(
      stack,
      plan.emits.map((e) => e.id),
      plan.subscribers.map((t) => t.name),
    );
}

/** `--keep` or `--ui`: the stack stays up, announced to the other commands, until Ctrl-C. */
async function keepRunning(stack: LocalStack, configFile: string, ui: RunningUi | undefined): Promise<void> {
  announceLocalStack(stack, configFile);
  process.stdout.write(
    `\nstill running (${ui ? `dashboard at ${ui.url}` : '--keep'}): try \`npx taskworker status\`, \`jobs list --state archived\`, \`stats\`, \`archive list\` in another shell; Ctrl-C to stop.\n`,
  );
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  clearDevState();
}

/** Each emitted event's subscriber jobs (`<event id>/<task>`) as the jobs table has them. */
async function showEvents(stack: LocalStack, eventIds: readonly string[], tasks: readonly string[]): Promise<void> {
  const rows: string[][] = [];
  for (const id of eventIds) {
    const states = await Promise.all(tasks.map(async (t) => (await stack.jobs.get(subscriberJobId(id, t)))?.state ?? 'unknown'));
    rows.push([id, ...states]);
  }
  process.stdout.write(
    `\n── events (taskworker events; each subscriber's job is <event id>/<task>) ──\n${table(['event', ...tasks], rows)}\n`,
  );
}

/** What `taskworker jobs show` and `taskworker stats` say about the run, from the DynamoDB tables. */
async function showRecords(stack: LocalStack, summary: DispatcherSummary, jobIds: ReadonlyArray<string | undefined>): Promise<void> {
  const out: string[] = ['', '── job records (taskworker jobs show ID) ──'];
  for (const id of jobIds) {
    const job = id ? await stack.jobs.get(id) : undefined;
    if (job) out.push(renderJob(job), '');
  }
  const { stats, behind } = await statsOfRun(stack, summary);
  out.push('── stats (taskworker stats) ──', renderStats(stats));
  if (behind.length > 0) {
    out.push(
      `(the stats table trails the summary above — ${behind.join('; ')}: each dispatcher writes its stats every ${STATS_FLUSH_MS / 1000} s, and these were not written yet)`,
    );
  }
  process.stdout.write(`${out.join('\n')}\n`);
}

/**
 * Today's stats of each queue, read once they count what the summary above counts: the last
 * batches' stats reach the table up to STATS_FLUSH_MS after them (each dispatcher coalesces its
 * writes), and read at once they trailed it (stats `retried 3`, no archived, beside the summary's
 * `4 retries, 4 archived`). Past that (a dispatcher lost what it held), what still trails is named.
 */
async function statsOfRun(stack: LocalStack, summary: DispatcherSummary): Promise<{ stats: QueueDayStats[]; behind: string[] }> {
  const until = Date.now() + STATS_FLUSH_MS + 3_000;
  for (;;) {
    const day = utcDay(Date.now());
    const queues = stack.bundle.config.queues.map((q) => q.name);
    const days = await Promise.all(queues.map((q) => stack.stats.get(q, day)));
    const behind = queues.flatMap((q, i) => {
      const trailing = statsBehind(summary.queues[q], days[i]);
      return trailing.length > 0 ? [`${q}: ${trailing.join(', ')}`] : [];
    });
    if (behind.length === 0 || Date.now() >= until) return { stats: days.filter((d) => d !== undefined), behind };
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

function summaryTable(summary: DispatcherSummary, queues: readonly string[], expected: Record<string, number>): string {
  return table(
    ['queue', 'published', 'succeeded', 'retries', 'archived', 'wait p50', 'wait p99', 'run p50'],
    queues.map((name) => {
      const q = summary.queues[name];
      return [
        name,
        expected[name] ?? 0,
        q?.succeeded ?? 0,
        q?.retried ?? 0,
        q ? archivedTotal(q) : 0,
        q ? formatMs(quantile(q.wait, 0.5)) : '–',
        q ? formatMs(quantile(q.wait, 0.99)) : '–',
        q ? formatMs(quantile(q.run, 0.5)) : '–',
      ];
    }),
  );
}

/**
 * What wakes each queue in an idle version, what a schedule queue's job waits there (the schedule's
 * period, at most), and each queue's first job's wait in this run.
 */
function wakeUpNote(config: TaskworkerConfig, firstWaits: Readonly<Record<string, number>>, asDeployed: boolean): string {
  const names = (mode: string) => config.queues.filter((q) => q.wakeUp === mode).map((q) => q.name);
  const doorbell = names('doorbell');
  const schedule = config.queues.filter((q) => q.wakeUp === 'schedule');
  const periodS = SCHEDULE_PERIOD_MS / 1000;
  const lines = ['wake-up in an idle version:'];
  if (doorbell.length > 0) lines.push(`  ${doorbell.join(', ')}: a doorbell (the queue's SQS trigger starts a dispatcher at once)`);
  for (const q of schedule) {
    lines.push(
      `  ${q.name}: the schedule (wakeUp 'schedule', SLA ${q.slaSeconds} s): a job waits for the next scheduled dispatcher, up to ${periodS} s`,
    );
  }
  const waits = config.queues.map((q) => `${q.name} ${firstWaits[q.name] === undefined ? '–' : formatMs(firstWaits[q.name] as number)}`);
  lines.push(
    `first job's wait in this run: ${waits.join(' · ')} ` +
      (asDeployed
        ? `(invoked as deployed: doorbells, and the schedule every ${periodS} s)`
        : '(the dispatchers listened throughout; npm start -- --as-deployed shows the idle wait)'),
  );
  return lines.join('\n');
}

function archiveList(jobs: readonly JobReport[]): string {
  if (jobs.length === 0) return 'archived: none';
  return [
    'archived (reason · task · job):',
    ...jobs.map((j) => `  ${(j.reason ?? '').padEnd(13)} ${(j.task ?? '(none)').padEnd(14)} ${j.jobId ?? j.messageId}`),
  ].join('\n');
}
