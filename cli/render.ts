import type { FlowCancelResult, FlowView, JobRelations, RelatedJob, RelatedJobs } from '../lib/operate/answers';
import type { ArchivedMessage } from '../lib/operate/archive';
import type { JobLogs } from '../lib/operate/job-logs';
import type { KeysView, KeyView } from '../lib/operate/keys';
import { type JobLookup, whyFiled } from '../lib/operate/rejections';
import type { VersionStatus } from '../lib/operate/version-status';
import { costUsd, gbSeconds } from '../lib/policy/cost-attribution';
import { bucketQuantile, mean, QLESS_BUCKETS, variance } from '../lib/policy/stat-sums';
import { addCounts, NO_COUNTS, type Throughput } from '../lib/policy/throughput';
import type { JobResult } from '../lib/publish/results';
import type { JobLogEntry } from '../lib/track/job-logs';
import { attemptsUsed, type CancelResult, type JobRecord, type StepEntry } from '../lib/track/job-record';
import type { DurationStats, MinuteCounts, QueueDayStats, TaskCost } from '../lib/track/stats-store';
import { formatMs, table } from './shared';

const iso = (ms: number | undefined) => (ms === undefined ? '–' : new Date(ms).toISOString());
const relative = (ms: number | undefined, from: number | undefined) =>
  ms === undefined || from === undefined ? '' : ` (+${formatMs(ms - from)})`;

export function renderStatus(status: VersionStatus): string {
  const rows = status.queues.map((q) => [
    q.pausedAt === undefined ? q.queue : `${q.queue} (paused since ${new Date(q.pausedAt).toISOString()})`,
    q.overridden.includes('priority') ? `${q.priority} (set; config ${q.configuredPriority})` : q.priority,
    q.depth.visible,
    q.depth.inFlight,
    q.depth.delayed,
    q.oldestAgeSeconds === undefined ? 'n/a' : `${q.oldestAgeSeconds} s${q.oldestAgeSeconds > q.slaSeconds ? ' (over SLA)' : ''}`,
    q.overridden.includes('slaSeconds') ? `${q.slaSeconds} s (set; config ${q.configuredSlaSeconds} s)` : `${q.slaSeconds} s`,
    q.deadLetter,
    formatMs(q.waitP50Ms),
    formatMs(q.waitP99Ms),
  ]);
  const lines = [
    `version ${status.version} · ${status.drained ? 'drained (no message visible, in flight or delayed)' : 'has work'} · archive ${status.archive}`,
    table(['queue', 'priority', 'visible', 'in flight', 'delayed', 'oldest', 'SLA', 'DLQ', `wait p50 (${status.day})`, 'wait p99'], rows),
  ];
  for (const pause of status.rateLimits) {
    lines.push(`rate limited: ${pause.scope} held until ${new Date(pause.until).toISOString()} (RateLimitedError)`);
  }
  if (status.queues.every((q) => q.oldestAgeSeconds === undefined)) {
    lines.push(
      'oldest: ApproximateAgeOfOldestMessage comes from CloudWatch: not on the local emulators, and only where @aws-sdk/client-cloudwatch is installed.',
    );
  }
  return lines.join('\n');
}

const stateOf = (j: Pick<RelatedJob, 'state' | 'reason'>) => (j.reason ? `${j.state} (${j.reason})` : j.state);

/** State counts as one line: `3 succeeded · 1 running`. */
const countsLine = (counts: RelatedJobs['counts']) =>
  Object.entries(counts)
    .map(([state, n]) => `${n} ${state}`)
    .join(' · ');

/** One side of a job's relations: the first few by name, and the states of all read counted. */
function relatedLines(title: string, side: RelatedJobs, extra = ''): string[] {
  const many = side.total > side.jobs.length;
  const counted = side.read < side.total ? ` (states of the first ${side.read} of ${side.total})` : '';
  return [
    `  ${title.padEnd(9)} ${side.total} job(s)${many ? `: ${countsLine(side.counts)}${counted}` : ''}${extra}`,
    ...side.jobs.map((j) => `    ${j.jobId}  ${stateOf(j)}${j.task ? `  ${j.task}` : ''}`),
    ...(many ? [`    … ${side.total - side.jobs.length} more`] : []),
  ];
}

