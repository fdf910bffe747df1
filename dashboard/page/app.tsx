/**
 * The dashboard page: hash routes (#/, #/queue/NAME, #/jobs, #/job/ID, #/flow/ID, #/workers, #/events, #/archive, #/publish) over
 * the server's JSON API. Everything that comes from job data is set as text (Preact escapes it);
 * nothing here sets HTML.
 */
import type { ComponentChildren } from 'preact';
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { FiledRejection } from '../../lib/operate/rejections';
import { addCost, costUsd, gbSeconds, NO_COST, type TaskCost } from '../../lib/track/cost';
import { bucketQuantile, mean, variance } from '../../lib/track/stats';
import type {
  FlowView,
  JobRecord,
  Meta,
  QueueDayStats,
  RelatedJobs,
  ReplayResult,
  StateCount,
  SubscriberView,
  WorkersView,
} from '../api-types';
import { get, post, readOnlyPage } from './api';
import { HistogramChart, mergeDurations, OutcomeChart, ThroughputChart, TrendChart } from './charts';
import { ageClass, atMost, duration, errorText, exactDuration, jobRunMs, jobWaitMs, pretty, utcTime, workerCells } from './format';
import { QueueControlForm } from './queue-control-form';
import { href, useRoute } from './routing';
import { useConfirm } from './use-confirm';
import { REFRESH_MS, useData } from './use-data';
import { ActionButton, Choice, Overridden, Problem } from './widgets';

// ---------------------------------------------------------------- pages

