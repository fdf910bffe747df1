/** A flow's page (#/flow/ID): every job connected to one by dependencies, its state and hops from it. */
import type { FlowView } from '../../api-types';
import { get } from '../api';
import { ENDED } from '../job-relations';
import { href } from '../routing';
import { REFRESH_MS, useData } from '../use-data';
import { Problem } from '../widgets';

/** How a flow's states read at a glance. */
const FLOW_GROUPS: ReadonlyArray<readonly [string, readonly string[]]> = [
  ['waiting', ['waiting', 'scheduled', 'queued']],
  ['running', ['running', 'retrying']],
  ['done', ['succeeded']],
  ['failed', ['archived', 'cancelled']],
  ['unknown', ['unknown']],
];

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