export function renderRelations(job: JobRecord, relations: JobRelations | undefined): string[] {
  const lines: string[] = [];
  if (job.tags && job.tags.length > 0) lines.push(`  tags      ${job.tags.join(', ')}`);
  if (job.key !== undefined) lines.push(`  key       ${JSON.stringify(job.key)}`);
  if (job.duplicateOf !== undefined) lines.push(`  joined    ${job.duplicateOf} (same task and key; this job never ran)`);
  if (job.event)
    lines.push(
      `  event     ${job.event.name} ${job.event.id}${job.event.source ? ` from ${job.event.source}` : ''}, emitted ${new Date(job.event.emittedAt).toISOString()}`,
    );
  if (job.memberOf) lines.push(`  member    ${job.memberOf.index + 1} of ${job.memberOf.size} of fan-in ${job.memberOf.id}`);
  const deps = relations?.dependencies;
  if (deps) {
    const policy = job.onDependencyFailure ?? 'fail';
    const status = deps.firstFailure !== undefined ? `; ${deps.firstFailure} did not succeed` : deps.complete ? '; all ended' : '';
    const title = job.awaits !== undefined ? 'awaits' : 'waits for';
    lines.push(...relatedLines(title, deps, ` — on a failure: ${policy}${status}`));
  }
  if (relations?.dependents) lines.push(...relatedLines('dependents', relations.dependents));
  return lines;
}

export function renderJob(job: JobRecord, relations?: JobRelations): string {
  const start = job.publishedAt;
  const lines = [
    `job ${job.jobId}`,
    `  task      ${job.task || '(none)'}   queue ${job.queue}   version ${job.version}`,
    `  state     ${job.state}${job.reason ? ` (${job.reason})` : ''}   attempts ${attemptsUsed(job)}${job.retryAfters ? ` (and ${job.retryAfters} run(s) that asked to run again later)` : ''}`,
    `  published ${iso(job.publishedAt)}`,
    ...(job.runAt !== undefined ? [`  due       ${iso(job.runAt)}${relative(job.runAt, start)}`] : []),
    ...(job.startBy !== undefined ? [`  expires   ${iso(job.startBy)}${relative(job.startBy, start)}: no attempt starts after it`] : []),
    `  started   ${iso(job.firstStartedAt)}${relative(job.firstStartedAt, start)}${job.lastStartedAt !== job.firstStartedAt ? `   last ${iso(job.lastStartedAt)}${relative(job.lastStartedAt, start)}` : ''}`,
    `  finished  ${iso(job.finishedAt)}${relative(job.finishedAt, start)}`,
  ];
  if (job.state === 'running') lines.push(`  lease     held by ${job.leaseOwner ?? '?'} until ${iso(job.leaseUntil)}`);
  if (job.cancelRequestedAt !== undefined) lines.push(`  cancel    asked ${iso(job.cancelRequestedAt)}`);
  if (job.progress !== undefined) lines.push(`  progress  ${job.progress}   (${iso(job.progressAt)})`);
  if (job.lastError) lines.push(`  error     ${job.lastError.type}: ${job.lastError.message}`);
  if (job.envelopeId !== undefined)
    lines.push(`  carried   id ${job.envelopeId}: kept under its message id, it never ran as that job (${whyFiled(job, job.envelopeId)})`);
  if (job.payload !== undefined) lines.push(`  payload   ${job.payload}`);
  if (job.result !== undefined) lines.push(`  result    ${job.result}`);
  else if (job.resultRef !== undefined)
    lines.push(
      `  result    ${job.resultRef.bytes} bytes of JSON, kept in s3://${job.resultRef.bucket}/${job.resultRef.key} (taskworker jobs wait ${job.jobId} --json prints it)`,
    );
  else if (job.resultBytes !== undefined) lines.push(`  result    ${job.resultBytes} bytes of JSON, too large to keep (not stored)`);
  lines.push(...renderRelations(job, relations));
  if (job.steps && job.steps.length > 0) {
    lines.push(
      '  steps',
      table(
        ['  #', 'step', 'attempt', 'kept', 'result or wait'],
        job.steps.map((s, i) => [
          `  ${i + 1}`,
          s.name,
          String(s.attempt),
          iso(s.at),
          [
            stepWaitText(job, s),
            s.result === undefined
              ? ''
              : `${Buffer.byteLength(s.result)} B  ${s.result.length > 60 ? `${s.result.slice(0, 59)}…` : s.result}`,
          ]
            .filter(Boolean)
            .join('  '),
        ]),
      ),
    );
  }
  lines.push(
    '  history',
    table(
      ['  when', 'what', 'attempt', 'worker', 'detail'],
      job.history.map((h) => [
        `  ${iso(h.when)}`,
        h.what,
        h.attempt === undefined ? '' : String(h.attempt),
        h.worker ?? '',
        h.detail ?? '',
      ]),
    ),
  );
  return lines.join('\n');
}

