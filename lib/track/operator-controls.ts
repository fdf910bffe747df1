/**
 * Operator controls of a version's queues: paused (and since when), and priority or SLA set at run
 * time over the deployed config. One small item for the whole version, with a revision number that
 * grows on every change; dispatchers read it at the start of an invocation and at most once per
 * {@link CONTROLS_REFRESH_MS} while they run (never per message), and select as it says.
 */
import { MAX_SLA_SECONDS, type QueueConfig } from '../config/app-config';
import { type RateLimitScope, TaskworkerError } from '../errors';

/** One queue's controls. Absent fields are the config's (not paused, deployed priority and SLA). */
export interface QueueControl {
  /** Epoch ms when it was paused; absent when it is not. */
  readonly pausedAt?: number;
  /** Priority in force instead of the config's (1..100). */
  readonly priority?: number;
  /** SLA in force instead of the config's, seconds (1..1,209,600). */
  readonly slaSeconds?: number;
  /** Epoch ms of the last change. */
  readonly updatedAt: number;
}

/** A version's controls as one read returns them. */
export interface Controls {
  /** Grows by one with every operator's change (not with a rate limit's pause); 0 when nothing was ever set. */
  readonly revision: number;
  readonly queues: Readonly<Record<string, QueueControl>>;
  /**
   * Rate-limit pauses (RateLimitedError), by scope ({@link pauseScopeId}): epoch ms until which
   * the jobs of that scope are held. Ended ones may still be listed until a later pause prunes them.
   */
  readonly pauses: Readonly<Record<string, number>>;
}

/** What a rate-limit pause holds: the jobs of a task, of a task with one key, or of a queue. */
export interface PauseTarget {
  readonly task: string;
  readonly queue: string;
  readonly key?: string | undefined;
}

/**
 * The id of the scope a RateLimitedError pauses: `task:<task>`, `key:<task>:<key>` or
 * `queue:<queue>`. A job without a key asking for `key` pauses its task.
 */
export function pauseScopeId(scope: RateLimitScope, target: PauseTarget): string {
  if (scope === 'queue') return `queue:${target.queue}`;
  if (scope === 'key' && target.key !== undefined) return `key:${target.task}:${target.key}`;
  return `task:${target.task}`;
}

/** The live pause that holds a job at `now` (the one ending last), or undefined. */
export function pauseHolding(
  controls: Controls,
  target: PauseTarget,
  now: number,
): { readonly scope: string; readonly until: number } | undefined {
  const scopes = [
    `task:${target.task}`,
    `queue:${target.queue}`,
    ...(target.key !== undefined ? [`key:${target.task}:${target.key}`] : []),
  ];
  let holding: { scope: string; until: number } | undefined;
  for (const scope of scopes) {
    const until = controls.pauses[scope];
    if (until !== undefined && until > now && (!holding || until > holding.until)) holding = { scope, until };
  }
  return holding;
}

/** Whether a rate limit pauses `queue` at `now`. */
export function queueRateLimited(controls: Controls, queue: string, now: number): boolean {
  return (controls.pauses[`queue:${queue}`] ?? 0) > now;
}

/** A change to one queue's controls: `null` removes a field (back to the config). */
export interface ControlChange {
  readonly paused?: boolean;
  readonly priority?: number | null;
  readonly slaSeconds?: number | null;
}

/** Where the controls live (the version's stats table, one item; an in-memory fake for tests and the simulation). */
export interface ControlStore {
  /** The controls now (one small read; `consistent` for an operator who must see their own change). */
  read(consistent?: boolean): Promise<Controls>;
  /** Applies `change` to `queue`'s controls at `now`; resolves with the controls after it. A pause keeps its first `pausedAt`. */
  change(queue: string, change: ControlChange, now: number): Promise<Controls>;
  /**
   * Pauses `scope` ({@link pauseScopeId}) until `until` (epoch ms), a rate limit's: extends a
   * shorter pause, never shortens a longer one, and prunes pauses that ended before `now`.
   * Resolves with the pause in force after it (`until`, or the longer one found).
   */
  pause(scope: string, until: number, now: number): Promise<number>;
}

export const NO_CONTROLS: Controls = { revision: 0, queues: {}, pauses: {} };

/** How often a running dispatcher reads the controls at most (a pause reaches every dispatcher within about this). */
export const CONTROLS_REFRESH_MS = 2000;

/** An operator's control value is not one the queue can take; names the field and the value. */
export class ControlValueError extends TaskworkerError {
  readonly field: string;
  readonly value: unknown;
  constructor(field: string, value: unknown, expected: string) {
    super(`${field} ${JSON.stringify(value)}: expected ${expected}`);
    this.name = 'ControlValueError';
    this.field = field;
    this.value = value;
  }
}

/** Parses an operator's priority (an integer 1..100, as in the config). */
export function parsePriority(value: unknown, field = '--priority'): number {
  const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > 100)
    throw new ControlValueError(field, value, 'an integer from 1 to 100');
  return n;
}

