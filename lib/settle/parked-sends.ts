/**
 * Parked jobs sent to their queue: the sweep's step (lib/invocation/parked-sweep.ts), a released
 * dependent's (dependents.ts) and an operator's run-now (lib/operate/job-actions.ts). Parked jobs
 * due within SQS's 15 minutes go back to their queue, delayed by exactly the seconds left, so they start within a second of `runAt`. Each job is taken under a short lease (a
 * conditional write: two sweeps never send the same job), sent, then handed over (scheduled →
 * queued, conditional on that lease). A sweep lost between the send and the mark leaves the job
 * parked; once its lease lapses the next sweep sends it again, and the claim stops the second copy
 * (tracked queues; on untracked ones that rare crash runs it twice — never zero times).
 */
import type { Clock } from '../clock';
import { MAX_BATCH_ENTRIES } from '../layout/sqs-limits';
import { SWEEP_LEASE_MS, sweepDelaySeconds } from '../policy/due-times';
import type { Logger, QueueClient, QueueUrls, SendEntry } from '../ports';
import { callWithEntryRetries } from '../retry-entries';
import type { ParkedJob } from '../track/job-record';
import type { ScheduleStore } from '../track/job-stores';
import { markedRecorded } from '../wire/recorded';

export interface SweepDeps {
  readonly jobs: ScheduleStore;
  readonly queues: QueueClient;
  readonly urls: QueueUrls;
  readonly clock: Clock;
  readonly logger: Logger;
}

export interface SweepReport {
  /** Jobs sent to their queue. */
  readonly sent: number;
  /** Of those, marked handed over (the rest are marked by a later sweep or their claim). */
  readonly handedOver: number;
  /** Due jobs left parked for the next sweep (send failed, or out of time). */
  readonly left: number;
}

/**
 * Leases parked jobs, sends them to their queues and hands them over: the sweep's step, and a
 * released dependent's (dependents.ts) at once, without waiting for the next sweep.
 */
export async function sendParked(deps: SweepDeps, page: readonly ParkedJob[], now: number): Promise<SweepReport> {
  const { jobs, clock } = deps;
  const leaseUntil = now + SWEEP_LEASE_MS;
  const leased = (
    await Promise.all(page.map(async (job) => ((await jobs.leaseForSweep(job.jobId, now, leaseUntil)) ? job : undefined)))
  ).filter((job): job is ParkedJob => job !== undefined);
  const sent = await send(deps, leased, now);
  const marks = await Promise.all(sent.map((job) => jobs.handOver(job.jobId, leaseUntil, clock.now()).catch(() => false)));
  return { sent: sent.length, left: leased.length - sent.length, handedOver: marks.filter(Boolean).length };
}

/** Sends leased jobs to their queues in batches; returns the ones SQS took. */
async function send(deps: SweepDeps, jobs: readonly ParkedJob[], now: number): Promise<ParkedJob[]> {
  const byQueue = new Map<string, ParkedJob[]>();
  for (const job of jobs) byQueue.set(job.queue, [...(byQueue.get(job.queue) ?? []), job]);
  const sent: ParkedJob[] = [];
  for (const [queue, group] of byQueue) {
    const url = deps.urls.queues[queue];
    if (!url) {
      deps.logger.error('parked jobs name a queue this version does not have; left parked', { queue, jobs: group.length });
      continue;
    }
    for (let i = 0; i < group.length; i += MAX_BATCH_ENTRIES) {
      const chunk = group.slice(i, i + MAX_BATCH_ENTRIES);
      const entries: SendEntry[] = chunk.map((job, index) => ({
        id: String(index),
        body: job.body,
        delaySeconds: sweepDelaySeconds(job.runAt, now),
        // Its record is there: the claim that takes it expects it (lib/wire/recorded.ts).
        attributes: markedRecorded(job.attributes),
      }));
      const result = await callWithEntryRetries(entries, (e) => deps.queues.sendBatch(url, e), deps.clock);
      const failed = new Set(result.failed.map((f) => f.id));
      for (const f of result.failed) deps.logger.warn('could not send a due job; it stays parked', { queue, error: f.message });
      sent.push(...chunk.filter((_, index) => !failed.has(String(index))));
    }
  }
  return sent;
}