/**
 * `jobs show ID`: the job named ID, then — apart, never merged into it — the messages that carried
 * ID and were archived under their own message ids for their envelope.
 */
export function renderLookup(id: string, version: string, lookup: JobLookup, relations?: JobRelations): string {
  const parts: string[] = [];
  if (lookup.job) parts.push(renderJob(lookup.job, relations));
  else parts.push(`no job ${id} of its own in version ${version}`);
  if (lookup.filed.length > 0) {
    parts.push(
      [
        `${lookup.filed.length} message(s) that carried id ${id} never ran as ${lookup.job ? 'this' : 'a'} job: archived for their envelope, each kept under its own message id`,
        table(
          ['  message id', 'archived', 'why'],
          lookup.filed.map((f) => [`  ${f.messageId}`, iso(f.record.finishedAt ?? f.record.updatedAt), f.why]),
        ),
        '  (taskworker jobs show MESSAGE-ID for its record; taskworker archive list / replay for the message)',
      ].join('\n'),
    );
  }
  return parts.join('\n\n');
}

export function renderResult(r: JobResult): string {
  switch (r.state) {
    case 'succeeded':
      return `job ${r.jobId} succeeded after ${r.attempts} attempt(s)${
        r.result !== undefined
          ? `: ${JSON.stringify(r.result)}`
          : r.resultBytes !== undefined
            ? ` (its result, ${r.resultBytes} bytes of JSON, was too large to keep)`
            : ''
      }`;
    case 'archived':
      return `job ${r.jobId} archived (${r.reason ?? 'unknown reason'}) after ${r.attempts} attempt(s)${r.error ? `: ${r.error.type}: ${r.error.message}` : ''}`;
    case 'cancelled':
      return `job ${r.jobId} was cancelled`;
  }
}

export function renderCancel(jobId: string, result: CancelResult): string {
  switch (result.outcome) {
    case 'cancelled': {
      const was =
        result.record.runAt !== undefined
          ? `it was due ${iso(result.record.runAt)}`
          : result.record.dependsOn !== undefined
            ? 'it was waiting for other jobs'
            : 'its message is deleted when a dispatcher next receives it';
      const dependents = result.record.dependents?.length ?? 0;
      return `cancelled job ${jobId} (${was}); it will not run${dependents > 0 ? `; its ${dependents} dependent(s) count it as failed` : ''}`;
    }
    case 'requested':
      return `job ${jobId} is running: asked it to stop; it ends cancelled within a few seconds (its dependents count it as failed)`;
    case 'not-scheduled':
      return result.record.state === 'cancelled'
        ? `job ${jobId} was already cancelled`
        : result.record.state === 'queued' || result.record.state === 'retrying'
          ? `job ${jobId} is ${result.record.state} on a queue not tracked full: its dispatchers do not claim, so a cancel cannot stop it`
          : `job ${jobId} is ${result.record.state}: it has ended, nothing to cancel`;
    case 'unknown':
      return `no job ${jobId}: nothing to cancel (unknown id, expired by its retention, its queue is not tracked full, or published without a record)`;
  }
}

