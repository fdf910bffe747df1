import type { Clock } from './clock';
import type { BatchFailure, BatchResult } from './ports';

export interface EntryRetryOptions {
  /** Calls in all, the first included. @defaultValue 4 */
  readonly attempts?: number;
  /** Pause before the first retry, doubled each time, ms. @defaultValue 50 */
  readonly baseDelayMs?: number;
}

/**
 * Runs a batch call and calls it again with just the entries that failed for reasons a retry can
 * fix (not sender faults), with a doubling pause. A call that throws counts as every entry failing.
 * Returns the entries that still failed; the caller decides what that means — it never drops them.
 */
export async function callWithEntryRetries<E extends { readonly id: string }, R extends BatchResult>(
  entries: readonly E[],
  call: (entries: readonly E[]) => Promise<R>,
  clock: Clock,
  options: EntryRetryOptions = {},
): Promise<{ failed: BatchFailure[]; results: R[]; retries: number }> {
  const attempts = options.attempts ?? 4;
  let delay = options.baseDelayMs ?? 50;
  let pending = [...entries];
  const permanent: BatchFailure[] = [];
  const results: R[] = [];
  let retries = 0;
  for (let attempt = 1; ; attempt++) {
    let failures: readonly BatchFailure[];
    try {
      const result = await call(pending);
      results.push(result);
      failures = result.failed;
    } catch (error) {
      const code = error instanceof Error ? error.name : 'Error';
      const message = error instanceof Error ? error.message : String(error);
      failures = pending.map((e) => ({ id: e.id, code, message, senderFault: false }));
    }
    permanent.push(...failures.filter((f) => f.senderFault));
    const retryable = failures.filter((f) => !f.senderFault);
    if (retryable.length === 0) return { failed: permanent, results, retries };
    if (attempt >= attempts) return { failed: [...permanent, ...retryable], results, retries };
    const again = new Set(retryable.map((f) => f.id));
    pending = pending.filter((e) => again.has(e.id));
    retries += pending.length;
    await clock.sleep(delay);
    delay *= 2;
  }
}

/** Splits a list into chunks of at most `size` (SQS batch calls take 10). */
export function chunk<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
