import { combineObservers, createDispatcherMetrics, OTHER_TASK, UNREGISTERED_TASK } from '../../functions/metrics';
import { emptySummary, type JobReport, statsOfBatch } from '../../lib/settle/report';

interface EmfDocument {
  _aws: { CloudWatchMetrics: Array<{ Namespace: string; Dimensions: string[][]; Metrics: Array<{ Name: string; Unit: string }> }> };
  [key: string]: unknown;
}

/** EMF documents written to stdout while `act` runs (Powertools writes one JSON line per flush). */
function emitted(act: () => void): EmfDocument[] {
  const lines: string[] = [];
  const spy = jest.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
    lines.push(String(chunk));
    return true;
  });
  try {
    act();
  } finally {
    spy.mockRestore();
  }
  return lines
    .join('')
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as EmfDocument);
}

const env = { TASKWORKER_VERSION: 'v9', POWERTOOLS_SERVICE_NAME: 'shop', POWERTOOLS_METRICS_NAMESPACE: 'Taskworker' };
let nextId = 0;
const job = (overrides: Partial<JobReport>): JobReport => ({ messageId: `m${nextId++}`, outcome: 'succeeded', attempt: 1, ...overrides });

describe('dispatcher metrics (EMF through Powertools Metrics)', () => {
  it('emits a document per queue and one per queue and task, as soon as a batch is settled', () => {
    const { observer } = createDispatcherMetrics({ env });
    const docs = emitted(() =>
      observer.onBatch({
        queue: 'orders',
        settleRetries: 0,
        jobs: [
          job({ task: 'charge', outcome: 'succeeded', waitMs: 120, runMs: 30 }),
          job({ task: 'charge', outcome: 'succeeded', waitMs: 80, runMs: 50 }),
          job({ task: 'email', outcome: 'retried', waitMs: 10, runMs: 5 }),
        ],
      }),
    );
    expect(docs).toHaveLength(3);
    const [queue, ...tasks] = docs;
    expect(queue).toMatchObject({
      service: 'shop',
      version: 'v9',
      queue: 'orders',
      JobsSucceeded: 2,
      JobsRetried: 1,
      WaitTime: [120, 80, 10],
    });
    expect(queue?.task).toBeUndefined();
    expect(queue?._aws.CloudWatchMetrics[0]).toMatchObject({ Namespace: 'Taskworker', Dimensions: [['service', 'version', 'queue']] });
    const charge = tasks.find((d) => d.task === 'charge');
    expect(charge).toMatchObject({
      service: 'shop',
      version: 'v9',
      queue: 'orders',
      JobsSucceeded: 2,
      WaitTime: [120, 80],
      RunTime: [30, 50],
    });
    expect(charge?._aws.CloudWatchMetrics[0]).toMatchObject({ Dimensions: [['service', 'version', 'queue', 'task']] });
    const units = Object.fromEntries(charge?._aws.CloudWatchMetrics[0]?.Metrics.map((m) => [m.Name, m.Unit]) ?? []);
    expect(units).toEqual({ JobsSucceeded: 'Count', WaitTime: 'Milliseconds', RunTime: 'Milliseconds' });
    expect(tasks.find((d) => d.task === 'email')).toMatchObject({ JobsRetried: 1, JobsFailed: 1 });
  });

  it('counts archives by reason, failures, time-outs, releases and unsettled outcomes', () => {
    const { observer } = createDispatcherMetrics({ env });
    const [doc, ...perTask] = emitted(() =>
      observer.onBatch({
        queue: 'orders',
        settleRetries: 1,
        jobs: [
          job({ task: 'build', outcome: 'archived', reason: 'timed-out', runMs: 2000 }),
          job({ task: 'build', outcome: 'archived', reason: 'exhausted', runMs: 40 }),
          // Attempts lost with their workers: archived without running now, so not a failed attempt.
          job({ task: 'build', outcome: 'archived', reason: 'exhausted' }),
          job({ task: 'build', outcome: 'retried', timedOut: true, runMs: 2000 } as Partial<JobReport>),
          job({ task: 'build', outcome: 'released' }),
          job({ task: 'build', outcome: 'succeeded', unsettled: true }),
        ],
      }),
    );
    expect(doc).toMatchObject({
      JobsArchived: 3,
      ArchivedTimedOut: 1,
      ArchivedExhausted: 2,
      JobsRetried: 1,
      JobsFailed: 3,
      JobsTimedOut: 2,
      JobsReleased: 1,
      JobsSucceeded: 1,
      JobsUnsettled: 1,
    });
    expect(perTask).toHaveLength(1);
  });

  it('counts failed attempts by the same rule as the stats table', () => {
    const jobs = [
      job({ outcome: 'retried', runMs: 5 }),
      job({ outcome: 'archived', reason: 'exhausted', runMs: 5 }),
      job({ outcome: 'archived', reason: 'exhausted' }),
      job({ outcome: 'archived', reason: 'invalid-payload', runMs: 1 }),
      job({ outcome: 'archived', reason: 'malformed' }),
      job({ outcome: 'archived', reason: 'id-conflict', task: 'build' }),
      job({ outcome: 'succeeded', runMs: 5 }),
    ];
    const { observer } = createDispatcherMetrics({ env });
    const [doc] = emitted(() => observer.onBatch({ queue: 'orders', settleRetries: 0, jobs }));
    const stats = statsOfBatch({ queue: 'orders', settleRetries: 0, jobs }, Date.UTC(2026, 10, 22));
    expect(doc?.JobsFailed).toBe(3);
    expect(stats.counters.failed).toBe(doc?.JobsFailed);
  });

  it('never turns a task name from a message into a dimension unless the task is registered', () => {
    const { observer } = createDispatcherMetrics({ env, maxTaskValues: 2 });
    const docs = emitted(() =>
      observer.onBatch({
        queue: 'orders',
        settleRetries: 0,
        jobs: [
          job({ task: 'made-up-1', outcome: 'archived', reason: 'unknown-task' }),
          job({ outcome: 'archived', reason: 'malformed' }),
          job({ task: 'a' }),
          job({ task: 'b' }),
          job({ task: 'c' }),
        ],
      }),
    );
    expect(docs.map((d) => d.task ?? '(queue)').sort()).toEqual(['(queue)', OTHER_TASK, UNREGISTERED_TASK, 'a', 'b'].sort());
    expect(docs.find((d) => d.task === UNREGISTERED_TASK)).toMatchObject({ ArchivedUnknownTask: 1, ArchivedMalformed: 1 });
    expect(docs.find((d) => d.task === UNREGISTERED_TASK)?.JobsFailed).toBeUndefined();
  });

  it('names outcomes added later without a code change (e.g. duplicate deliveries)', () => {
    const { observer } = createDispatcherMetrics({ env });
    const docs = emitted(() =>
      observer.onBatch({ queue: 'orders', settleRetries: 0, jobs: [job({ task: 'x', outcome: 'duplicate' as JobReport['outcome'] })] }),
    );
    expect(docs).toEqual([expect.objectContaining({ JobsDuplicate: 1 }), expect.objectContaining({ task: 'x', JobsDuplicate: 1 })]);
  });

  it('emits nothing for an empty batch', () => {
    const { observer } = createDispatcherMetrics({ env });
    expect(emitted(() => observer.onBatch({ queue: 'orders', settleRetries: 0, jobs: [] }))).toEqual([]);
  });

  it('records receive counts per invocation with the version dimensions only', () => {
    const { metrics, recordInvocation } = createDispatcherMetrics({ env });
    const summary = { ...emptySummary(), selections: 12, receives: 30, emptyReceives: 21, errors: 1 };
    const [doc] = emitted(() => {
      recordInvocation(summary);
      metrics.publishStoredMetrics();
    });
    expect(doc).toMatchObject({ Selections: 12, Receives: 30, EmptyReceives: 21, LoopErrors: 1, version: 'v9' });
    expect(doc?._aws.CloudWatchMetrics[0]?.Dimensions).toEqual([['service', 'version']]);
  });
});

describe('combineObservers', () => {
  it('gives every observer the batch even when one throws, then rethrows the first failure', () => {
    const seen: string[] = [];
    const combined = combineObservers(
      {
        onBatch: () => {
          throw new Error('metrics down');
        },
      },
      undefined,
      { onBatch: (r) => seen.push(r.queue) },
    );
    expect(() => combined.onBatch({ queue: 'q', jobs: [], settleRetries: 0 })).toThrow('metrics down');
    expect(seen).toEqual(['q']);
  });
});
