import type { Completion, HistoryEntry, JobRecord, JobState } from './model';

/** Settings both job stores apply identically. */
export interface JobStoreSettings {
  /** Most recent transitions kept per job. */
  readonly historyLimit: number;
  /** Days a record lives after its last write (DynamoDB TTL). */
  readonly retentionDays: number;
}

/** States operators list by queue; only these carry the sparse index key, so success writes no index entry. */
export const INDEXED_STATES: readonly JobState[] = ['retrying', 'archived'];

export function indexKey(queue: string, state: JobState): string | undefined {
  return INDEXED_STATES.includes(state) ? `${queue}#${state}` : undefined;
}

/** The TTL attribute value (epoch seconds) for a write at `now`. */
export function expiresAt(now: number, retentionDays: number): number {
  return Math.floor(now / 1000) + retentionDays * 86_400;
}

/** The history after appending `entry`, trimmed to the newest `limit` entries. */
export function appendHistory(history: readonly HistoryEntry[], entry: HistoryEntry, limit: number): HistoryEntry[] {
  const next = [...history, entry];
  return next.length > limit ? next.slice(next.length - limit) : next;
}

/** Whether a claim at `now` may take the job: new, queued, retrying, or running on a lapsed lease. */
export function claimable(record: JobRecord | undefined, now: number): boolean {
  if (!record) return true;
  if (record.state === 'queued' || record.state === 'retrying') return true;
  return record.state === 'running' && (record.leaseUntil ?? 0) < now;
}

/** Results larger than this are not kept on the job record. */
export const MAX_RESULT_BYTES = 1024;

/** The history entry a completion adds. */
export function historyOf(c: Completion): HistoryEntry {
  const detail =
    c.state === 'archived'
      ? c.reason
      : c.state === 'retrying' && c.retryAt !== undefined
        ? `next attempt after ${new Date(c.retryAt).toISOString()}`
        : undefined;
  return { what: c.state, when: c.now, worker: c.workerId, attempt: c.token, ...(detail ? { detail } : {}) };
}
