/** The overview (#/): every queue's depth, age against its SLA, today's outcomes and actions, and the last hour's throughput. */
import { useState } from 'preact/hooks';
import type { Meta } from '../../api-types';
import { get, post, readOnlyPage } from '../api';
import { ThroughputChart } from '../charts';
import { ageClass, atMost, duration, utcTime } from '../format';
import { QueueControlForm } from '../queue-control-form';
import { href } from '../routing';
import { useConfirm } from '../use-confirm';
import { REFRESH_MS, useData } from '../use-data';
import { ActionButton, Overridden, Problem } from '../widgets';

export function Overview({ meta, version }: { meta: Meta; version: string }) {
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
      {status.rateLimits.length > 0 && (
        <ul class="rate-limits" data-testid="rate-limits">
          {status.rateLimits.map((p) => (
            <li key={p.scope} data-scope={p.scope}>
              rate limited: <code>{p.scope}</code> held until {utcTime(p.until)} ({duration(Math.max(0, p.until - status.now))} left)
            </li>
          ))}
        </ul>
      )}
      {edited && !readOnlyPage && (
        <QueueControlForm
          key={edited.queue}
          version={version}
          queue={edited}
          ask={confirm.ask}
          reload={reload}
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
