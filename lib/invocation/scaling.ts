/**
 * Dispatcher autoscaling: the serverless counterpart of Celery's autoscaler. Pure policy, no AWS
 * SDK: the scheduled invocation reads queue depths, asks {@link planScaleOut} how many more
 * dispatcher invocations the backlog needs, and starts them through a {@link DispatcherLauncher};
 * dispatchers end their invocation once they have found no work for a while ({@link idleExit}),
 * and scaled-out ones at the next decision at the latest, so the fleet shrinks as the backlog
 * drains. Lambda's reserved concurrency (the configured `maxConcurrency`) bounds it regardless.
 */
import type { QueueConfig, TaskworkerConfig } from '../config/app-config';
import { describe } from '../errors';
import type { DispatcherLauncher, Logger, QueueClient, QueueUrls } from '../ports';
import type { LimitStore } from '../track/fleet-limits';
import { sqsRecordsOf } from './doorbell';

/**
 * How an invocation was started: by the schedule, by a scheduled one scaling out, by a doorbell
 * queue's SQS trigger (lib/invocation/doorbell.ts), or otherwise (local runs, tests).
 */
export type InvocationRole = 'scheduled' | 'scale-out' | 'doorbell' | 'plain';

/** Event `source` of the schedule's invocations and of the invocations a scheduled one starts. */
export const SCHEDULE_SOURCE = 'taskworker.schedule';
export const SCALE_OUT_SOURCE = 'taskworker.scale-out';

/** The role of an invocation from its event. Only `scheduled` invocations ever start others. */
export function invocationRole(event: unknown): InvocationRole {
  if (sqsRecordsOf(event)) return 'doorbell';
  const source = typeof event === 'object' && event !== null ? (event as { source?: unknown }).source : undefined;
  if (source === SCHEDULE_SOURCE) return 'scheduled';
  if (source === SCALE_OUT_SOURCE) return 'scale-out';
  return 'plain';
}

/** The event a scaled-out invocation receives. */
export interface ScaleOutEvent {
  readonly source: typeof SCALE_OUT_SOURCE;
  /** Why: the decision that started it, for the logs. */
  readonly decision: ScaleDecision;
}

export interface QueueBacklog {
  readonly queue: string;
  /** Messages waiting (ApproximateNumberOfMessages). */
  readonly visible: number;
  /** Messages received and not yet settled (ApproximateNumberOfMessagesNotVisible). */
  readonly inFlight: number;
}

export interface ScalePolicy {
  /** Dispatcher invocations at once, at most (`dispatcher.maxConcurrency`, the reserved concurrency). */
  readonly maxConcurrency: number;
  /** Waiting or in-flight messages per dispatcher the fleet is sized for (`dispatcher.backlogPerDispatcher`). */
  readonly backlogPerDispatcher: number;
  /** Scheduled invocations that may be running (⌈timeoutSeconds / 60⌉): counted as running whatever they hold. */
  readonly scheduled: number;
  /** Task slots of one dispatcher (`dispatcher.concurrency`): work that fits them is a trickle. @defaultValue 0 */
  readonly slots?: number;
  /**
   * Invocations working now, the deciding one included, as the fleet count says ({@link fleetCount}).
   * @defaultValue `scheduled`: every scheduled invocation that may be running, whether or not it has scaled in
   */
  readonly running?: number;
}

export interface ScaleDecision {
  /** Messages waiting, all queues. */
  readonly waiting: number;
  /** The queues with messages waiting, in config order. */
  readonly waitingIn: readonly string[];
  /**
   * Some work, and no more than one dispatcher's slots (waiting and in flight): the invocation
   * takes it and ends soon after ({@link TRICKLE_IDLE_EXIT_MS}), leaving the doorbells on.
   */
  readonly trickle: boolean;
  /** Messages in flight, all queues. */
  readonly inFlight: number;
  /** Dispatchers the backlog calls for. */
  readonly desired: number;
  /** Dispatchers counted as running: the scheduled ones that may be. */
  readonly running: number;
  /** Invocations to start now. */
  readonly start: number;
}

/** Scheduled invocations running at once when every one runs its full timeout (one a minute). */
export function scheduledOverlap(timeoutSeconds: number): number {
  return Math.ceil(timeoutSeconds / 60);
}

/**
 * Whether a function with this reserved concurrency can start more of itself: room beyond the
 * schedule's own overlap and the one kept for the next scheduled start.
 */
export function canScaleOut(maxConcurrency: number, timeoutSeconds: number): boolean {
  return maxConcurrency > scheduledOverlap(timeoutSeconds) + 1;
}

export function scalePolicyOf(config: TaskworkerConfig): ScalePolicy {
  const { maxConcurrency, backlogPerDispatcher, timeoutSeconds } = config.dispatcher;
  return { maxConcurrency, backlogPerDispatcher, scheduled: scheduledOverlap(timeoutSeconds), slots: config.dispatcher.concurrency };
}

