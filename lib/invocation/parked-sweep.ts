/**
 * The sweep of an invocation: every shard of the due index read for parked jobs due within SQS's 15
 * minutes, each page sent by the parked jobs' own path (lib/settle/parked-sends.ts: leased, sent,
 * handed over).
 */
import { describe } from '../errors';
import { DUE_SHARDS, sweepHorizon } from '../policy/due-times';
import { type SweepDeps, type SweepReport, sendParked } from '../settle/parked-sends';

/** Parked jobs read per index query. */
const PAGE = 100;

/** Sweeps every shard in parallel until nothing more is due or `deadline` (epoch ms) passes. Never throws. */
export async function sweepDue(deps: SweepDeps, deadline: number): Promise<SweepReport> {
  const shards = Array.from({ length: DUE_SHARDS }, (_, i) => String(i));
  const reports = await Promise.all(shards.map((shard) => sweepShard(deps, shard, deadline)));
  return reports.reduce((a, r) => ({ sent: a.sent + r.sent, handedOver: a.handedOver + r.handedOver, left: a.left + r.left }), {
    sent: 0,
    handedOver: 0,
    left: 0,
  });
}

async function sweepShard(deps: SweepDeps, shard: string, deadline: number): Promise<SweepReport> {
  const { jobs, clock, logger } = deps;
  const report = { sent: 0, handedOver: 0, left: 0 };
  // The due index is eventually consistent: a job handed over a moment ago may still be listed.
  const seen = new Set<string>();
  try {
    while (clock.now() < deadline) {
      const now = clock.now();
      const page = (await jobs.dueJobs(shard, sweepHorizon(now), now, PAGE)).filter((j) => !seen.has(j.jobId));
      if (page.length === 0) break;
      for (const job of page) seen.add(job.jobId);
      const one = await sendParked(deps, page, now);
      report.sent += one.sent;
      report.left += one.left;
      report.handedOver += one.handedOver;
    }
  } catch (error) {
    logger.error('sweep of parked jobs failed; the next sweep tries again', { shard, error: describe(error) });
  }
  return report;
}
