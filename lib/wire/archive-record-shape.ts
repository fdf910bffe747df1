/**
 * The archive record's shape alone, with nothing that needs Node: the dispatcher writes it
 * (lib/wire/archive-record.ts), the operator and the dashboard's page read it.
 */
import type { ArchiveReason } from './archive-reasons';

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
  /** The job's id in the jobs table (`taskworker jobs show` takes it); for a rejected message, its own message id. */
  readonly jobId?: string;
  /** For a rejected message: the id its envelope carried, which it was not allowed to act on. */
  readonly envelopeId?: string;
  readonly messageId: string;
  readonly sentTimestamp: number;
  readonly archivedAt: number;
  readonly workerId: string;
  /**
   * Set when the body was cut to fit SQS's limit beside this record: its size in bytes before.
   * Only bodies within a few hundred bytes of 1 MiB need it (the publisher leaves 8 KiB free).
   */
  readonly bodyTruncatedFrom?: number;
  /** The task's `redact` paths: every view masks them in the body's payload (the body itself stays whole, for replay). */
  readonly redact?: readonly string[];
}