function Overview({ meta, version }: { meta: Meta; version: string }) {
  const { data: status, error, reload } = useData(() => get('/api/status', { version }), [version], REFRESH_MS);
  const confirm = useConfirm();
  /** The queue whose priority and SLA form is open. */
  const [editing, setEditing] = useState<string | undefined>();
  if (!status) return <Problem error={error ?? 'loading…'} />;
  const byName = new Map(meta.queues.map((q) => [q.name, q]));
  const edited = status.queues.find((q) => q.queue === editing);
  return (
    <section>
      <h2>
        Version {status.version} <span class={status.drained ? 'badge ok' : 'badge'}>{status.drained ? 'drained' : 'has work'}</span>
      </h2>
      <Problem error={error} />
      <table class="grid" data-testid="queues">
        <thead>
          <tr>
            <th>queue</th>
            <th>priority</th>
            <th>visible</th>
            <th>in flight</th>
            <th>delayed</th>
            <th>DLQ</th>
            <th>oldest / SLA</th>
            <th>succeeded today</th>
            <th>archived today</th>
            <th>wait p50</th>
            <th>wait p99</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {status.queues.map((q) => {
            const archived = Object.values(q.today?.archived ?? {}).reduce((n, v) => n + (v ?? 0), 0);
            return (
              <tr key={q.queue} data-queue={q.queue}>
                <td>
                  <a href={href('queue', q.queue)}>{q.queue}</a>
                  {q.pausedAt !== undefined && (
                    <span class="badge" data-field="paused" title={`paused since ${new Date(q.pausedAt).toISOString()}`}>
                      paused since {utcTime(q.pausedAt)}
                    </span>
                  )}
                </td>
                <td class="num" data-field="priority">
                  <span data-field="priority-value">{q.priority}</span>
                  {q.overridden.includes('priority') && <Overridden configured={String(q.configuredPriority)} />}
                </td>
                <td class="num" data-field="visible">
                  {q.depth.visible}
                </td>
                <td class="num" data-field="inFlight">
                  {q.depth.inFlight}
                </td>
                <td class="num">{q.depth.delayed}</td>
                <td class="num" data-field="dlq">
                  {q.deadLetter}
                </td>
                <td class={`age ${ageClass(q.oldestAgeSeconds, q.slaSeconds)}`}>
                  {q.oldestAgeSeconds === undefined ? 'n/a' : duration(q.oldestAgeSeconds * 1000)} /{' '}
                  <span data-field="sla-value">{duration(q.slaSeconds * 1000)}</span>
                  {q.overridden.includes('slaSeconds') && <Overridden configured={duration(q.configuredSlaSeconds * 1000)} />}
                </td>
                <td class="num" data-field="succeeded">
                  {q.today?.counters.succeeded ?? 0}
                </td>
                <td class="num" data-field="archived">
                  {archived}
                </td>
                <td class="num">{atMost(q.waitP50Ms)}</td>
                <td class="num">{atMost(q.waitP99Ms)}</td>
                <td>
                  <ActionButton
                    label={q.pausedAt === undefined ? 'Pause' : 'Resume'}
                    onClick={() => {
                      const action = q.pausedAt === undefined ? 'pause' : 'resume';
                      confirm.ask({
                        question:
                          action === 'pause'
                            ? `Pause ${q.queue}? No dispatcher receives from it until it is resumed; publishing still works.`
                            : `Resume ${q.queue}?`,
                        action: async () => {
                          await post('/api/queue/control', { version, queue: q.queue, action });
                          reload();
                          return `${q.queue} ${action === 'pause' ? 'paused' : 'resumed'}`;
                        },
                      });
                    }}
                  />
                  <ActionButton label="Priority/SLA…" onClick={() => setEditing(editing === q.queue ? undefined : q.queue)} />
                  {q.overridden.length > 0 && (
                    <ActionButton
                      label="Reset priority/SLA"
                      onClick={() =>
                        confirm.ask({
                          question: `Return ${q.queue} to its configured priority ${q.configuredPriority} and SLA ${q.configuredSlaSeconds} s?`,
                          action: async () => {
                            await post('/api/queue/control', { version, queue: q.queue, action: 'reset' });
                            reload();
                            return `${q.queue}: priority and SLA as configured`;
                          },
                        })
                      }
                    />
                  )}
                  {q.deadLetter > 0 && (
                    <ActionButton
                      label="Redrive DLQ"
                      onClick={() =>
                        confirm.ask({
                          question: `Move ${q.deadLetter} message(s) from ${q.queue}'s dead-letter queue back to ${q.queue}?`,
                          action: async () => {
                            const [r] = await post('/api/dlq/redrive', {
                              version,
                              queue: q.queue,
                            });
                            reload();
                            return `redrive of ${q.queue}: ${r?.messages ?? 0} message(s), ${r?.status ?? 'nothing to move'}`;
                          },
                        })
                      }
                    />
                  )}
                  {byName.get(q.queue)?.tracking !== 'full' && <span class="note">tracking {byName.get(q.queue)?.tracking}</span>}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
      {edited && !readOnlyPage && (
        <QueueControlForm
          key={edited.queue}
          version={version}
          queue={edited}
          ask={confirm.ask}
          onDone={() => {
            setEditing(undefined);
            reload();
          }}
          onClose={() => setEditing(undefined)}
        />
      )}
      {confirm.view}
      <p>
        Archive: <a href={href('archive')}>{status.archive} message(s)</a>
        {status.localDispatchers ? (
          <>
            {' · '}taskworker dev (pid {status.localDispatchers.pid}):{' '}
            <span data-testid="dispatchers-alive">{status.localDispatchers.alive}</span> function container(s) alive
            {status.localDispatchers.died > 0 ? `, ${status.localDispatchers.died} died and were replaced` : ''}
          </>
        ) : status.invocations?.unavailable === undefined && status.invocations ? (
          <>
            {' · '}
            {status.invocations.functionName}: {status.invocations.invocations} invocation(s), {status.invocations.errors} error(s), at most{' '}
            {status.invocations.maxConcurrent} at once in the last {status.invocations.minutes} min (CloudWatch)
          </>
        ) : (
          ` · recent invocations: ${status.invocations?.unavailable ?? 'no CloudWatch here'}`
        )}
      </p>
      <p class="note">
        Refreshes every {REFRESH_MS / 1000} s · day {status.day} (UTC) · oldest-message age comes from CloudWatch (AWS only)
      </p>
      <ThroughputPanel version={version} />
    </section>
  );
}

/** How often the overview's throughput chart is read again (a minute's counters change at most every flush). */
const THROUGHPUT_REFRESH_MS = 15_000;

/** Jobs started, succeeded and archived per queue and minute over the last hour. */
function ThroughputPanel({ version }: { version: string }) {
  const { data, error } = useData(() => get('/api/throughput', { version, minutes: 60 }), [version], THROUGHPUT_REFRESH_MS);
  return (
    <div data-testid="throughput">
      <h3>Throughput, last hour</h3>
      <Problem error={error} />
      {data ? (
        <>
          <div class="charts">
            <ThroughputChart throughput={data} />
          </div>
          <p class="note">
            Jobs per minute per queue, from{' '}
            {data.source === 'cloudwatch' ? "CloudWatch (the dispatchers' metrics)" : "the stats table's minute counters"} · refreshes every{' '}
            {THROUGHPUT_REFRESH_MS / 1000} s
          </p>
        </>
      ) : null}
    </div>
  );
}

/** A task's attributed cost per day (lib/track/cost.ts): its share of the dispatchers' billed time, requests and write units. */
function CostTable({ days }: { days: readonly QueueDayStats[] }) {
  const costed = days.filter((d): d is QueueDayStats & { cost: TaskCost } => d.cost !== undefined);
  const total = costed.reduce((n, d) => addCost(n, d.cost), NO_COST);
  const row = (label: string, c: TaskCost) => (
    <tr key={label}>
      <td>{label}</td>
      <td class="num">{gbSeconds(c).toFixed(3)}</td>
      <td class="num">{c.sqsRequests.toFixed(1)}</td>
      <td class="num">{c.writeUnits.toFixed(1)}</td>
      <td class="num">${costUsd(c).toFixed(6)}</td>
    </tr>
  );
  return (
    <>
      <h3>Cost (attributed, at list prices)</h3>
      {costed.length === 0 ? (
        <p>No cost attributed in the last 14 days.</p>
      ) : (
        <table class="grid cost">
          <thead>
            <tr>
              <th>day</th>
              <th>Lambda GB-s</th>
              <th>SQS requests</th>
              <th>DynamoDB WCU</th>
              <th>USD</th>
            </tr>
          </thead>
          <tbody>
            {costed.map((d) => row(d.day, d.cost))}
            {row('total', total)}
          </tbody>
        </table>
      )}
    </>
  );
}

/**
 * Wait and run time as the stats' sums give them exactly (jobs, mean, standard deviation, from the
 * count, sum and sum of squares every sample adds), beside the histograms' buckets and the
 * quantiles read off them (a bucket's upper bound).
 */
function ExactDurations({ rows }: { rows: ReadonlyArray<readonly [string, QueueDayStats['wait']]> }) {
  return (
    <table class="grid" data-testid="exact-durations">
      <thead>
        <tr>
          <th />
          <th>jobs</th>
          <th>mean (exact)</th>
          <th>std dev (exact)</th>
          <th>p50 (bucket)</th>
          <th>p99 (bucket)</th>
        </tr>
      </thead>
      <tbody>
        {rows.map(([label, d]) => (
          <tr key={label} data-row={label}>
            <td>{label}</td>
            <td class="num">{d.count}</td>
            <td class="num" data-field="mean">
              {exactDuration(mean(d))}
            </td>
            <td class="num">{exactDuration(Math.sqrt(variance(d)))}</td>
            <td class="num">{atMost(bucketQuantile(d, 0.5))}</td>
            <td class="num">{atMost(bucketQuantile(d, 0.99))}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** A queue's priority and SLA in force (an override marked, the configured value beside it), and the form that changes them. */
function QueueSettings({ version, name }: { version: string; name: string }) {
  const { data: status, error, reload } = useData(() => get('/api/status', { version }), [version], REFRESH_MS * 5);
  const confirm = useConfirm();
  const [editing, setEditing] = useState(false);
  const q = status?.queues.find((x) => x.queue === name);
  if (!q) return <Problem error={error} />;
  return (
    <div data-testid="queue-settings">
      <p>
        priority <span data-field="priority-value">{q.priority}</span>
        {q.overridden.includes('priority') && <Overridden configured={String(q.configuredPriority)} />} · SLA{' '}
        <span data-field="sla-value">{duration(q.slaSeconds * 1000)}</span>
        {q.overridden.includes('slaSeconds') && <Overridden configured={duration(q.configuredSlaSeconds * 1000)} />}
        {q.pausedAt !== undefined && ` · paused since ${utcTime(q.pausedAt)}`}{' '}
        <ActionButton label="Priority/SLA…" onClick={() => setEditing(!editing)} />
      </p>
      {editing && !readOnlyPage && (
        <QueueControlForm
          version={version}
          queue={q}
          ask={confirm.ask}
          onDone={() => {
            setEditing(false);
            reload();
          }}
          onClose={() => setEditing(false)}
        />
      )}
      {confirm.view}
    </div>
  );
}

function QueuePage({ meta, version, name }: { meta: Meta; version: string; name: string }) {
  const isTask = name.startsWith('task:');
  const params = isTask ? { task: name.slice(5) } : { queue: name };
  const { data: days, error } = useData(() => get('/api/history', { version, days: 14, ...params }), [version, name], 10_000);
  if (!days) return <Problem error={error ?? 'loading…'} />;
  const today = days.at(-1);
  const reasons = meta.reasons.filter((r) => days.some((d) => (d.archived[r] ?? 0) > 0));
  const counters = ['succeeded', 'failed', 'retried', 'timedOut', 'duplicates', 'released', 'deferred', 'scheduled'] as const;
  const total = (k: (typeof counters)[number]) => days.reduce((n, d) => n + (d.counters[k] ?? 0), 0);
  const period = { wait: mergeDurations(days.map((d) => d.wait)), run: mergeDurations(days.map((d) => d.run)) };
  return (
    <section>
      <h2>
        {isTask ? 'Task' : 'Queue'} {isTask ? name.slice(5) : name}
      </h2>
      {!isTask && <QueueSettings version={version} name={name} />}
      <Problem error={error} />
      {days.length === 0 ? (
        <p>No activity recorded in the last 14 days.</p>
      ) : (
        <>
          <div class="charts">
            <HistogramChart title={`today (${today?.day})`} wait={today?.wait ?? period.wait} run={today?.run ?? period.run} />
            <HistogramChart title="last 14 days" wait={period.wait} run={period.run} />
            <TrendChart days={days} />
            <OutcomeChart days={days} reasons={reasons} />
          </div>
          <ExactDurations
            rows={[
              [`wait, ${today?.day ?? 'today'}`, today?.wait ?? period.wait],
              [`run, ${today?.day ?? 'today'}`, today?.run ?? period.run],
              ['wait, 14 days', period.wait],
              ['run, 14 days', period.run],
            ]}
          />
          <table class="grid">
            <thead>
              <tr>
                <th>last 14 days</th>
                {counters.map((c) => (
                  <th key={c}>{c}</th>
                ))}
                <th>wait p50</th>
                <th>wait p99</th>
                <th>run p50</th>
                <th>run p99</th>
              </tr>
            </thead>
            <tbody>
              <tr>
                <td>total</td>
                {counters.map((c) => (
                  <td class="num" key={c}>
                    {total(c)}
                  </td>
                ))}
                <td class="num">{atMost(bucketQuantile(period.wait, 0.5))}</td>
                <td class="num">{atMost(bucketQuantile(period.wait, 0.99))}</td>
                <td class="num">{atMost(bucketQuantile(period.run, 0.5))}</td>
                <td class="num">{atMost(bucketQuantile(period.run, 0.99))}</td>
              </tr>
            </tbody>
          </table>
          {isTask && <CostTable days={days} />}
          <h3>Archived by reason</h3>
          <ul>
            {reasons.length === 0 ? <li>none</li> : null}
            {reasons.map((r) => (
              <li key={r}>
                <a href={href('archive', undefined, { reason: r, ...(isTask ? { task: name.slice(5) } : {}) })}>{r}</a>:{' '}
                {days.reduce((n, d) => n + (d.archived[r] ?? 0), 0)}
              </li>
            ))}
          </ul>
        </>
      )}
      {!isTask && (
        <p>
          Tasks of this queue:{' '}
          {meta.tasks
            .filter((t) => t.queue === name)
            .map((t) => (
              <a key={t.name} class="chip" href={href('queue', `task:${t.name}`)}>
                {t.name}
              </a>
            ))}
        </p>
      )}
    </section>
  );
}

/** What a tab is called: the state, and for two what bull-board and Flower call them. */
const TAB_LABELS: Readonly<Record<string, string>> = {
  scheduled: 'scheduled (delayed)',
  waiting: 'waiting (on dependencies)',
};

/** How often the tabs' counts are read again (an index count reads up to its cap of jobs per queue). */
const COUNTS_REFRESH_MS = 15_000;

/** A tab's count as text: `today` counts are the day's, an `index` or `workers` count that stopped short is "at least". */
function countText(c: StateCount | undefined): string {
  if (!c) return '…';
  if (c.count === null) return '?';
  return `${c.count}${c.atLeast ? '+' : ''}${c.source === 'today' ? ' today' : ''}`;
}

function countTitle(c: StateCount | undefined, cap: number): string {
  if (!c) return '';
  switch (c.source) {
    case 'queue':
      return 'messages visible in the queues (SQS, approximate)';
    case 'workers':
      return "held by the live dispatchers at their last beat (every 15 s), confirmed running; '+': more than their beats could name";
    case 'today':
      return 'succeeded today (UTC), from the stats table: succeeded jobs have no index, so counting every one would be a scan';
    case 'index':
      return `from the index, read up to ${cap} per queue ('+': more than that)`;
  }
}

/** Every state as a tab with its count, each counted without a scan (the title says from what). */
function StateTabs(props: { version: string; state: string; queue: string; states: readonly string[]; go: (state: string) => void }) {
  const { data: counts } = useData(
    () => get('/api/jobs/counts', { version: props.version, queue: props.queue }),
    [props.version, props.queue],
    COUNTS_REFRESH_MS,
  );
  return (
    <nav class="tabs" data-testid="state-tabs">
      {props.states.map((s) => {
        const c = counts?.states.find((x) => x.state === s);
        return (
          <a
            key={s}
            href={href('jobs', undefined, { state: s, queue: props.queue })}
            class={s === props.state ? 'current' : ''}
            data-state={s}
            title={countTitle(c, counts?.cap ?? 0)}
            onClick={(e) => {
              e.preventDefault();
              props.go(s);
            }}
          >
            {TAB_LABELS[s] ?? s}{' '}
            <span class="count" data-count>
              {countText(c)}
            </span>
          </a>
        );
      })}
    </nav>
  );
}

function JobsPageView({ meta, version, params }: { meta: Meta; version: string; params: URLSearchParams }) {
  const state = params.get('state') ?? 'archived';
  const queue = params.get('queue') ?? '';
  const task = params.get('task') ?? '';
  const tag = params.get('tag') ?? '';
  const [cursors, setCursors] = useState<string[]>([]);
  const cursor = cursors.at(-1);
  const { data: page, error } = useData(
    () => get('/api/jobs', tag ? { version, tag, limit: 25, cursor } : { version, state, queue, task, limit: 25, cursor }),
    [version, state, queue, task, tag, cursor],
    REFRESH_MS * 2,
    // A scan reads the whole table's worth of capacity: once, not every few seconds.
    (p) => p.scanned === true,
  );
  const [find, setFind] = useState('');
  const [tagInput, setTagInput] = useState(tag);
  useEffect(() => setTagInput(tag), [tag]);
  const go = (patch: Record<string, string>) => {
    setCursors([]);
    location.hash = href('jobs', undefined, { state, queue, task, tag, ...patch });
  };
  return (
    <section>
      <h2>Jobs</h2>
      <form
        class="filters"
        onSubmit={(e) => {
          e.preventDefault();
          if (find.trim()) location.hash = href('job', find.trim());
        }}
      >
        <label>
          Find by id <input name="job-id" value={find} onInput={(e) => setFind((e.target as HTMLInputElement).value)} />
        </label>
        <button type="submit">Open</button>
      </form>
      <form
        class="filters"
        onSubmit={(e) => {
          e.preventDefault();
          go({ tag: tagInput.trim() });
        }}
      >
        <label>
          Tag <input name="tag" value={tagInput} onInput={(e) => setTagInput((e.target as HTMLInputElement).value)} />
        </label>
        <button type="submit" name="filter-tag">
          Filter
        </button>
        {tag && (
          <>
            <span class="note" data-testid="tag-filter">
              jobs tagged {tag}, in every state, newest first
            </span>{' '}
            <button type="button" onClick={() => go({ tag: '' })}>
              Clear tag
            </button>
          </>
        )}
      </form>
      {!tag && <StateTabs version={version} state={state} queue={queue} states={meta.states} go={(s) => go({ state: s })} />}
      <div class="filters">
        {!tag && (
          <>
            <Choice name="queue" value={queue} options={meta.queues.map((q) => q.name)} all onChange={(v) => go({ queue: v })} />
            <Choice name="task" value={task} options={meta.tasks.map((t) => t.name)} all onChange={(v) => go({ task: v })} />
            {task && <span class="note">the tabs count every task of {queue || 'every queue'}</span>}
          </>
        )}
        {page?.scanned && (
          <span class="note" data-testid="scanned">
            {state}: the first {page.jobs.length} a scan of the jobs table found, not necessarily the newest ({state} jobs have no index:
            one would cost an index write on every job; retrying, archived, scheduled, waiting and cancelled are listed newest first from an
            index, running from the live workers); not refreshed
          </span>
        )}
        {page?.fromWorkers && (
          <span class="note" data-testid="from-workers">
            running: {page.fromWorkers.running} held by the live dispatchers at their last beat (every 15 s), confirmed running now, newest
            start first; a job started since its dispatcher's last beat shows at the next
            {page.fromWorkers.uncarried > 0 ? `; ${page.fromWorkers.uncarried} more held that the beats had no room to name` : ''}
          </span>
        )}
      </div>
      <Problem error={error} />
      {page && (
        <>
          <table class="grid" data-testid="jobs">
            <thead>
              <tr>
                <th>job</th>
                <th>task</th>
                <th>queue</th>
                <th>state</th>
                <th>attempt</th>
                <th>reason</th>
                <th>updated</th>
                <th>due</th>
                <th title="publish → first start, as measured">waited</th>
                <th title="the last attempt's start → end, as measured">ran</th>
              </tr>
            </thead>
            <tbody>
              {page.jobs.map((j) => (
                <tr key={j.jobId} data-job={j.jobId}>
                  <td>
                    <a href={href('job', j.jobId)}>{j.jobId}</a>
                  </td>
                  <td>{j.task}</td>
                  <td>{j.queue}</td>
                  <td>{j.state}</td>
                  <td class="num">{j.attempt}</td>
                  <td>{j.reason ?? ''}</td>
                  <td>{utcTime(j.updatedAt)}</td>
                  <td>{j.runAt !== undefined ? utcTime(j.runAt) : ''}</td>
                  <td class="num" data-field="waited">
                    {jobWaitMs(j) === undefined ? '' : exactDuration(jobWaitMs(j))}
                  </td>
                  <td class="num" data-field="ran">
                    {jobRunMs(j) === undefined ? '' : exactDuration(jobRunMs(j))}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          {page.jobs.length === 0 && <p>{tag ? `No jobs tagged ${tag}.` : `No ${state} jobs.`}</p>}
          <p>
            {cursors.length > 0 && (
              <button type="button" onClick={() => setCursors(cursors.slice(0, -1))}>
                Newer
              </button>
            )}
            {page.next && (
              <button type="button" onClick={() => setCursors([...cursors, page.next as string])}>
                Older
              </button>
            )}
          </p>
        </>
      )}
    </section>
  );
}

const ENDED: readonly string[] = ['succeeded', 'archived', 'cancelled'];

function JobPage({ version, id }: { version: string; id: string }) {
  const { data, error, reload } = useData(
    () => get('/api/job', { version, id }),
    [version, id],
    REFRESH_MS,
    // A finished job does not change (nor do its relations once they have all ended); an archived
    // one is looked up in the archive, a walk not to repeat.
    (view) =>
      view.job !== undefined &&
      ENDED.includes(view.job.state) &&
      [view.relations?.dependencies, view.relations?.dependents].every(
        (side) => !side || Object.keys(side.counts).every((state) => ENDED.includes(state)),
      ),
  );
  const confirm = useConfirm();
  if (!data) return <Problem error={error ?? 'loading…'} />;
  const filed = data.filedUnderMessageIds ?? [];
  if (!data.job)
    return (
      <section>
        <h2>
          Job <span data-testid="job-id">{id}</span>
        </h2>
        <Problem error={error} />
        <p data-testid="no-own-record">No job {id} of its own in this version.</p>
        <FiledRejections id={id} filed={filed} own={false} />
      </section>
    );
  const job: JobRecord = data.job;
  let envelope: { payload?: unknown; appData?: unknown } | undefined;
  try {
    envelope = data.archived ? (JSON.parse(data.archived.body) as typeof envelope) : undefined;
  } catch {
    envelope = undefined;
  }
  return (
    <section>
      <h2>
        Job <span data-testid="job-id">{job.jobId}</span> <span class={`badge state-${job.state}`}>{job.state}</span>
      </h2>
      <Problem error={error} />
      <dl class="fields">
        <dt>task</dt>
        <dd>{job.task}</dd>
        <dt>queue</dt>
        <dd>
          <a href={href('queue', job.queue)}>{job.queue}</a>
        </dd>
        {job.event && (
          <>
            <dt>event</dt>
            <dd data-testid="event">
              <a href={href('events')} data-field="event-name">
                {job.event.name}
              </a>{' '}
              <span data-field="event-id">{job.event.id}</span>
              {job.event.source !== undefined && (
                <>
                  {' '}
                  from <span data-field="event-source">{job.event.source}</span>
                </>
              )}
              , emitted <span data-field="event-emitted">{utcTime(job.event.emittedAt)}</span>
            </dd>
          </>
        )}
        <dt>attempts</dt>
        <dd>{job.attempt}</dd>
        {job.reason && (
          <>
            <dt>reason</dt>
            <dd>{job.reason}</dd>
          </>
        )}
        <dt>published</dt>
        <dd>{utcTime(job.publishedAt)}</dd>
        {job.runAt !== undefined && (
          <>
            <dt>due</dt>
            <dd>{utcTime(job.runAt)}</dd>
          </>
        )}
        {job.startBy !== undefined && (
          <>
            <dt>expires</dt>
            <dd title="no attempt starts after it">{utcTime(job.startBy)}</dd>
          </>
        )}
        <dt>first started</dt>
        <dd>{utcTime(job.firstStartedAt)}</dd>
        <dt>finished</dt>
        <dd>{utcTime(job.finishedAt)}</dd>
        {jobWaitMs(job) !== undefined && (
          <>
            <dt>waited</dt>
            <dd data-testid="waited">{exactDuration(jobWaitMs(job))} (publish → first start)</dd>
          </>
        )}
        {jobRunMs(job) !== undefined && (
          <>
            <dt>ran</dt>
            <dd data-testid="ran">
              {exactDuration(jobRunMs(job))} (attempt {job.attempt}: start → {job.state === 'retrying' ? 'failed' : 'end'})
            </dd>
          </>
        )}
        {job.cancelRequestedAt !== undefined && (
          <>
            <dt>cancel asked</dt>
            <dd data-testid="cancel-requested">{utcTime(job.cancelRequestedAt)}</dd>
          </>
        )}
        {job.progress !== undefined && (
          <>
            <dt>progress</dt>
            <dd>
              <code data-testid="progress">{job.progress}</code> · at {utcTime(job.progressAt)}
            </dd>
          </>
        )}
        {job.envelopeId && (
          <>
            <dt>id it carried</dt>
            <dd>{job.envelopeId}</dd>
          </>
        )}
        {job.tags && job.tags.length > 0 && (
          <>
            <dt>tags</dt>
            <dd data-testid="tags">
              {job.tags.map((t) => (
                <a key={t} class="chip" href={href('jobs', undefined, { tag: t })}>
                  {t}
                </a>
              ))}
            </dd>
          </>
        )}
        {job.memberOf && (
          <>
            <dt>member of</dt>
            <dd>
              {job.memberOf.index + 1} of {job.memberOf.size} of fan-in <a href={href('job', job.memberOf.id)}>{job.memberOf.id}</a>
            </dd>
          </>
        )}
      </dl>
      {data.relations && (
        <>
          {data.relations.dependencies && (
            <Related
              title={job.awaits !== undefined ? `Awaits (fan-in of ${job.awaits})` : 'Waits for'}
              testid="dependencies"
              side={data.relations.dependencies}
              note={`on a failure: ${job.onDependencyFailure ?? 'fail'}${
                data.relations.dependencies.firstFailure !== undefined
                  ? ` · ${data.relations.dependencies.firstFailure} did not succeed`
                  : data.relations.dependencies.complete
                    ? ' · all ended'
                    : ''
              }`}
            />
          )}
          {data.relations.dependents && <Related title="Dependents" testid="dependents" side={data.relations.dependents} />}
          <p>
            <a href={href('flow', job.jobId)} data-testid="flow-link">
              Flow view
            </a>
          </p>
        </>
      )}
      {job.state === 'archived' &&
        (data.archived ? (
          <ActionButton
            label="Retry"
            onClick={() =>
              confirm.ask({
                question: `Retry job ${job.jobId}? Its archived message goes back to ${job.queue} with its attempts reset (archive replay of this job).`,
                action: async () => {
                  const r = await post('/api/job/retry', { version, id: job.jobId });
                  reload();
                  return r.outcome === 'retried'
                    ? `sent back to ${r.queue}, attempts reset`
                    : r.outcome === 'skipped'
                      ? `not retried: ${r.why}`
                      : r.outcome === 'not-in-archive'
                        ? 'not retried: its message is no longer in the archive (replayed already, or past its retention)'
                        : `not retried: ${r.outcome}${'record' in r ? ` (${r.record.state})` : ''}`;
                },
              })
            }
          />
        ) : (
          <p class="note" data-testid="not-retryable">
            {job.reason === 'dependency-failed'
              ? 'Archived because a dependency failed: retrying that dependency (from its page) makes this job wait again.'
              : 'Its message is not in the archive (replayed already, or past the archive’s retention): nothing to retry here.'}
          </p>
        ))}
      {job.state === 'scheduled' &&
        (job.announced ? (
          <p class="note" data-testid="not-runnable-now">
            Delayed in SQS until {utcTime(job.runAt)} (published with a delay of 15 minutes or less): SQS cannot bring a delayed message
            forward, so it runs then; it can be cancelled.
          </p>
        ) : (
          <ActionButton
            label="Run now"
            onClick={() =>
              confirm.ask({
                question: `Run job ${job.jobId} now instead of at ${utcTime(job.runAt)}? It is sent to ${job.queue} at once.`,
                action: async () => {
                  const r = await post('/api/job/run-now', { version, id: job.jobId });
                  reload();
                  switch (r.outcome) {
                    case 'sent':
                      return `sent to ${r.queue} now`;
                    case 'due':
                      return 'due now: the send failed, the next sweep sends it (within a minute)';
                    case 'sweeping':
                      return 'not run now: a sweep is sending it for its due time (15 minutes away or nearer)';
                    case 'announced':
                      return 'not run now: its message is delayed in SQS, which cannot bring it forward';
                    case 'not-scheduled':
                      return `not run now: it is ${r.record.state}`;
                    case 'unknown':
                      return 'not run now: no such job';
                  }
                },
              })
            }
          />
        ))}
      {(job.state === 'scheduled' || job.state === 'waiting' || (job.state === 'running' && job.cancelRequestedAt === undefined)) && (
        <ActionButton
          label="Cancel job"
          onClick={() =>
            confirm.ask({
              question:
                job.state === 'running'
                  ? `Cancel running job ${job.jobId}? Its signal fires within a second or two and it ends cancelled (no retry)${data.relations?.dependents ? '; the jobs waiting for it count it as failed' : ''}.`
                  : `Cancel job ${job.jobId}? It will not run${data.relations?.dependents ? '; the jobs waiting for it count it as failed' : ''}.`,
              action: async () => {
                const r = await post('/api/job/cancel', { version, id: job.jobId });
                reload();
                return r.outcome === 'cancelled'
                  ? 'cancelled'
                  : r.outcome === 'requested'
                    ? 'asked it to stop; it ends cancelled within a few seconds'
                    : `not cancelled: ${r.outcome}${'record' in r ? ` (${r.record.state})` : ''}`;
              },
            })
          }
        />
      )}
      {data.relations?.dependents && (
        <ActionButton
          label="Cancel with its dependents"
          onClick={() =>
            confirm.ask({
              question: `Cancel job ${job.jobId} and every job waiting for it, transitively? Those already running or ended are left.`,
              action: async () => {
                const r = await post('/api/flow/cancel', { version, id: job.jobId });
                reload();
                return `cancelled ${r.cancelled.length} job(s)${r.notCancelled.length > 0 ? `; not cancelled: ${r.notCancelled.map((n) => `${n.jobId} (${n.state})`).join(', ')}` : ''}`;
              },
            })
          }
        />
      )}
      {confirm.view}
      <h3>Payload</h3>
      {envelope ? (
        <pre data-testid="payload">{JSON.stringify(envelope.payload, null, 2)}</pre>
      ) : (
        <p class="note">
          The jobs table keeps a digest of the payload, not the payload: it is shown for archived jobs (from the archive message).
        </p>
      )}
      {envelope?.appData !== undefined && (
        <>
          <h3>appData</h3>
          <pre>{JSON.stringify(envelope.appData, null, 2)}</pre>
        </>
      )}
      {job.result !== undefined && (
        <>
          <h3>Result</h3>
          {job.resultRef && (
            <p class="hint" data-testid="result-kept">
              {job.resultRef.bytes.toLocaleString()} bytes of JSON, kept in s3://{job.resultRef.bucket}/{job.resultRef.key}
            </p>
          )}
          <pre data-testid="result">{pretty(job.result)}</pre>
        </>
      )}
      {job.result === undefined && job.resultBytes !== undefined && (
        <>
          <h3>Result</h3>
          <p class="hint" data-testid="result-unread">
            {job.resultRef
              ? `${job.resultRef.bytes.toLocaleString()} bytes of JSON, kept in s3://${job.resultRef.bucket}/${job.resultRef.key}, not shown: ${data.resultUnread ?? 'not read'}. taskworker jobs wait ${job.jobId} --json prints it.`
              : `${job.resultBytes.toLocaleString()} bytes of JSON: too large to keep, not stored.`}
          </p>
        </>
      )}
      {job.lastError && (
        <>
          <h3>Error</h3>
          <pre class="error" data-testid="error">
            {errorText(job.lastError)}
          </pre>
        </>
      )}
      <h3>History</h3>
      <ol class="timeline">
        {job.history.map((h, i) => (
          <li key={i}>
            <time>{utcTime(h.when)}</time> <strong>{h.what}</strong>
            {h.attempt !== undefined ? ` · attempt ${h.attempt}` : ''}
            {h.worker ? ` · ${h.worker}` : ''}
            {h.detail ? ` · ${h.detail}` : ''}
          </li>
        ))}
      </ol>
      {filed.length > 0 && <FiledRejections id={id} filed={filed} own={true} />}
    </section>
  );
}

/** Messages that carried the id and never ran as that job, each kept under its own message id: apart from the job's own record. */
function FiledRejections({ id, filed, own }: { id: string; filed: readonly FiledRejection[]; own: boolean }) {
  return (
    <div data-testid="filed-rejections">
      <h3>
        Messages that carried id {id} and never ran {own ? 'as this job' : ''}
      </h3>
      <p>Archived for their envelope, each kept under its own message id; they did not change {own ? 'this' : 'any'} job.</p>
      <ul>
        {filed.map((f) => (
          <li key={f.messageId}>
            <a href={href('job', f.messageId)}>{f.messageId}</a> · archived {utcTime(f.record.finishedAt ?? f.record.updatedAt)} ·{' '}
            <span data-testid="filed-why">{f.why}</span>
          </li>
        ))}
      </ul>
    </div>
  );
}

/** One side of a job's relations: each job listed as a link with its state, and the states counted. */
function Related({ title, testid, side, note }: { title: string; testid: string; side: RelatedJobs; note?: string }) {
  const counted = Object.entries(side.counts)
    .map(([state, n]) => `${n} ${state}`)
    .join(' · ');
  return (
    <>
      <h3>{title}</h3>
      <p class="note" data-testid={`${testid}-counts`}>
        {side.total} job(s): {counted}
        {side.read < side.total ? ` (states of the first ${side.read})` : ''}
        {note ? ` · ${note}` : ''}
      </p>
      <ul class="related" data-testid={testid}>
        {side.jobs.map((j) => (
          <li key={j.jobId} data-job={j.jobId}>
            <a href={href('job', j.jobId)}>{j.jobId}</a> <span class={`badge state-${j.state}`}>{j.state}</span>
            {j.reason ? ` (${j.reason})` : ''}
            {j.task ? ` · ${j.task}` : ''}
          </li>
        ))}
        {side.total > side.jobs.length && <li class="note">… {side.total - side.jobs.length} more</li>}
      </ul>
    </>
  );
}

/** How a flow's states read at a glance. */
const FLOW_GROUPS: ReadonlyArray<readonly [string, readonly string[]]> = [
  ['waiting', ['waiting', 'scheduled', 'queued']],
  ['running', ['running', 'retrying']],
  ['done', ['succeeded']],
  ['failed', ['archived', 'cancelled']],
  ['unknown', ['unknown']],
];

function FlowPage({ version, id }: { version: string; id: string }) {
  const settled = (f: FlowView) => f.complete && f.jobs.every((j) => ENDED.includes(j.state));
  const { data: flow, error } = useData(() => get('/api/flow', { version, id }), [version, id], REFRESH_MS, settled);
  if (!flow) return <Problem error={error ?? 'loading…'} />;
  const count = (states: readonly string[]) => states.reduce((n, st) => n + (flow.counts[st as keyof FlowView['counts']] ?? 0), 0);
  return (
    <section>
      <h2>
        Flow of job <a href={href('job', flow.root)}>{flow.root}</a>
      </h2>
      <Problem error={error} />
      <p data-testid="flow-progress">
        {FLOW_GROUPS.filter(([, states]) => count(states) > 0 || states[0] !== 'unknown').map(([group, states], i) => (
          <span key={group} data-group={group}>
            {i > 0 ? ' · ' : ''}
            {count(states)} {group}
          </span>
        ))}{' '}
        of {flow.jobs.length} job(s){flow.complete ? '' : ' read (more are connected: the walk stops there)'}
      </p>
      <table class="grid" data-testid="flow">
        <thead>
          <tr>
            <th>job</th>
            <th>task</th>
            <th>state</th>
            <th>hops from {flow.root}</th>
          </tr>
        </thead>
        <tbody>
          {flow.jobs.map((j) => (
            <tr key={j.jobId} data-job={j.jobId}>
              <td>
                <a href={href('job', j.jobId)}>{j.jobId}</a>
              </td>
              <td>{j.task ?? ''}</td>
              <td>
                {j.state}
                {j.reason ? ` (${j.reason})` : ''}
              </td>
              <td class="num">{j.depth}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

function ArchivePage({ meta, version, params }: { meta: Meta; version: string; params: URLSearchParams }) {
  const reason = params.get('reason') ?? '';
  const task = params.get('task') ?? '';
  const {
    data: messages,
    error,
    reload,
  } = useData(() => get('/api/archive', { version, reason, task, limit: 100 }), [version, reason, task]);
  const [selected, setSelected] = useState<ReadonlySet<string>>(new Set());
  const confirm = useConfirm();
  const replayed = (r: ReplayResult) => {
    setSelected(new Set());
    reload();
    return `replayed ${r.replayed} message(s) to their queues (attempts reset)${r.skipped.length ? `; skipped ${r.skipped.map((s) => `${s.messageId}: ${s.why}`).join('; ')}` : ''}`;
  };
  const go = (patch: Record<string, string>) => {
    location.hash = href('archive', undefined, { reason, task, ...patch });
  };
  return (
    <section>
      <h2>Archive</h2>
      <div class="filters">
        <Choice name="reason" value={reason} options={meta.reasons} all onChange={(v) => go({ reason: v })} />
        <Choice name="task" value={task} options={meta.tasks.map((t) => t.name)} all onChange={(v) => go({ task: v })} />
        <ActionButton
          label={`Replay selected (${selected.size})`}
          onClick={() =>
            selected.size > 0 &&
            confirm.ask({
              question: `Replay ${selected.size} selected message(s) to their queues, attempts reset?`,
              action: async () => replayed(await post('/api/archive/replay', { version, messageIds: [...selected] })),
            })
          }
        />
        <ActionButton
          label="Replay all matching…"
          onClick={async () => {
            const { count, capped } = await get('/api/archive/count', { version, reason, task });
            confirm.ask({
              question: `Replay ${capped ? 'at least ' : ''}${count} archived message(s)${reason ? ` with reason ${reason}` : ''}${task ? ` of task ${task}` : ''}?`,
              action: async () => replayed(await post('/api/archive/replay', { version, reason, task, limit: count })),
            });
          }}
        />
      </div>
      {confirm.view}
      <Problem error={error} />
      {messages && (
        <table class="grid" data-testid="archive">
          <thead>
            <tr>
              <th />
              <th>reason</th>
              <th>task</th>
              <th>job</th>
              <th>queue</th>
              <th>attempts</th>
              <th>archived</th>
              <th>error</th>
            </tr>
          </thead>
          <tbody>
            {messages.map((m) => (
              <tr key={m.messageId} data-message={m.messageId}>
                <td>
                  <input
                    type="checkbox"
                    aria-label={`select ${m.messageId}`}
                    checked={selected.has(m.messageId)}
                    onChange={(e) => {
                      const next = new Set(selected);
                      if ((e.target as HTMLInputElement).checked) next.add(m.messageId);
                      else next.delete(m.messageId);
                      setSelected(next);
                    }}
                  />
                </td>
                <td>{m.record?.reason ?? 'no record'}</td>
                <td>{m.record?.task ?? ''}</td>
                <td>{m.record?.jobId ? <a href={href('job', m.record.jobId)}>{m.record.jobId}</a> : ''}</td>
                <td>{m.record?.queue ?? ''}</td>
                <td class="num">{m.record?.attempts ?? ''}</td>
                <td>{utcTime(m.record?.archivedAt)}</td>
                <td class="detail">
                  {m.record?.errorType ? `${m.record.errorType}: ` : ''}
                  {m.record?.detail ?? ''}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {messages && messages.length === 0 && <p>The archive has no message{reason || task ? ' matching' : ''}.</p>}
    </section>
  );
}

function PublishPage({ meta, version }: { meta: Meta; version: string }) {
  const [task, setTask] = useState(meta.tasks[0]?.name ?? '');
  const [payload, setPayload] = useState('{}');
  const [delay, setDelay] = useState('0');
  const [problem, setProblem] = useState<string | undefined>();
  const confirm = useConfirm();
  const chosen = meta.tasks.find((t) => t.name === task);
  return (
    <section>
      <h2>Publish a task</h2>
      <form
        class="publish"
        onSubmit={(e) => {
          e.preventDefault();
          let parsed: unknown;
          try {
            parsed = JSON.parse(payload);
          } catch (error) {
            setProblem(`payload is not JSON: ${error instanceof Error ? error.message : String(error)}`);
            return;
          }
          const seconds = Number(delay);
          if (!Number.isInteger(seconds) || seconds < 0) {
            setProblem(`delay ${delay}: expected whole seconds`);
            return;
          }
          setProblem(undefined);
          confirm.ask({
            question: `Publish ${task} to ${chosen?.queue ?? '?'} in version ${version}${seconds > 0 ? `, ${seconds} s from now` : ''}?`,
            action: async () => {
              const r = await post('/api/publish', {
                version,
                task,
                payload: parsed,
                delaySeconds: seconds,
              });
              return `published job ${r.jobId} to ${r.queue}`;
            },
          });
        }}
      >
        <Choice name="task" value={task} options={meta.tasks.map((t) => t.name)} onChange={setTask} />
        {chosen && (
          <p class="note">
            queue {chosen.queue} · retries {chosen.maxRetries} ·{' '}
            {chosen.validates ? 'payload checked by the task’s validate' : 'no validate'}
          </p>
        )}
        <label>
          payload (JSON)
          <textarea name="payload" rows={8} value={payload} onInput={(e) => setPayload((e.target as HTMLTextAreaElement).value)} />
        </label>
        <label>
          delay (seconds) <input name="delay" value={delay} onInput={(e) => setDelay((e.target as HTMLInputElement).value)} />
        </label>
        <button type="submit" disabled={readOnlyPage}>
          Publish…
        </button>
      </form>
      <Problem error={problem} />
      {confirm.view}
    </section>
  );
}

// ---------------------------------------------------------------- workers

/** Who is working, on what: live dispatcher invocations and vanished ones, with their jobs (links to the job pages). */
function WorkersPage({ version }: { version: string }) {
  const { data: view, error } = useData(() => get('/api/workers', { version }), [version], REFRESH_MS);
  if (!view) return <Problem error={error ?? 'loading…'} />;
  return (
    <section>
      <h2>Workers</h2>
      <Problem error={error} />
      <p data-testid="workers-summary">
        {view.live} working · {view.vanished} vanished
      </p>
      {view.workers.length === 0 ? (
        <p>No dispatcher invocation is working now (none vanished in the last hour).</p>
      ) : (
        <table class="grid" data-testid="workers">
          <thead>
            <tr>
              <th>worker</th>
              <th>where</th>
              <th>since</th>
              <th>deadline in</th>
              <th>last heard</th>
              <th>weights</th>
              <th>jobs</th>
            </tr>
          </thead>
          <tbody>
            {view.workers.map((w: WorkersView['workers'][number]) => {
              const cells = workerCells(w, view.now);
              return (
                <tr key={w.id} data-worker={w.workerId} data-status={w.status} class={w.status === 'vanished' ? 'vanished' : ''}>
                  <td>
                    {w.workerId} <span class="badge">{w.status === 'vanished' ? 'vanished' : w.role}</span>
                  </td>
                  <td>{[w.place.function, w.place.requestId, w.place.container].filter(Boolean).join(' · ')}</td>
                  <td data-field="since">{cells.since}</td>
                  <td class="num">{cells.deadlineIn}</td>
                  <td class="num">{cells.lastHeard}</td>
                  <td data-field="weights">{cells.weights}</td>
                  <td>
                    {w.jobs.length === 0 && w.moreJobs === 0 ? (w.status === 'live' ? 'none' : 'held none') : ''}
                    <ul class="plain">
                      {w.jobs.map((j) => (
                        <li key={j.jobId} data-job={j.jobId}>
                          <a href={href('job', j.jobId)}>{j.jobId}</a> {j.task ?? ''}: <span data-fate>{j.fate}</span>
                        </li>
                      ))}
                      {w.moreJobs > 0 && <li>and {w.moreJobs} more</li>}
                    </ul>
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
    </section>
  );
}

// ---------------------------------------------------------------- events

const EVENTS_REFRESH_MS = 10_000;

/** One event's subscriber tasks in this app: each links to its task page and its queue's, with its task's counts today. */
function Subscribers({ event, subscribers }: { event: string; subscribers: readonly SubscriberView[] }) {
  if (subscribers.length === 0) return <p class="note">No subscriber in this app.</p>;
  return (
    <table class="grid">
      <thead>
        <tr>
          <th>subscriber</th>
          <th>queue</th>
          <th>succeeded today</th>
          <th>retried today</th>
          <th>archived today</th>
        </tr>
      </thead>
      <tbody>
        {subscribers.map((s) => (
          <tr key={s.task} data-event={event} data-subscriber={s.task}>
            <td>
              <a href={href('queue', `task:${s.task}`)}>{s.task}</a>
            </td>
            <td>
              <a href={href('queue', s.queue)}>{s.queue}</a>
            </td>
            <td class="num" data-field="succeeded">
              {s.today?.succeeded ?? '–'}
            </td>
            <td class="num" data-field="retried">
              {s.today?.retried ?? '–'}
            </td>
            <td class="num" data-field="archived">
              {s.today && s.today.archived > 0 ? (
                <a href={href('archive', undefined, { task: s.task })}>{s.today.archived}</a>
              ) : (
                (s.today?.archived ?? '–')
              )}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** `taskworker events`: what the app emits and receives, and each subscriber task here (issue 24). */
function EventsPage({ version }: { version: string }) {
  const { data: view, error } = useData(() => get('/api/events', { version }), [version], EVENTS_REFRESH_MS);
  if (!view) return <Problem error={error ?? 'loading…'} />;
  return (
    <section>
      <h2>Events</h2>
      <Problem error={error} />
      {view.emits.length === 0 && view.receives.length === 0 ? (
        <p data-testid="no-events">This app declares no events and subscribes to none (version {view.version}).</p>
      ) : (
        <p class="note">
          One emit runs every subscriber once, each as its own job ({'<event id>/<task>'}) with its own retries and archive. A subscriber’s
          counts are its task’s today, whatever ran it. Subscribers in other apps are theirs to list.
        </p>
      )}
      {view.emits.map((e) => (
        <div key={`emits ${e.name}`} data-testid="emitted-event" data-name={e.name}>
          <h3>
            {e.name} <span class="badge">emitted here</span>
          </h3>
          {e.description && <p>{e.description}</p>}
          <Subscribers event={e.name} subscribers={e.subscribers} />
        </div>
      ))}
      {view.receives.map((r) => (
        <div key={`receives ${r.app} ${r.name}`} data-testid="received-event" data-name={r.name}>
          <h3>
            {r.name}{' '}
            <span class="badge">
              from {r.app} {r.version}
            </span>
          </h3>
          <Subscribers event={r.name} subscribers={r.subscribers} />
        </div>
      ))}
    </section>
  );
}

// ---------------------------------------------------------------- shell

function App() {
  const route = useRoute();
  const [version, setVersion] = useState<string | undefined>(new URLSearchParams(location.search).get('version') ?? undefined);
  const { data: meta, error } = useData(() => get('/api/meta', { version }), [version]);
  if (!meta) return <Problem error={error ?? 'loading…'} />;
  const v = meta.version;
  let page: ComponentChildren;
  switch (route.page) {
    case 'queue':
      page = <QueuePage meta={meta} version={v} name={route.arg} />;
      break;
    case 'jobs':
      page = <JobsPageView meta={meta} version={v} params={route.params} />;
      break;
    case 'job':
      page = <JobPage version={v} id={route.arg} />;
      break;
    case 'flow':
      page = <FlowPage version={v} id={route.arg} />;
      break;
    case 'archive':
      page = <ArchivePage meta={meta} version={v} params={route.params} />;
      break;
    case 'workers':
      page = <WorkersPage version={v} />;
      break;
    case 'events':
      page = <EventsPage version={v} />;
      break;
    case 'publish':
      page = <PublishPage meta={meta} version={v} />;
      break;
    default:
      page = <Overview meta={meta} version={v} />;
  }
  const nav = [
    ['', 'Overview'],
    ['jobs', 'Jobs'],
    ['workers', 'Workers'],
    ['events', 'Events'],
    ['archive', 'Archive'],
    ['publish', 'Publish'],
  ] as const;
  return (
    <>
      <header>
        <h1>taskworker · {meta.app}</h1>
        <nav>
          {nav.map(([p, label]) => (
            <a key={p} href={href(p)} class={route.page === p ? 'current' : ''}>
              {label}
            </a>
          ))}
        </nav>
        <label class="version">
          version{' '}
          <select
            name="version"
            value={v}
            onChange={(e) => {
              const next = (e.target as HTMLSelectElement).value;
              history.replaceState(null, '', `?version=${encodeURIComponent(next)}${location.hash}`);
              setVersion(next);
            }}
          >
            {meta.versions.map((name) => (
              <option key={name}>{name}</option>
            ))}
          </select>
        </label>
        {meta.readOnly && <span class="badge">read-only</span>}
        <span class="badge">{meta.local ? 'local (taskworker dev)' : 'AWS'}</span>
      </header>
      <main>{page}</main>
    </>
  );
}

const root = document.getElementById('app');
if (root) render(<App />, root);
