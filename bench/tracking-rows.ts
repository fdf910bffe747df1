/** bench:tracking's table: its columns and one row per run, as the benchmark prints it and as bench/tables.ts writes it into BENCHMARKS.md. */

/** One run of bench:tracking (bench/tracking.ts). */
export interface TrackingResult {
  readonly mode: string;
  readonly task: 'noop' | 'flaky';
  readonly delaySeconds: number;
  readonly payloadBytes: number;
  readonly listSucceeded: boolean;
  readonly tasks: number;
  readonly batches: number;
  readonly queuedWriteUnitsPerTask: number;
  readonly jobWriteUnitsPerTask: number;
  readonly indexWriteUnitsPerTask: number;
  readonly statsWriteUnitsPerTask: number;
  readonly totalWriteUnitsPerTask: number;
}

export const TRACKING_HEADER = [
  'mode',
  'task',
  'publisher WCU/task',
  'dispatcher job WCU/task',
  'index WCU/task',
  'stats WCU/task',
  'total WCU/task',
  'batches',
];

/** One row of the table, as printed and as bench/tables.ts writes it into BENCHMARKS.md. */
export function trackingRow(r: TrackingResult): string[] {
  const what = [
    r.task === 'noop' ? 'succeeds' : 'fails once',
    ...(r.delaySeconds > 0 ? [`delayed ${r.delaySeconds} s`] : []),
    ...(r.payloadBytes > 0 ? [`${r.payloadBytes} B payload kept`] : []),
    ...(r.mode === 'full' ? [r.listSucceeded ? 'listed' : 'not listed (`listSucceeded: false`)'] : []),
  ].join(', ');
  return [
    r.mode,
    what,
    String(r.queuedWriteUnitsPerTask),
    String(r.jobWriteUnitsPerTask),
    String(r.indexWriteUnitsPerTask),
    String(r.statsWriteUnitsPerTask),
    String(r.totalWriteUnitsPerTask),
    String(r.batches),
  ];
}
