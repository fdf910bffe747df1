/**
 * The flow page's picture: {@link flowGraph}'s nodes laid out left to right by dagre (a layered
 * graph layout, @dagrejs/dagre) and drawn as SVG — each node coloured by its state, a job's node a
 * link to its page, a folded node counting its jobs.
 */
import dagre from '@dagrejs/dagre';
import type { FlowView } from '../../lib/operate/answers';
import { flowGraph } from './flow-fold';
import { href } from './routing';

const NODE_HEIGHT = 28;
/** Width per label character (the page's monospace-ish 12 px font) and padding. */
const CHAR_WIDTH = 7.2;
const PADDING = 20;

export function FlowGraphView({ flow }: { flow: Pick<FlowView, 'root' | 'jobs' | 'edges'> }) {
  const graph = flowGraph(flow);
  const g = new dagre.graphlib.Graph();
  g.setGraph({ rankdir: 'LR', nodesep: 12, ranksep: 48, marginx: 8, marginy: 8 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const node of graph.nodes) g.setNode(node.id, { width: node.label.length * CHAR_WIDTH + PADDING, height: NODE_HEIGHT });
  for (const [from, to] of graph.edges) g.setEdge(from, to);
  dagre.layout(g);
  const size = g.graph();
  return (
    <figure class="flow-graph" data-testid="flow-graph" data-folded={graph.folded ? 'yes' : 'no'}>
      <svg width={size.width ?? 0} height={size.height ?? 0} role="img" aria-label="the flow's jobs and their links">
        <defs>
          <marker id="arrow" viewBox="0 0 8 8" refX="8" refY="4" markerWidth="8" markerHeight="8" orient="auto">
            <path d="M0,0 L8,4 L0,8 z" class="arrow" />
          </marker>
        </defs>
        {graph.edges.map(([from, to]) => {
          const points = g.edge(from, to)?.points ?? [];
          return (
            <polyline
              key={`${from}>${to}`}
              class="edge"
              points={points.map((p: { x: number; y: number }) => `${p.x},${p.y}`).join(' ')}
              marker-end="url(#arrow)"
            />
          );
        })}
        {graph.nodes.map((node) => {
          const { x, y, width, height } = g.node(node.id);
          const box = (
            <g class={`node ${node.group}${node.root ? ' root' : ''}`} data-node={node.jobId ?? node.id} data-count={node.count}>
              <rect x={x - width / 2} y={y - height / 2} width={width} height={height} rx={4} />
              <text x={x} y={y + 4} text-anchor="middle">
                {node.label}
              </text>
            </g>
          );
          return node.jobId ? (
            <a key={node.id} href={href('job', node.jobId)}>
              {box}
            </a>
          ) : (
            <g key={node.id}>{box}</g>
          );
        })}
      </svg>
      {graph.folded && (
        <figcaption>
          {flow.jobs.length} jobs: those at the same hop with the same task and state are drawn as one node that counts them
        </figcaption>
      )}
    </figure>
  );
}
