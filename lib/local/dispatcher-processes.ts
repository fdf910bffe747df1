/** The local dispatcher processes' lifecycle: how soon one that died is replaced, and how one is stopped gracefully. */
import type { ChildProcess } from 'node:child_process';

const FIRST_RESTART_MS = 500;
const MAX_RESTART_MS = 30_000;

/**
 * How long to wait before replacing a dispatcher that died: 0.5 s, doubling while each one dies
 * within 10 s of its start (a crash loop), at most 30 s; back to 0.5 s after one lived a minute.
 */
export class RestartBackoff {
  private delayMs = FIRST_RESTART_MS;

  next(livedMs: number): number {
    if (livedMs >= 60_000) this.delayMs = FIRST_RESTART_MS;
    const now = this.delayMs;
    if (livedMs < 10_000) this.delayMs = Math.min(MAX_RESTART_MS, this.delayMs * 2);
    return now;
  }
}

/** Resolves once a dispatcher process has its stop handlers installed (or has exited). */
export const readiness = new WeakMap<ChildProcess, Promise<void>>();

/** Asks a dispatcher to stop (it finishes running tasks and settles), and kills it if it has not exited in time. */
export async function stopChild(child: ChildProcess, graceMs = 15_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  // A process still starting has no SIGTERM handler yet and would die of the signal: wait for it.
  await readiness.get(child);
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  await exited;
  clearTimeout(timer);
}