/**
 * How many dispatcher invocations to start, from the queues' depths. The fleet is sized to the
 * work, waiting and in flight: desired = ⌈(waiting + in flight) / backlogPerDispatcher⌉, at most
 * `maxConcurrency − 1` (one slot stays free for the next scheduled start). Invocations started
 * this way live at most until the next scheduled decision ({@link SCALE_OUT_LIFETIME_MS}), so
 * each decision sizes the whole scaled-out fleet afresh: what counts as running is the fleet
 * count's working invocations (`policy.running`, the deciding one included; the last generation of
 * scaled-out ones has ended by then), or without a count every scheduled invocation that may be
 * running. When the backlog drains the next decision starts fewer, and idle ones end sooner (see
 * {@link idleExit}).
 *
 * @example
 * ```ts
 * planScaleOut([{ queue: 'default', visible: 2500, inFlight: 40 }], { maxConcurrency: 20, backlogPerDispatcher: 100, scheduled: 5 });
 * // → { desired: 19, running: 5, start: 14, … }
 * ```
 */
export function planScaleOut(backlogs: readonly QueueBacklog[], policy: ScalePolicy): ScaleDecision {
  const waiting = backlogs.reduce((n, b) => n + Math.max(0, b.visible), 0);
  const inFlight = backlogs.reduce((n, b) => n + Math.max(0, b.inFlight), 0);
  const ceiling = Math.max(1, policy.maxConcurrency - 1);
  const desired = Math.min(ceiling, Math.ceil((waiting + inFlight) / policy.backlogPerDispatcher));
  const running = Math.min(ceiling, Math.max(1, policy.running ?? policy.scheduled));
  const start = waiting === 0 ? 0 : Math.max(0, desired - running);
  const waitingIn = backlogs.filter((b) => b.visible > 0).map((b) => b.queue);
  const trickle = waiting > 0 && waiting + inFlight <= (policy.slots ?? 0);
  return { waiting, waitingIn, trickle, inFlight, desired, running, start };
}

/** After this long without work, an invocation that may scale in ends. */
export const IDLE_EXIT_MS = 2_000;
/**
 * A scheduled invocation woken by a trickle (a schedule-only queue's minute of light work) ends
 * after this long without work: one long poll, not the allowance a burst's stragglers get.
 */
export const TRICKLE_IDLE_EXIT_MS = 1_000;
/** The schedule's period. */
export const SCHEDULE_PERIOD_MS = 60_000;
/**
 * A scaled-out invocation ends by this long after it started, before the next scheduled decision
 * (which starts the next generation if the backlog is still there). Tasks whose time limit does
 * not fit in it are left to the scheduled dispatchers.
 */
export const SCALE_OUT_LIFETIME_MS = 55_000;

/** The deadline of an invocation: a scaled-out one's is at most {@link SCALE_OUT_LIFETIME_MS} away. */
export function invocationDeadline(role: InvocationRole, startedAt: number, deadline: number): number {
  return role === 'scale-out' ? Math.min(deadline, startedAt + SCALE_OUT_LIFETIME_MS) : deadline;
}

/**
 * When an invocation may end for lack of work. Nothing waits for work in an idle version: the
 * doorbell queues' triggers and the next minute's schedule start a dispatcher when it comes. So a
 * scheduled or scaled-out invocation ends once it has been idle for {@link IDLE_EXIT_MS} (a burst's
 * stragglers and retries coming back), or {@link TRICKLE_IDLE_EXIT_MS} when its depth reading
 * found only a trickle; a doorbell runs its batch and ends, idle or not. Plain invocations
 * (`taskworker dev` without scale-to-zero, tests) run to their deadline.
 */
export function idleExit(
  role: InvocationRole,
  startedAt: number,
  decision?: Pick<ScaleDecision, 'trickle'>,
): { readonly afterMs: number; readonly notBefore: number } | undefined {
  if (role === 'scale-out' || role === 'scheduled') {
    return { afterMs: decision?.trickle ? TRICKLE_IDLE_EXIT_MS : IDLE_EXIT_MS, notBefore: startedAt };
  }
  return undefined;
}

/** What the scheduled invocation needs to scale the fleet out. */
export interface ScaleOutDeps {
  readonly config: TaskworkerConfig;
  readonly queues: QueueClient;
  readonly urls: QueueUrls;
  /** Without one the backlog is read and planned, nothing is started. */
  readonly launcher?: DispatcherLauncher;
  readonly logger: Logger;
  /** The fleet count, read when there is work; without it (or when it cannot be read) the policy's default. */
  readonly fleet?: { readonly count: FleetCount; readonly now: number };
}