export function renderFlow(flow: FlowView): string {
  return [
    `flow of job ${flow.root}: ${flow.jobs.length} job(s)${flow.complete ? '' : ` read (more are connected; the walk stops at ${flow.jobs.length})`}`,
    `  ${countsLine(flow.counts)}`,
    table(
      ['  depth', 'job', 'task', 'state'],
      flow.jobs.map((j) => [`  ${j.depth}`, j.jobId, j.task ?? '', stateOf(j)]),
    ),
  ].join('\n');
}

export function renderFlowCancel(r: FlowCancelResult): string {
  if (r.unknown) return `no job ${r.root}: nothing to cancel`;
  return [
    r.cancelled.length > 0
      ? `cancelled ${r.cancelled.length} job(s): ${r.cancelled.join(', ')}`
      : `cancelled nothing: job ${r.root} and the jobs waiting for it are past waiting`,
    ...r.notCancelled.map((n) => `not cancelled: ${n.jobId} is ${n.state}`),
    ...(r.complete ? [] : ['the walk stopped at its bound: run it again for the rest']),
  ].join('\n');
}

export function renderJobList(jobs: readonly JobRecord[]): string {
  if (jobs.length === 0) return 'no jobs';
  const due = jobs.some((j) => j.runAt !== undefined);
  return table(
    ['job', 'task', 'queue', 'state', 'attempts', ...(due ? ['due'] : []), 'updated', 'error'],
    jobs.map((j) => [
      j.jobId,
      j.task,
      j.queue,
      j.reason ? `${j.state} (${j.reason})` : j.state,
      j.attempt,
      ...(due ? [j.runAt === undefined ? '' : iso(j.runAt)] : []),
      iso(j.updatedAt),
      j.lastError ? `${j.lastError.type}: ${j.lastError.message}`.slice(0, 60) : '',
    ]),
  );
}

/** `taskworker keys`: the busiest keys of per-key limits, with each one's running against its limit and its line. */
export function renderKeys(view: KeysView): string {
  if (view.keys.length === 0) return 'no key has a job running or waiting (tasks with limits per key: limits.per "key")';
  return [
    table(
      ['task', 'key', 'running', 'waiting'],
      view.keys.map((k) => [
        k.task,
        k.key === '' ? '(no key)' : k.key,
        k.concurrency === undefined ? k.running : `${k.running}/${k.concurrency}`,
        k.waiting,
      ]),
    ),
    ...(view.busy > view.keys.length ? [`${view.busy - view.keys.length} more keys busy (--limit N shows more)`] : []),
  ].join('\n');
}

/** One key: its limit, its order, the jobs waiting in its line. */
export function renderKeyView(view: KeyView): string {
  const name = `${view.task} ${view.key === '' ? '(no key)' : JSON.stringify(view.key)}`;
  const lines = [`key ${name}`];
  if (view.limit)
    lines.push(
      `  limit: ${view.limit.running} running${view.limit.concurrency !== undefined ? ` of ${view.limit.concurrency}` : ''}, ${view.limit.waiting} waiting in its line`,
    );
  if (view.order)
    lines.push(
      `  order: turn at #${view.order.next}, last #${view.order.last}, ${view.order.pending} not ended` +
        (view.order.gapSince !== undefined
          ? `; #${view.order.next} not found since ${new Date(view.order.gapSince).toISOString()} (skipped after a grace)`
          : ''),
    );
  if (!view.limit && !view.order)
    lines.push('  no limit item and no order for this key (its task limits per key or is ordered; no job of this key was seen)');
  if (view.line.length === 0) lines.push('  no job waiting in its line');
  else
    lines.push(
      table(
        ['place', 'number', 'job', 'state'],
        view.line.map((e) => [e.place, e.number !== undefined ? `#${e.number}` : '', e.jobId, e.state ?? 'sent, not yet received']),
      ),
    );
  return lines.join('\n');
}

