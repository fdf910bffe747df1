/** A queue's or a task's page (#/queue/NAME, #/queue/task:NAME): its settings, charts, exact durations, totals, cost and archive reasons over 14 days. */
import { useState } from 'preact/hooks';
import { addCost, costUsd, gbSeconds, NO_COST } from '../../../lib/policy/cost-attribution';
import { bucketQuantile, mean, variance } from '../../../lib/policy/stat-sums';
import type { TaskCost } from '../../../lib/track/stats-store';
import { STAT_COUNTERS } from '../../../lib/track/stats-store';
import type { Meta, QueueDayStats } from '../../api-types';
import { get, readOnlyPage } from '../api';
import { HistogramChart, mergeDurations, OutcomeChart, TrendChart } from '../charts';
import { atMost, duration, exactDuration, utcTime } from '../format';
import { QueueControlForm } from '../queue-control-form';
import { href } from '../routing';
import { useConfirm } from '../use-confirm';
import { REFRESH_MS, useData } from '../use-data';
import { ActionButton, Overridden, Problem } from '../widgets';

/** A task's attributed cost per day (lib/policy/cost-attribution.ts): its share of the dispatchers' billed time, requests and write units. */
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
        <QueueControlForm version={version} queue={q} ask={confirm.ask} reload={reload} onClose={() => setEditing(false)} />
      )}
      {confirm.view}
    </div>
  );
}

export function QueuePage({ meta, version, name }: { meta: Meta; version: string; name: string }) {
  const isTask = name.startsWith('task:');
  const params = isTask ? { task: name.slice(5) } : { queue: name };
  const { data: days, error } = useData(() => get('/api/history', { version, days: 14, ...params }), [version, name], 10_000);
  if (!days) return <Problem error={error ?? 'loading…'} />;
  const today = days.at(-1);
  const reasons = meta.reasons.filter((r) => days.some((d) => (d.archived[r] ?? 0) > 0));
  // Every counter the stats table keeps, in its order (lib/track/stats-store.ts).
  const counters = STAT_COUNTERS;
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
          {total('batches') > 0 && (
            <p class="batch-calls">
              Batch calls: {total('batches')}, running {total('batched')} jobs — {(total('batched') / total('batches')).toFixed(1)} a call
              on average.
            </p>
          )}
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
