/** A flow's page (#/flow/ID): every job connected to one by dependencies drawn as a graph, and listed with its state and hops from it. */
import type { FlowView } from '../../api-types';
import { get } from '../api';
import { MAX_DRAWN, STATE_GROUPS } from '../flow-fold';
import { FlowGraphView } from '../flow-graph';
import { ENDED } from '../job-relations';
import { href } from '../routing';
import { REFRESH_MS, useData } from '../use-data';
import { Problem } from '../widgets';

export function FlowPage({ version, id }: { version: string; id: string }) {
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
        {STATE_GROUPS.filter(([, states]) => count(states) > 0 || states[0] !== 'unknown').map(([group, states], i) => (
          <span key={group} data-group={group}>
            {i > 0 ? ' · ' : ''}
            {count(states)} {group}
          </span>
        ))}{' '}
        of {flow.jobs.length} job(s){flow.complete ? '' : ' read (more are connected: the walk stops there)'}
      </p>
      <FlowGraphView flow={flow} />
      {/* A folded flow's list is long: closed until asked for. */}
      <details open={flow.jobs.length <= MAX_DRAWN}>
        <summary>every job, one by one ({flow.jobs.length})</summary>
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
      </details>
    </section>
  );
}
