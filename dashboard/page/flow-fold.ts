/**
 * A flow as the graph the flow page draws: every job a node when the flow is small; past
 * {@link MAX_DRAWN} jobs, the jobs at the same hop from the root with the same task and state
 * folded into one node that counts them (a chord's thousands of members become a node per state
 * beside its callback), the links between folded nodes kept once.
 */
import type { FlowView } from '../../lib/operate/answers';

/** The most jobs drawn one by one; a larger flow is folded. */
export const MAX_DRAWN = 120;

/** How a state reads at a glance (the node's colour). */
export const STATE_GROUPS: ReadonlyArray<readonly [string, readonly string[]]> = [
  ['waiting', ['waiting', 'scheduled', 'queued', 'sleeping', 'waiting-token', 'waiting-event', 'waiting-key']],
  ['running', ['running', 'retrying']],
  ['done', ['succeeded']],
  ['failed', ['archived', 'cancelled']],
  ['unknown', ['unknown']],
];

export function stateGroup(state: string): string {
  return STATE_GROUPS.find(([, states]) => states.includes(state))?.[0] ?? 'unknown';
}

export interface FlowNode {
  readonly id: string;
  /** The job's id, or for a folded node the count, state and task. */
  readonly label: string;
  readonly group: string;
  /** The job it opens (a single job's node). */
  readonly jobId?: string;
  /** Jobs it stands for (1 for a job's node). */
  readonly count: number;
  readonly root: boolean;
}

export interface FlowGraph {
  readonly nodes: readonly FlowNode[];
  readonly edges: ReadonlyArray<readonly [string, string]>;
  readonly folded: boolean;
}

export function flowGraph(flow: Pick<FlowView, 'root' | 'jobs' | 'edges'>, maxDrawn = MAX_DRAWN): FlowGraph {
  const folded = flow.jobs.length > maxDrawn;
  const nodeOf = new Map<string, string>();
  const nodes = new Map<string, { id: string; jobs: FlowView['jobs'][number][] }>();
  for (const job of flow.jobs) {
    const key = !folded || job.jobId === flow.root ? `job:${job.jobId}` : `group:${job.depth}:${job.task ?? ''}:${job.state}`;
    nodeOf.set(job.jobId, key);
    const node = nodes.get(key) ?? { id: key, jobs: [] };
    node.jobs.push(job);
    nodes.set(key, node);
  }
  const drawn: FlowNode[] = [...nodes.values()].map(({ id, jobs }) => {
    const [first] = jobs as [FlowView['jobs'][number]];
    const single = jobs.length === 1;
    return {
      id,
      label: single ? first.jobId : `${jobs.length} ${first.state}${first.task ? ` · ${first.task}` : ''}`,
      group: stateGroup(first.state),
      ...(single ? { jobId: first.jobId } : {}),
      count: jobs.length,
      root: first.jobId === flow.root && single,
    };
  });
  const edges = new Map<string, readonly [string, string]>();
  for (const [from, to] of flow.edges) {
    const a = nodeOf.get(from);
    const b = nodeOf.get(to);
    if (a !== undefined && b !== undefined && a !== b) edges.set(`${a}\u0000${b}`, [a, b]);
  }
  return { nodes: drawn, edges: [...edges.values()], folded };
}
