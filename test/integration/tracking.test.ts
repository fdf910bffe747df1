import { existsSync, writeFileSync } from 'node:fs';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { taskStatsKey, utcDay } from '../../lib/policy/stat-sums';
import type { QueueClient } from '../../lib/ports';
import type { ClaimRequest } from '../../lib/track/job-record';
import type { JobStore } from '../../lib/track/job-stores';
import { encodeEnvelope } from '../../lib/wire/envelope';
import { tempFile } from '../helpers/emulators';
import { eventually, readJournal } from '../helpers/run';
import { type System, systemPerTest } from '../helpers/system';

const fresh = systemPerTest();
const tracked = () => fresh({ tracked: true });

/** Runs dispatchers until `done`, then stops them. */
async function runAll(
  runtimes: System['runtime'][],
  what: string,
  done: () => Promise<boolean> | boolean,
  timeoutMs = 30_000,
): Promise<void> {
  const stop = new AbortController();
  const running = runtimes.map((r) => r.invoke(Date.now() + 60_000, stop.signal));
  try {
    await eventually(what, done, timeoutMs);
  } finally {
    stop.abort();
    await Promise.all(running);
  }
}

/**
 * A queue client that makes each message visible again right after its first receive, as if its
 * visibility expired mid-run. (Once: a dispatcher keeps receiving while its tasks run, so a
 * message exposed on every receive would burn its receive count into the DLQ within milliseconds.)
 */
function expiring(inner: QueueClient): QueueClient {
  const expired = new Set<string>();
  return {
    receive: async (url, request, signal) => {
      const messages = await inner.receive(url, request, signal);
      const first = messages.filter((m) => !expired.has(m.messageId));
      if (first.length > 0) {
        for (const m of first) expired.add(m.messageId);
        await inner.changeVisibilityBatch(
          url,
          first.map((m) => ({ id: m.messageId, receiptHandle: m.receiptHandle, visibilityTimeoutSeconds: 0 })),
        );
      }
      return messages;
    },
    sendBatch: (url, entries) => inner.sendBatch(url, entries),
    deleteBatch: (url, entries) => inner.deleteBatch(url, entries),
    changeVisibilityBatch: (url, entries) => inner.changeVisibilityBatch(url, entries),
    depth: (url) => inner.depth(url),
  };
}

/** A worker stuck in its first batch: after one receive that returned messages, it receives nothing more. */
function stuck(inner: QueueClient): QueueClient {
  let received = false;
  return {
    receive: async (url, request, signal) => {
      if (received) return [];
      const messages = await inner.receive(url, request, signal);
      received = messages.length > 0;
      return messages;
    },
    sendBatch: (url, entries) => inner.sendBatch(url, entries),
    deleteBatch: (url, entries) => inner.deleteBatch(url, entries),
    changeVisibilityBatch: (url, entries) => inner.changeVisibilityBatch(url, entries),
    depth: (url) => inner.depth(url),
  };
}

