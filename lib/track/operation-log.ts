/**
 * The version's operations log: every bulk operation an operator ran (who, when, what, on which
 * filter, how many), one entry each, kept by UTC day in the stats table beside the stats (a day's
 * entries in one item).
 */

/** One logged operation. */
export interface OperationEntry {
  /** When it started, epoch ms. */
  readonly at: number;
  /** Who ran it: the AWS identity's ARN, else the local user (`user@host`). */
  readonly who: string;
  /** `bulk cancel`, `bulk replay`, `bulk delete`. */
  readonly action: string;
  /** The filter as given (task, queue, state, tag, key, reason, since, until). */
  readonly filter: Readonly<Record<string, string | number>>;
  /** What the filter selected. */
  readonly matched: number;
  /** Acted on. */
  readonly done: number;
  /** Selected but not acted on. */
  readonly skipped: number;
  readonly ratePerSecond?: number;
  readonly seconds: number;
}

/** Where the log lives: the stats table (lib/adapters/dynamo-operation-log.ts), or memory in tests. */
export interface OperationLog {
  /** Adds an entry to its day's item (one write). */
  record(entry: OperationEntry): Promise<void>;
  /** A UTC day's entries (YYYY-MM-DD), in the order they were written. */
  day(day: string): Promise<OperationEntry[]>;
}

/** The stats table key of a day's operations item (no queue's stats key starts so). */
export const operationsKey = (day: string) => `operations#${day}`;