const BAR_WIDTH = 40;

/** A histogram of qless buckets as text bars, empty buckets left out. */
export function renderHistogram(title: string, d: DurationStats): string {
  if (d.count === 0) return `${title}: no samples`;
  const sd = Math.sqrt(variance(d));
  const head = `${title}: ${d.count} samples · mean ${formatMs(mean(d))} · sd ${formatMs(sd)} · p50 ≤ ${formatMs(bucketQuantile(d, 0.5))} · p99 ≤ ${formatMs(bucketQuantile(d, 0.99))}`;
  const used = QLESS_BUCKETS.filter((b) => (d.buckets[b] ?? 0) > 0);
  const most = Math.max(...used.map((b) => d.buckets[b] ?? 0));
  const label = (b: string) => (b === 's0' ? '< 1s' : `${b.slice(1)}${b[0]}`);
  const rows = used.map((b) => {
    const n = d.buckets[b] ?? 0;
    return `  ${label(b).padStart(5)} │${'█'.repeat(Math.max(1, Math.round((n / most) * BAR_WIDTH)))} ${n}`;
  });
  return [head, ...rows].join('\n');
}

/** A task day's attributed cost in one line: GB-seconds, SQS requests, write units and the dollars at list prices. */
export function renderCost(c: TaskCost): string {
  return `cost: Lambda ${gbSeconds(c).toFixed(3)} GB-s · SQS ${c.sqsRequests.toFixed(1)} requests · DynamoDB ${c.writeUnits.toFixed(1)} WCU · $${costUsd(c).toFixed(6)} at list prices`;
}

/** Jobs per minute per queue: the minutes with any activity, oldest first, and the window's totals. */
export function renderThroughput(t: Throughput): string {
  const rows: Array<Array<string | number>> = [];
  const totals: Record<string, MinuteCounts> = {};
  t.minutes.forEach((minute, i) => {
    for (const [queue, counts] of Object.entries(t.queues)) {
      const c = counts[i] ?? NO_COUNTS;
      totals[queue] = addCounts(totals[queue] ?? NO_COUNTS, c);
      if (c.started + c.succeeded + c.archived > 0) rows.push([minute.replace('T', ' '), queue, c.started, c.succeeded, c.archived]);
    }
  });
  const source = t.source === 'cloudwatch' ? "CloudWatch (the dispatchers' metrics)" : "the stats table's minute counters";
  const window = `last ${t.minutes.length} min (UTC), from ${source}`;
  if (rows.length === 0) return `no jobs in the ${window}`;
  const sums = Object.entries(totals).map(([queue, c]) => [`total`, queue, c.started, c.succeeded, c.archived]);
  return `${table(['minute', 'queue', 'started', 'succeeded', 'archived'], [...rows, ...sums])}\n${window}`;
}

export function renderStats(days: readonly QueueDayStats[]): string {
  if (days.length === 0) return 'no stats for that day';
  return days
    .map((s) => {
      const counters = Object.entries(s.counters)
        .map(([k, n]) => `${k} ${n}`)
        .join(' · ');
      const archived = Object.entries(s.archived)
        .map(([k, n]) => `${k} ${n}`)
        .join(' · ');
      return [
        `${s.queue.startsWith('task:') ? `task ${s.queue.slice('task:'.length)}` : s.queue} — ${s.day}`,
        `  ${counters || 'no outcomes'}${archived ? ` · archived: ${archived}` : ''}`,
        renderHistogram('  wait (publish → start)', s.wait),
        renderHistogram('  run', s.run),
        ...(s.cost ? [`  ${renderCost(s.cost)}`] : []),
      ].join('\n');
    })
    .join('\n\n');
}

