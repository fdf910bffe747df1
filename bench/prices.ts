import { LIST_PRICES } from '../lib/policy/cost-attribution';

/** Published prices the benchmarks convert counted requests and seconds with (us-east-1, arm64 Lambda), and what they share. */
export const PRICES = { ...LIST_PRICES };

export const round = (n: number, digits = 3) => Math.round(n * 10 ** digits) / 10 ** digits;

/** Nearest-rank quantile of values sorted ascending; 0 when there are none. */
export function quantile(sorted: ArrayLike<number>, q: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] as number;
}

/** Lambda's SQS trigger idle: pollers per queue, each long-polling 20 s (AWS keeps several per queue). */
export const TRIGGER_IDLE_POLLERS_PER_QUEUE = 5;

/** SQS requests an hour that one queue's event-source mapping makes when the queue is empty. */
export function triggerIdleRequestsPerHour(queues: number): number {
  return TRIGGER_IDLE_POLLERS_PER_QUEUE * queues * (3600 / 20);
}

/** Prints rows under a header as aligned text columns (the benchmarks' table beside their JSON). */
export function printTable(header: readonly string[], rows: ReadonlyArray<ReadonlyArray<string | number>>): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => String(row[i]).length)));
  for (const row of [header, ...rows]) process.stdout.write(`${row.map((c, i) => String(c).padEnd(widths[i] ?? 0)).join('  ')}\n`);
}

/** Runs a benchmark's main: exits 0 when it is done (emulators and pools may keep handles), 1 with the stack when it fails. */
export function runBenchmark(main: () => Promise<void>): void {
  void main().then(
    () => process.exit(0),
    (error: unknown) => {
      process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
      process.exit(1);
    },
  );
}
