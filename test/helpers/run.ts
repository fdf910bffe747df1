import { readFileSync } from 'node:fs';
import type { Clock } from '../../lib/clock';
import type { DispatcherRuntime } from '../../lib/invocation/dispatcher-runtime';
import type { DispatcherSummary } from '../../lib/settle/report';

/** Polls `check` every 50 ms until it holds; throws with `what` if `timeoutMs` passes first. */
export async function eventually(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Runs a dispatcher until `done` holds, then stops it the way SIGTERM would and returns its summary. */
export async function runUntil(
  runtime: DispatcherRuntime,
  what: string,
  done: () => boolean | Promise<boolean>,
  timeoutMs = 20_000,
  clock: Pick<Clock, 'now'> = { now: Date.now },
): Promise<DispatcherSummary> {
  const stop = new AbortController();
  // The deadline is in the runtime's own time (a test may have moved its clock).
  const running = runtime.invoke(clock.now() + 60_000, stop.signal);
  try {
    await eventually(what, done, timeoutMs);
  } catch (error) {
    // Say what the dispatcher did meanwhile (receives, empty ones, errors): a stall shows where.
    stop.abort();
    const summary = await Promise.race([
      running,
      new Promise((resolve) => setTimeout(() => resolve('still running 5 s after the stop'), 5000)),
    ]);
    throw new Error(`${(error as Error).message}; the dispatcher's summary: ${JSON.stringify(summary)}`);
  } finally {
    stop.abort();
  }
  return running;
}

/** The JSON lines fixture tasks appended to a journal file. */
export function readJournal(file: string): Array<Record<string, unknown>> {
  try {
    return readFileSync(file, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  } catch {
    return [];
  }
}
