/**
 * The time arithmetic of running a task inside an invocation and a message's visibility, in one
 * place: pure functions of milliseconds, no clock of their own.
 */

/** Heartbeats go out this long before a running task's message would become visible again (or a quarter of the visibility timeout, if less). */
export const HEARTBEAT_LEAD_MS = 5000;
/**
 * A message that waited for a slot until less than this (or a quarter of its visibility timeout)
 * was left of its visibility is not started: SQS may already have handed it to another worker.
 */
export const LAPSE_MARGIN_MS = 1000;
/** Messages received while slots are busy must be able to start this long before their visibility lapses. */
export const RECEIVE_LEAD_MS = 5000;

/** How long a task can hold its slot: its time limit, then the grace before its thread is killed. */
export function taskNeedMs(timeLimitSeconds: number, killGraceMs: number): number {
  return timeLimitSeconds * 1000 + killGraceMs;
}

/** Whether a task that needs `needMs` and starts at `start` ends before the invocation must settle. */
export function fitsInvocation(start: number, needMs: number, deadline: number, settleMarginMs: number): boolean {
  return start + needMs <= deadline - settleMarginMs;
}

/** The lease a claim takes (and a heartbeat renews): the task's need and the time to settle it. */
export function leaseMs(needMs: number, settleMarginMs: number): number {
  return needMs + settleMarginMs;
}

/** The part of a visibility timeout kept in reserve before it lapses: `leadMs`, or a quarter of it if less. */
export function visibilityReserveMs(visibilityTimeoutSeconds: number, leadMs: number): number {
  return Math.min(leadMs, (visibilityTimeoutSeconds * 1000) / 4);
}

/** Whether a message received at `receivedAt` may still start at `start`: its visibility has not (nearly) lapsed. */
export function stillVisibleToUs(receivedAt: number, start: number, visibilityTimeoutSeconds: number): boolean {
  return start < receivedAt + visibilityTimeoutSeconds * 1000 - visibilityReserveMs(visibilityTimeoutSeconds, LAPSE_MARGIN_MS);
}

/** How soon after its receive a message must start: before its visibility lapses, with the heartbeat's lead to spare. */
export function startWithinMs(visibilityTimeoutSeconds: number): number {
  return visibilityTimeoutSeconds * 1000 - visibilityReserveMs(visibilityTimeoutSeconds, RECEIVE_LEAD_MS);
}

/** Whether a task fits its queue's visibility timeout (Kale's check). */
export function fitsVisibility(needMs: number, visibilityTimeoutSeconds: number): boolean {
  return needMs <= visibilityTimeoutSeconds * 1000;
}