describe('job tracking (full mode) on fauxqs + dynalite', () => {
  it('records a job from publish to success, with its result and history', async () => {
    const s = await tracked();
    const journal = tempFile('journal.jsonl');
    const { jobId } = await s.publisher.publish('record', { journal, n: 5 });
    expect(await s.tracking?.jobs?.get(jobId)).toMatchObject({ state: 'queued', attempt: 0, version: s.version });
    await runAll([s.runtime], 'the job', () => s.jobs().length === 1);
    const record = await s.tracking?.jobs?.get(jobId);
    expect(record).toMatchObject({ state: 'succeeded', attempt: 1, task: 'record', queue: 'urgent', result: '{"n":5}' });
    expect(record?.leaseOwner).toBeUndefined();
    expect(record?.history.map((e) => [e.what, e.attempt])).toEqual([
      ['queued', undefined],
      ['started', 1],
      ['succeeded', 1],
    ]);
    expect(record?.lastStartedAt).toBeGreaterThanOrEqual(record?.publishedAt ?? Number.POSITIVE_INFINITY);
  });

  it('runs the same envelope delivered twice only once: the second delivery ends skipped-duplicate', async () => {
    const s = await tracked();
    const journal = tempFile('journal.jsonl');
    const body = encodeEnvelope({ task: 'record', payload: { journal, n: 1 }, id: 'order-42-confirmation' });
    for (let i = 0; i < 2; i++) await s.sqs.sqs.send(new SendMessageCommand({ QueueUrl: s.urls.queues.urgent, MessageBody: body }));
    await runAll(
      [s.runtime],
      'both deliveries to settle',
      async () => s.jobs().some((j) => j.outcome === 'duplicate') && (await s.drained('urgent')),
    );
    expect(readJournal(journal)).toHaveLength(1);
    const outcomes = s.jobs().map((j) => j.outcome);
    expect(outcomes.filter((o) => o === 'succeeded')).toHaveLength(1);
    expect(outcomes.filter((o) => o === 'duplicate')).toHaveLength(1);
    const record = await s.tracking?.jobs?.get('order-42-confirmation');
    expect(record?.history.map((e) => e.what)).toEqual(['started', 'succeeded', 'skipped-duplicate']);
  });

  it('does not run a task again when its message becomes visible while it still runs', async () => {
    const s = await tracked();
    const journal = tempFile('journal.jsonl');
    const slow = s.dispatcher({ wrapQueues: expiring, workerId: 'slow' });
    const { jobId } = await s.publisher.publish('nap', { journal, ms: 800 });
    const slowRun = slow.invoke(Date.now() + 60_000, AbortSignal.timeout(5000));
    await eventually('the first delivery to start', async () => (await s.tracking?.jobs?.get(jobId))?.state === 'running');
    // The message is visible again while its task runs: another dispatcher receives it.
    const other = s.dispatcher({ workerId: 'other' });
    await runAll(
      [other],
      'the redelivery to end as a duplicate',
      async () => s.jobs().some((j) => j.outcome === 'duplicate') && (await s.drained('urgent')),
    );
    await slowRun;
    expect(readJournal(journal)).toHaveLength(1);
    expect(s.jobs().filter((j) => j.outcome === 'succeeded')).toHaveLength(1);
    const record = await s.tracking?.jobs?.get(jobId);
    expect(record).toMatchObject({ state: 'succeeded', attempt: 1 });
    const history = record?.history.map((e) => [e.what, e.worker]) ?? [];
    expect(history.slice(0, 3)).toEqual([
      ['queued', undefined],
      ['started', 'slow'],
      ['succeeded', 'slow'],
    ]);
    // Every later delivery, from either dispatcher, was skipped.
    expect(new Set(history.slice(3).map(([what]) => what))).toEqual(new Set(['skipped-duplicate']));
  });

  it("rejects a stale worker's completion after a takeover: the newer outcome stands", async () => {
    const s = await tracked();
    const journal = tempFile('journal.jsonl');
    // The stale worker's leases lapse at once, its message reappears at once, and it is stuck in that run.
    const shortLeases = (jobs: JobStore): JobStore =>
      Object.assign(Object.create(jobs) as JobStore, {
        claim: (request: ClaimRequest) => jobs.claim({ ...request, leaseUntil: request.now + 1 }),
        extendLease: async () => true,
      });
    const stale = s.dispatcher({ wrapQueues: (q) => stuck(expiring(q)), wrapJobs: shortLeases, workerId: 'stale' });
    // Both bodies run until the gate opens, and it opens once the fresh worker has taken over: the
    // stale completion comes after the takeover however slowly either dispatcher starts.
    const gate = tempFile('gate');
    const fresh = s.dispatcher({ workerId: 'fresh' });
    // The fresh worker's threads are up before the stale one starts (an invocation on the empty
    // queue), so its takeover is a receive away, well within the held body's 4 s limit.
    await fresh.invoke(Date.now() + 1000);
    const { jobId } = await s.publisher.publish('held', { journal, gate });
    const stopStale = new AbortController();
    const staleRun = stale.invoke(Date.now() + 60_000, stopStale.signal);
    await eventually('the stale worker to start', async () => (await s.tracking?.jobs?.get(jobId))?.state === 'running');
    const tookOver = async () => (await s.tracking?.jobs?.get(jobId))?.history.some((e) => e.what === 'took-over') === true;
    await runAll([fresh], 'the newer attempt and the stale outcome', async () => {
      if (!existsSync(gate) && (await tookOver())) writeFileSync(gate, '');
      return s.jobs().some((j) => j.outcome === 'stale') && s.jobs().some((j) => j.outcome === 'succeeded');
    });
    stopStale.abort();
    await staleRun;
    const record = await s.tracking?.jobs?.get(jobId);
    expect(record).toMatchObject({ state: 'succeeded', attempt: 2 });
    expect(record?.history.map((e) => [e.what, e.worker])).toEqual([
      ['queued', undefined],
      ['started', 'stale'],
      ['took-over', 'fresh'],
      ['succeeded', 'fresh'],
    ]);
    // Both bodies ran (the first was not stopped), each with its own fencing token.
    expect(
      readJournal(journal)
        .map((e) => e.fencingToken)
        .sort(),
    ).toEqual([1, 2]);
  });

  it('keeps stats whose counters and histogram totals equal the ground truth', async () => {
    const s = await tracked();
    const journal = tempFile('journal.jsonl');
    const startDay = utcDay(Date.now());
    await s.publisher.publishBatch([
      ...Array.from({ length: 20 }, (_, n) => ({ task: 'record', payload: { journal, n } })),
      ...Array.from({ length: 3 }, () => ({ task: 'flaky', payload: { journal, succeedOn: 2 } })),
      ...Array.from({ length: 2 }, () => ({ task: 'doomed', payload: {} })),
      { task: 'doomed', payload: { fatal: true } },
      { task: 'spin', payload: {} },
    ]);
    for (const body of ['not json', '{"task":"ghost"}'])
      await s.sqs.sqs.send(new SendMessageCommand({ QueueUrl: s.urls.queues.urgent, MessageBody: body }));
    await runAll(
      [s.runtime],
      'every job to settle',
      async () =>
        s.jobs().filter((j) => j.outcome === 'succeeded' || j.outcome === 'archived').length === 29 && (await s.drained('urgent')),
    );
    const days = [...new Set([startDay, utcDay(Date.now())])];
    const stats = await Promise.all(days.map((d) => s.tracking?.stats?.get('urgent', d)));
    const sum = (pick: (x: NonNullable<(typeof stats)[number]>) => number | undefined) =>
      stats.reduce((n, x) => n + (x ? (pick(x) ?? 0) : 0), 0);
    // Ground truth from what was published: 20 + 3 successes; flaky fails once each, doomed once
    // each before its last attempt; four jobs end archived after running, two never ran.
    expect(sum((x) => x.counters.succeeded)).toBe(23);
    expect(sum((x) => x.counters.retried)).toBe(5);
    expect(sum((x) => x.counters.failed)).toBe(9);
    expect(sum((x) => x.counters.timedOut)).toBe(1);
    expect(sum((x) => x.archived.exhausted)).toBe(2);
    expect(sum((x) => x.archived.unrecoverable)).toBe(1);
    expect(sum((x) => x.archived['timed-out'])).toBe(1);
    expect(sum((x) => x.archived.malformed)).toBe(1);
    expect(sum((x) => x.archived['unknown-task'])).toBe(1);
    const runs = 23 + 5 + 4;
    expect(sum((x) => x.wait.count)).toBe(runs);
    expect(sum((x) => x.run.count)).toBe(runs);
    expect(sum((x) => Object.values(x.wait.buckets).reduce((a, b) => a + b, 0))).toBe(runs);
    expect(sum((x) => Object.values(x.run.buckets).reduce((a, b) => a + b, 0))).toBe(runs);
    expect(sum((x) => x.run.sum)).toBeGreaterThanOrEqual(1000);
    // Each registered task's day carries its attributed cost (lib/policy/cost-attribution.ts): requests and write
    // units the dispatcher's clients counted, and billed time.
    const costs = await Promise.all(
      ['record', 'flaky', 'doomed', 'spin'].map(
        async (task) => (await s.tracking?.stats?.get(taskStatsKey(task), utcDay(Date.now())))?.cost,
      ),
    );
    // (How the billed time is shared by run time is lib/policy/cost-attribution.ts's unit test: measured run
    // times compared here would depend on how busy the machine is.) Requests and write units are shared by
    // message, so every task has some. Billed time is shared by run time within a batch, so a task whose
    // bodies took 0 ms (doomed throws at once) gets none when it shares a batch with one that ran, and
    // which jobs share a batch depends on the machine's speed (found beside two busy loops): only spin,
    // which runs to its 1 s time limit, always has a share.
    for (const cost of costs) {
      expect(cost?.sqsRequests).toBeGreaterThan(0);
      expect(cost?.writeUnits).toBeGreaterThan(0);
      expect(cost?.lambdaMbMs).toBeGreaterThanOrEqual(0);
    }
    expect(costs[3]?.lambdaMbMs).toBeGreaterThan(0);
  });
});
