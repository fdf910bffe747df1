/**
 * The archive fence's rules, one per message archived on a tracked queue: whoever takes the fence
 * sends the message to the archive queue, and closes the fence once the archive holds it. Both job
 * stores decide with these (the in-memory one reads them, the DynamoDB one writes them as
 * conditions), and the settle sizes hand-backs with them. Pure: no I/O, the time is given.
 */
import type { ArchiveFence, ArchiveTake, JobRecord } from '../track/job-record';

/** The fields of a record that make up its archive fence. */
export type FencedRecord = Pick<JobRecord, 'archiveHolder' | 'archiveUntil'>;

/**
 * What taking the fence of `record` for `holder` at `now` finds. No open fence (never opened, or
 * closed once sent; or no record at all, which only a record's TTL expiry leaves): `sent`. An
 * open fence whose holder is `holder` itself (an SDK retry of its own take after a lost answer) or
 * whose lease lapsed (its holder died between taking it and closing it): `taken`. Else `held`.
 */
export function archiveTakeOf(record: FencedRecord | undefined, holder: string, now: number): ArchiveTake {
  if (record?.archiveHolder === undefined) return { outcome: 'sent' };
  if (record.archiveHolder === holder || (record.archiveUntil ?? 0) < now) return { outcome: 'taken' };
  return { outcome: 'held', until: record.archiveUntil ?? now };
}

/** Whether `holder` may close the fence of `record`: it still holds it (no other took it over). */
export function mayCloseFence(record: FencedRecord | undefined, holder: string): boolean {
  return record?.archiveHolder === holder;
}

/**
 * Seconds a copy of a message whose fence another live holder has stays hidden: until that lease
 * ends, and one second more, so it comes back to find the fence closed (sent) or lapsed (taken over).
 */
export function heldSeconds(until: number, now: number, maxSeconds: number): number {
  return Math.min(maxSeconds, Math.max(1, Math.ceil((until - now) / 1000) + 1));
}

/** The record's fields that open `fence` (none without one). */
export function openFence(fence: ArchiveFence | undefined): FencedRecord {
  return fence ? { archiveHolder: fence.holder, archiveUntil: fence.until } : {};
}
