/**
 * The demo's two summaries of a run (issue 31): the summary table, from the batches the demo saw
 * (addBatch), and the stats section, from the stats table the dispatchers wrote (statsOfBatch,
 * coalesced). They count the same things, so once every batch's stats are written they agree;
 * read before the last batches' stats were written, the stats trailed and looked like a
 * contradiction: `statsBehind` names what they have not counted yet.
 */

import { mergeQueueDay } from '../../lib/policy/stat-sums';
import {
  addBatch,
  archivedTotal,
  type BatchReport,
  emptySummary,
  type JobReport,
  statsBehind,
  statsOfBatch,
} from '../../lib/settle/report';
import type { QueueDayStats } from '../../lib/track/stats-store';

const NOW = Date.UTC(2026, 10, 27, 7, 12);
let n = 0;
const job = (task: string, outcome: JobReport['outcome'], more: Partial<JobReport> = {}): JobReport => ({
  messageId: `m-${n++}`,
  task,
  outcome,
  attempt: 1,
  waitMs: 100,
  runMs: 20,
  ...more,
});

/** The demo's low_priority queue, batch by batch: 33 succeeded, two sync-crm jobs retried twice each then exhausted, a runaway, a malformed message. */
const batches: BatchReport[] = [
  { queue: 'low_priority', settleRetries: 0, jobs: Array.from({ length: 30 }, () => job('rebuild-index', 'succeeded')) },
  {
    queue: 'low_priority',
    settleRetries: 0,
    jobs: [
      job('sync-crm', 'retried'),
      job('sync-crm', 'retried'),
      job('build-report', 'archived', { reason: 'timed-out', timedOut: true, runMs: 2_000 }),
      { messageId: 'm-bad', outcome: 'archived', reason: 'malformed', attempt: 1 },
    ],
  },
  {
    queue: 'low_priority',
    settleRetries: 0,
    jobs: [job('sync-crm', 'retried', { attempt: 2 }), job('sync-crm', 'retried', { attempt: 2 })],
  },
  {
    queue: 'low_priority',
    settleRetries: 0,
    jobs: [
      job('sync-crm', 'archived', { reason: 'exhausted', attempt: 3 }),
      job('sync-crm', 'archived', { reason: 'exhausted', attempt: 3 }),
      ...Array.from({ length: 3 }, () => job('award-loyalty-points', 'succeeded')),
    ],
  },
];

const statsOf = (written: readonly BatchReport[]): QueueDayStats | undefined =>
  written.map((b) => statsOfBatch(b, NOW)).reduce<QueueDayStats | undefined>((day, d) => (day ? mergeQueueDay(day, d) : d), undefined);

describe("the demo's summary table and its stats section", () => {
  const summary = emptySummary();
  for (const batch of batches) addBatch(summary, batch);
  const q = summary.queues.low_priority;

  it('count the same things once every batch is written: succeeded and archived per job, retried per retried attempt', () => {
    expect(q && [q.succeeded, q.retried, archivedTotal(q)]).toEqual([33, 4, 4]);
    const day = statsOf(batches);
    expect(day?.counters).toMatchObject({ succeeded: 33, retried: 4 });
    expect(day?.archived).toEqual({ 'timed-out': 1, malformed: 1, exhausted: 2 });
    expect(statsBehind(q, day)).toEqual([]);
  });

  it('name what the stats have not counted yet when the last batches are still held by their dispatcher', () => {
    // What the tester saw: the stats read before the last two batches' flush.
    expect(statsBehind(q, statsOf(batches.slice(0, 2)))).toEqual(['succeeded 30 of 33', 'retried 2 of 4', 'archived exhausted 0 of 2']);
    expect(statsBehind(q, undefined)).toEqual([
      'succeeded 0 of 33',
      'retried 0 of 4',
      'archived timed-out 0 of 1',
      'archived malformed 0 of 1',
      'archived exhausted 0 of 2',
    ]);
    expect(statsBehind(undefined, statsOf(batches))).toEqual([]);
  });
});