/**
 * The doorbells that step aside while a scheduled invocation works: none when nothing waits or only
 * a trickle it takes in passing. A backlog is the selector's, which takes it by priority: the
 * triggers of the queues holding it, and of the queues at or below them, wait until the fleet is
 * done. A queue that outranks every backlog keeps its trigger: its work is rare and urgent, and a
 * doorbell starts it at once instead of it waiting for a slot in a fleet busy with lower work.
 */
export function doorbellsStepAside(decision: ScaleDecision, queues: readonly Pick<QueueConfig, 'name' | 'priority'>[]): string[] {
  if (decision.waiting === 0 || decision.trickle) return [];
  const waiting = queues.filter((q) => decision.waitingIn.includes(q.name));
  const highest = Math.max(...waiting.map((q) => q.priority), Number.NEGATIVE_INFINITY);
  return queues.filter((q) => q.priority <= highest).map((q) => q.name);
}

/**
 * Whether an invocation counts itself in the fleet ({@link fleetCount}): a scheduled one working
 * more than a trickle (or one that could not read the depths). A scaled-out one would not be seen:
 * it ends before the next decision ({@link SCALE_OUT_LIFETIME_MS}).
 */
export function joinsFleet(role: InvocationRole, decision: ScaleDecision | undefined): boolean {
  return role === 'scheduled' && !decision?.trickle;
}

/** The limit-store key under which working dispatcher invocations count themselves. */
export const FLEET_KEY = 'fleet:dispatchers';
/** The fleet is counted, not limited (its reserved concurrency limits it): a limit never reached. */
const FLEET_UNLIMITED = 1_000_000;

/**
 * Which dispatcher invocations are working now, so the scale-out decision counts those and not
 * every scheduled invocation that may be running: with scale to zero most have ended, and counting
 * them left a cold start's backlog to a fraction of the fleet it called for. Each scheduled
 * invocation that works a backlog (more than a trickle) holds one slot of {@link FLEET_KEY} in the
 * limit store until it ends, leased to its deadline: one that dies stops counting then. Scaled-out
 * invocations do not join: they end before the next decision, and the item stays small (at most
 * ⌈timeout / 60⌉ holders, whatever the fleet's size). Best effort: a failure to join or leave is
 * logged, and a failed count falls back to the policy's default.
 */
export interface FleetCount {
  join(holder: string, now: number, until: number): Promise<void>;
  leave(holder: string, now: number): Promise<void>;
  /** Invocations holding a live slot at `now`. */
  running(now: number): Promise<number>;
}

export function fleetCount(limits: LimitStore): FleetCount {
  return {
    join: async (holder, now, until) => {
      await limits.acquire({ key: FLEET_KEY, limit: FLEET_UNLIMITED, holder, want: 1, now, until });
    },
    leave: async (holder, now) => {
      await limits.release(FLEET_KEY, holder, now);
    },
    running: (now) => limits.held(FLEET_KEY, now),
  };
}

async function countFleet(fleet: NonNullable<ScaleOutDeps['fleet']>, logger: Logger): Promise<number | undefined> {
  try {
    return await fleet.count.running(fleet.now);
  } catch (error) {
    logger.warn('could not count the working dispatchers; counting every scheduled one as running', { error: describe(error) });
    return undefined;
  }
}

/**
 * The scheduled invocation's first step: read every queue's depth (one GetQueueAttributes each),
 * plan, and start the invocations the backlog needs. Never throws: a failure to read or to launch
 * costs capacity for a minute, never the invocation.
 */
export async function scaleOut(deps: ScaleOutDeps): Promise<ScaleDecision | undefined> {
  let decision: ScaleDecision;
  try {
    const backlogs = await Promise.all(
      deps.config.queues.map(async (q) => {
        const depth = await deps.queues.depth(deps.urls.queues[q.name] as string);
        return { queue: q.name, visible: depth.visible, inFlight: depth.inFlight };
      }),
    );
    const policy = scalePolicyOf(deps.config);
    const waiting = backlogs.some((b) => b.visible > 0);
    const others = waiting && deps.fleet ? await countFleet(deps.fleet, deps.logger) : undefined;
    decision = planScaleOut(backlogs, others === undefined ? policy : { ...policy, running: others + 1 });
  } catch (error) {
    deps.logger.warn('could not read queue depths; not scaling out this minute', { error: describe(error) });
    return undefined;
  }
  if (decision.start === 0 || !deps.launcher) return decision;
  try {
    const started = await deps.launcher.launch(decision.start, { source: SCALE_OUT_SOURCE, decision });
    deps.logger.info('scaling out', { ...decision, started });
  } catch (error) {
    deps.logger.warn('could not start dispatchers; the backlog waits for the next minute', { ...decision, error: describe(error) });
  }
  return decision;
}