/**
 * `archive list`: a row per message, its detail whole on the lines under it. The detail is what
 * says why (its decisive words often come last: "… (pickle)", "add 'celery' to the queue's
 * accept"), so it is never cut to fit a column.
 */
export function renderArchive(messages: readonly ArchivedMessage[]): string {
  if (messages.length === 0) return 'the archive holds no matching message';
  const [header, rule, ...rows] = table(
    ['archived', 'reason', 'queue', 'task', 'job', 'attempts'],
    messages.map((m) => [
      iso(m.record?.archivedAt),
      m.record?.reason ?? '?',
      m.record?.queue ?? '?',
      m.record?.task ?? '',
      m.record?.jobId ?? m.messageId,
      m.record?.attempts ?? '',
    ]),
  ).split('\n');
  const detail = (m: ArchivedMessage) => (m.record?.detail ? m.record.detail.split('\n').map((line) => `    ${line}`) : []);
  return [header, rule, ...rows.flatMap((row, i) => [row, ...detail(messages[i] as ArchivedMessage)])].join('\n');
}

/** A one-line progress bar, redrawn in place on a terminal. */
export function progressBar(done: number, total: number, width = 30): string {
  const filled = total === 0 ? width : Math.round((done / total) * width);
  return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done}/${total}`;
}

/** Where a job's lines were read, and over what window. */
export function renderJobLogsHeader(logs: JobLogs): string {
  return `job ${logs.jobId}: log lines from ${logs.where}, ${isoUtc(logs.from)} to ${isoUtc(logs.to)}`;
}

/** One line of a job's log: its time, attempt, level and message, then its own fields; the dispatcher's lines say so. */
export function renderJobLogLine(line: JobLogEntry): string {
  const fields = Object.entries(line.fields)
    .map(([key, value]) => `${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`)
    .join(' ');
  const who = line.source === 'task' ? `#${line.attempt ?? '?'}` : '[dispatcher]';
  return `${line.time.replace('T', ' ').replace('Z', ' UTC')}  ${who} ${line.level.toUpperCase()}  ${line.message}${fields ? `  ${fields}` : ''}`;
}

export function renderJobLogs(logs: JobLogs): string {
  return [
    renderJobLogsHeader(logs),
    ...(logs.lines.length === 0
      ? [`no lines${logs.ended ? '' : ' yet (the job has not ended: --follow waits for more)'}`]
      : logs.lines.map(renderJobLogLine)),
  ].join('\n');
}

const isoUtc = (ms: number) => new Date(ms).toISOString().replace('T', ' ').replace('Z', ' UTC');

/** A sleep's or a token wait's step as `jobs show` lists it: its time, and how a token wait ended (or what it waits for). */
export function stepWaitText(job: Pick<JobRecord, 'state' | 'waitToken'>, step: StepEntry): string {
  const wait = step.wait;
  if (!wait) return '';
  if (wait.kind === 'sleep') return `sleep until ${iso(wait.until)}`;
  if (wait.kind === 'continue') return 'continued in a new invocation';
  const what = wait.kind === 'event' ? `event ${wait.event}` : 'token';
  if (step.completedAt !== undefined) return `${what} ${wait.kind === 'event' ? 'received' : 'completed'} ${iso(step.completedAt)}`;
  if (job.waitToken === wait.token && job.state === 'waiting-token') return `waits for token ${wait.token} until ${iso(wait.until)}`;
  if (job.waitToken === wait.token && job.state === 'waiting-event') return `waits for ${what} (${wait.key}) until ${iso(wait.until)}`;
  return job.waitToken === wait.token ? `${what} timed out ${iso(wait.until)}` : `${what}, not yet waited for`;
}
