/** `status` and `stats`: a version's queues and today's figures, its throughput per minute, and stats history. */
import { queueResourceName } from '../layout/queues';
import { bucketQuantile, utcDay } from '../policy/stat-sums';
import { lastMinutes, NO_COUNTS, type Throughput } from '../policy/throughput';
import type { QueueDepth } from '../ports';
import { NO_CONTROLS } from '../track/operator-controls';
import type { MinuteCounts, QueueDayStats } from '../track/stats-store';
import type { OperatorContext } from './operator-context';
import { controlView, type QueueControlView } from './queue-controls';

/**
 * Jobs started, succeeded and archived per queue and minute over the last `minutes` (1..180):
 * from CloudWatch where the context has it (AWS) and it answers, else from the stats table's minute counters
 * (`taskworker dev`; one BatchGetItem per queue).
 */
export async function throughput(ctx: OperatorContext, minutes: number): Promise<Throughput> {
  const keys = lastMinutes(ctx.clock.now(), minutes);
  const queues = ctx.config.queues.map((q) => q.name);
  if (ctx.metricsThroughput) {
    // A refusal (no cloudwatch:GetMetricData on these credentials) falls back to the stats table.
    const counts = await ctx
      .metricsThroughput({ service: ctx.config.app, version: ctx.version, queues, minutes: keys })
      .catch(() => undefined);
    if (counts) return { source: 'cloudwatch', minutes: keys, queues: counts };
  }
  const read = ctx.stats.minutes;
  const entries = await Promise.all(
    queues.map(async (queue): Promise<[string, MinuteCounts[]]> => {
      const found = read ? await read.call(ctx.stats, queue, keys) : {};
      return [queue, keys.map((k) => found[k] ?? NO_COUNTS)];
    }),
  );
  return { source: 'stats', minutes: keys, queues: Object.fromEntries(entries) };
}

export interface QueueStatus extends QueueControlView {
  readonly queue: string;
  /** The priority in force: an operator's override, else the config's ({@link QueueControlView}). */
  readonly priority: number;
  readonly depth: QueueDepth;
  readonly deadLetter: number;
  /** Seconds; undefined where CloudWatch is not available. */
  readonly oldestAgeSeconds: number | undefined;
  /** The SLA in force, seconds. */
  readonly slaSeconds: number;
  /** Today's wait (publish → start) from the stats table, ms. */
  readonly waitP50Ms: number;
  readonly waitP99Ms: number;
  readonly today: QueueDayStats | undefined;
}

export interface VersionStatus {
  readonly version: string;
  readonly day: string;
  readonly queues: readonly QueueStatus[];
  readonly archive: number;
  /** Nothing visible, in flight or delayed on any queue: safe to destroy once the DLQs and archive are handled. */
  readonly drained: boolean;
  /** Rate-limit pauses in force (RateLimitedError): each scope held until `until` (epoch ms), the soonest to end first. */
  readonly rateLimits: readonly RateLimitPause[];
}

export interface RateLimitPause {
  /** `task:<task>`, `key:<task>:<key>` or `queue:<queue>`. */
  readonly scope: string;
  readonly until: number;
}

export async function versionStatus(ctx: OperatorContext): Promise<VersionStatus> {
  const day = utcDay(ctx.clock.now());
  const names = ctx.config.queues.map((q) => queueResourceName(ctx.config.app, ctx.version, q.name));
  const ages = ctx.oldestAge ? await ctx.oldestAge(names).catch(() => ({}) as Record<string, number | undefined>) : {};
  // Consistent: an operator who just paused a queue sees it paused.
  const controls = ctx.controls ? await ctx.controls.read(true) : NO_CONTROLS;
  const queues = await Promise.all(
    ctx.config.queues.map(async (q, i): Promise<QueueStatus> => {
      const [depth, dlq, today] = await Promise.all([
        ctx.queues.depth(ctx.urls.queues[q.name] as string),
        ctx.queues.depth(ctx.urls.deadLetter[q.name] as string),
        ctx.stats.get(q.name, day),
      ]);
      return {
        queue: q.name,
        ...controlView(q, controls.queues[q.name]),
        depth,
        deadLetter: dlq.visible + dlq.inFlight + dlq.delayed,
        oldestAgeSeconds: ages[names[i] as string],
        waitP50Ms: today ? bucketQuantile(today.wait, 0.5) : Number.NaN,
        waitP99Ms: today ? bucketQuantile(today.wait, 0.99) : Number.NaN,
        today,
      };
    }),
  );
  const archive = await ctx.queues.depth(ctx.urls.archive);
  return {
    version: ctx.version,
    day,
    queues,
    archive: archive.visible + archive.inFlight + archive.delayed,
    drained: queues.every((q) => q.depth.visible + q.depth.inFlight + q.depth.delayed === 0),
    rateLimits: Object.entries(controls.pauses)
      .filter(([, until]) => until > ctx.clock.now())
      .map(([scope, until]) => ({ scope, until }))
      .sort((a, b) => a.until - b.until),
  };
}

/** One queue's (or task's: `task:<name>`) stats for each of the last `days` UTC days, oldest first; days without any are left out. */
export async function statsHistory(ctx: OperatorContext, key: string, days: number): Promise<QueueDayStats[]> {
  const now = ctx.clock.now();
  const wanted = Array.from({ length: days }, (_, i) => utcDay(now - (days - 1 - i) * 86_400_000));
  const found = await Promise.all(wanted.map((day) => ctx.stats.get(key, day)));
  return found.filter((d): d is QueueDayStats => d !== undefined);
}
