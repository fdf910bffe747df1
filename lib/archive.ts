import { bodyBytes, SQS_MESSAGE_LIMIT_BYTES } from './envelope';
import type { SendEntry } from './ports';

/** Why a message ended in the archive queue. Machine-readable; also sent as its own attribute. */
export const ARCHIVE_REASONS = ['exhausted', 'timed-out', 'unrecoverable', 'invalid-payload', 'malformed', 'unknown-task'] as const;
export type ArchiveReason = (typeof ARCHIVE_REASONS)[number];

/** What the archive keeps beside the original body (which it stores unchanged). */
export interface ArchiveRecord {
  readonly reason: ArchiveReason;
  /** Human-readable cause: the error message, or why the envelope was rejected. */
  readonly detail: string;
  readonly errorType?: string;
  readonly errorStack?: string;
  /** For malformed messages, the codec's machine-readable code (e.g. `not-json`). */
  readonly code?: string;
  readonly attempts: number;
  /** Configured queue the message came from; replay sends it back there. */
  readonly queue: string;
  readonly task?: string;
  readonly jobId?: string;
  readonly messageId: string;
  readonly sentTimestamp: number;
  readonly archivedAt: number;
  readonly workerId: string;
}

export const ARCHIVE_RECORD_ATTRIBUTE = 'taskworker-archive';
export const ARCHIVE_REASON_ATTRIBUTE = 'taskworker-reason';

/**
 * The archive send for one message: its original body, untouched, and the record as message
 * attributes. If body and record would pass SQS's limit, the stack and then the detail are cut.
 */
export function archiveEntry(id: string, body: string, record: ArchiveRecord): SendEntry {
  const room = SQS_MESSAGE_LIMIT_BYTES - bodyBytes(body) - 256;
  let fitted: ArchiveRecord = record;
  let json = JSON.stringify(fitted);
  if (bodyBytes(json) > room && fitted.errorStack !== undefined) {
    const { errorStack: _dropped, ...rest } = fitted;
    fitted = rest;
    json = JSON.stringify(fitted);
  }
  if (bodyBytes(json) > room) {
    fitted = { ...fitted, detail: fitted.detail.slice(0, 200) };
    json = JSON.stringify(fitted);
  }
  return { id, body, attributes: { [ARCHIVE_RECORD_ATTRIBUTE]: json, [ARCHIVE_REASON_ATTRIBUTE]: record.reason } };
}

/** Reads the record back from an archived message's attributes; undefined if it is not one. */
export function readArchiveRecord(attributes: Readonly<Record<string, string>>): ArchiveRecord | undefined {
  const json = attributes[ARCHIVE_RECORD_ATTRIBUTE];
  if (json === undefined) return undefined;
  try {
    const record = JSON.parse(json) as ArchiveRecord;
    return (ARCHIVE_REASONS as readonly string[]).includes(record.reason) ? record : undefined;
  } catch {
    return undefined;
  }
}
