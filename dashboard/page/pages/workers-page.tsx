import type { WorkersView } from '../../api-types';
import { get } from '../api';
import { workerCells } from '../format';
import { href } from '../routing';
import { REFRESH_MS, useData } from '../use-data';
import { Problem } from '../widgets';

/** Who is working, on what: live dispatcher invocations and vanished ones, with their jobs (links to the job pages). */
export function WorkersPage({ version }: { version: string }) {
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
              <th title="resident set against dispatcher.rssLimitMb, and CPU used since the previous beat (100% = one core)">
                memory · CPU
              </th>
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
                  <td class="num" data-field="usage">
                    {cells.usage}
                  </td>
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