/** Parses an operator's SLA in seconds (an integer 1..1,209,600, as in the config). */
export function parseSlaSeconds(value: unknown, field = '--sla'): number {
  const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > MAX_SLA_SECONDS)
    throw new ControlValueError(field, value, `whole seconds from 1 to ${MAX_SLA_SECONDS} (14 days)`);
  return n;
}

/** `queue`'s controls after `change` at `now` (pure: both stores apply it the same way). */
export function changed(current: QueueControl | undefined, change: ControlChange, now: number): QueueControl | undefined {
  const next: { pausedAt?: number; priority?: number; slaSeconds?: number; updatedAt: number } = { updatedAt: now };
  const pausedAt = change.paused === undefined ? current?.pausedAt : change.paused ? (current?.pausedAt ?? now) : undefined;
  const priority = change.priority === undefined ? current?.priority : (change.priority ?? undefined);
  const slaSeconds = change.slaSeconds === undefined ? current?.slaSeconds : (change.slaSeconds ?? undefined);
  if (pausedAt !== undefined) next.pausedAt = pausedAt;
  if (priority !== undefined) next.priority = priority;
  if (slaSeconds !== undefined) next.slaSeconds = slaSeconds;
  return pausedAt === undefined && priority === undefined && slaSeconds === undefined ? undefined : next;
}

/** The names of the paused queues. */
export function pausedQueues(controls: Controls): string[] {
  return Object.entries(controls.queues)
    .filter(([, c]) => c.pausedAt !== undefined)
    .map(([name]) => name);
}

/**
 * The queues as the controls say to select them: paused ones left out (with `now`, those a rate
 * limit pauses too), priority and SLA overridden.
 * Without any control for a queue its config object is returned as it is (same identity), so a
 * version nobody controls selects exactly as before.
 */
export function effectiveQueues(queues: readonly QueueConfig[], controls: Controls, now?: number): QueueConfig[] {
  const out: QueueConfig[] = [];
  for (const q of queues) {
    // A queue a rate limit paused (RateLimitedError, scope `queue`) is not received from until it ends.
    if (now !== undefined && queueRateLimited(controls, q.name, now)) continue;
    const c = controls.queues[q.name];
    if (!c) {
      out.push(q);
      continue;
    }
    if (c.pausedAt !== undefined) continue;
    out.push(
      c.priority === undefined && c.slaSeconds === undefined
        ? q
        : {
            ...q,
            ...(c.priority !== undefined ? { priority: c.priority } : {}),
            ...(c.slaSeconds !== undefined ? { slaSeconds: c.slaSeconds } : {}),
          },
    );
  }
  return out;
}

/**
 * What a dispatcher container keeps of the controls: read at most once per `refreshMs` (and at
 * once when `fresh` is asked, at an invocation's start), reused in between. A failed read keeps the
 * last controls it had (a control store outage never stops the work; it delays a pause).
 */
export class ControlsCache {
  private current: Controls = NO_CONTROLS;
  private readAt = Number.NEGATIVE_INFINITY;
  private pending: Promise<Controls> | undefined;
  /** Pauses this container wrote, kept over reads that may not show them yet. */
  private readonly own = new Map<string, number>();
  /** Reads made (tests count them). */
  reads = 0;

  constructor(
    private readonly store: ControlStore,
    private readonly now: () => number,
    private readonly onError: (error: unknown) => void = () => {},
    private readonly refreshMs = CONTROLS_REFRESH_MS,
  ) {}

  /** The controls, read again if the last read is `refreshMs` old (or `fresh`). */
  async get(fresh = false): Promise<Controls> {
    if (!fresh && this.now() - this.readAt < this.refreshMs) return this.current;
    if (this.pending) return this.pending;
    this.reads += 1;
    this.pending = this.store
      .read()
      .then(
        (controls) => {
          for (const [scope, until] of this.own) if (until <= this.now()) this.own.delete(scope);
          this.current = withPauses(controls, this.own);
          return this.current;
        },
        (error: unknown) => {
          this.onError(error);
          return this.current;
        },
      )
      .finally(() => {
        this.readAt = this.now();
        this.pending = undefined;
      });
    return this.pending;
  }

  /** Whether {@link get} would read the store now. */
  due(): boolean {
    return this.now() - this.readAt >= this.refreshMs;
  }

  /** The last controls read, without reading. */
  get last(): Controls {
    return this.current;
  }

  /**
   * A pause this container wrote itself: in force here at once, not a refresh later (a read that
   * lands after it and lacks it, eventually consistent, keeps it too).
   */
  notePause(scope: string, until: number): void {
    this.own.set(scope, Math.max(until, this.own.get(scope) ?? 0));
    this.current = withPauses(this.current, this.own);
  }
}

/** `controls` with `pauses` merged in, each scope's later end kept. */
function withPauses(controls: Controls, pauses: ReadonlyMap<string, number>): Controls {
  if (pauses.size === 0) return controls;
  const merged: Record<string, number> = { ...controls.pauses };
  for (const [scope, until] of pauses) merged[scope] = Math.max(until, merged[scope] ?? 0);
  return { ...controls, pauses: merged };
}
