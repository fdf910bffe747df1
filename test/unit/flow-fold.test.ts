/**
 * The flow page's graph (dashboard/page/flow-fold.ts): small flows drawn job by job with their
 * links; a chord past the drawing bound folded into a node per hop, task and state beside its
 * callback, the links kept once between the folded nodes.
 */
import { flowGraph, stateGroup } from '../../dashboard/page/flow-fold';
import type { FlowView } from '../../lib/operate/answers';

type Job = FlowView['jobs'][number];
const job = (jobId: string, state: Job['state'], depth: number, task = 'step'): Job => ({ jobId, state, depth, task });

describe('flowGraph', () => {
  it('draws a small flow job by job: a diamond keeps its four links', () => {
    const graph = flowGraph({
      root: 'a',
      jobs: [job('a', 'succeeded', 0), job('b', 'running', 1), job('c', 'waiting', 1), job('d', 'waiting', 2)],
      edges: [
        ['a', 'b'],
        ['a', 'c'],
        ['b', 'd'],
        ['c', 'd'],
      ],
    });
    expect(graph.folded).toBe(false);
    expect(graph.nodes.map((n) => [n.label, n.group, n.jobId, n.root])).toEqual([
      ['a', 'done', 'a', true],
      ['b', 'running', 'b', false],
      ['c', 'waiting', 'c', false],
      ['d', 'waiting', 'd', false],
    ]);
    expect(graph.edges).toHaveLength(4);
  });

  it('folds a chord of 200 into a node per state beside its callback, each link once', () => {
    const members = Array.from({ length: 200 }, (_, i) =>
      job(`cb.${i}`, i < 150 ? 'succeeded' : i < 190 ? 'running' : 'archived', 1, 'part'),
    );
    const graph = flowGraph({
      root: 'cb',
      jobs: [job('cb', 'waiting', 0, 'merge'), ...members],
      edges: members.map((m) => [m.jobId, 'cb'] as const),
    });
    expect(graph.folded).toBe(true);
    expect(graph.nodes.map((n) => [n.label, n.group, n.count])).toEqual([
      ['cb', 'waiting', 1],
      ['150 succeeded · part', 'done', 150],
      ['40 running · part', 'running', 40],
      ['10 archived · part', 'failed', 10],
    ]);
    expect(graph.nodes[0]?.jobId).toBe('cb');
    expect(graph.nodes.slice(1).every((n) => n.jobId === undefined)).toBe(true);
    expect(graph.edges).toEqual([
      ['group:1:part:succeeded', 'job:cb'],
      ['group:1:part:running', 'job:cb'],
      ['group:1:part:archived', 'job:cb'],
    ]);
  });

  it('draws a state only one folded member is in as that job, a node that opens it, still counted', () => {
    const members = Array.from({ length: 200 }, (_, i) => job(`cb.${i}`, i < 199 ? 'succeeded' : 'running', 1, 'part'));
    const graph = flowGraph({
      root: 'cb',
      jobs: [job('cb', 'waiting', 0, 'merge'), ...members],
      edges: members.map((m) => [m.jobId, 'cb'] as const),
    });
    expect(graph.nodes.map((n) => [n.label, n.count, n.jobId])).toEqual([
      ['cb', 1, 'cb'],
      ['199 succeeded · part', 199, undefined],
      ['cb.199', 1, 'cb.199'],
    ]);
    expect(graph.edges).toHaveLength(2);
  });

  it('groups states as the badges colour them', () => {
    expect(['queued', 'retrying', 'succeeded', 'cancelled', 'unknown', 'deduplicated'].map(stateGroup)).toEqual([
      'waiting',
      'running',
      'done',
      'failed',
      'unknown',
      'unknown',
    ]);
  });
});
