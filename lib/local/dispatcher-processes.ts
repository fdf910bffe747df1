/**
 * The local dispatcher processes' lifecycle: how one is started, how soon one that died is replaced,
 * and how one is stopped gracefully.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { RunnerMessage } from './runner';

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

/**
 * Starts a dispatcher process: the local runner a build made, with `env`. Each line it writes goes
 * to `onLine` when given, else its output is this process's. Its {@link readiness} is recorded.
 */
export function forkDispatcher(runnerFile: string, env: NodeJS.ProcessEnv, onLine?: (line: string) => void): ChildProcess {
  const piped = onLine !== undefined;
  const child = fork(runnerFile, [], {
    env,
    // The handler's own stack traces point at the library's and the tasks' sources, as in Lambda.
    execArgv: ['--enable-source-maps'],
    stdio: ['ignore', piped ? 'pipe' : 'inherit', piped ? 'pipe' : 'inherit', 'ipc'],
  });
  if (onLine) {
    for (const stream of [child.stdout, child.stderr]) {
      if (stream) createInterface({ input: stream, crlfDelay: Number.POSITIVE_INFINITY }).on('line', onLine);
    }
  }
  readiness.set(
    child,
    new Promise<void>((resolve) => {
      child.on('message', (message: RunnerMessage) => message.type === 'ready' && resolve());
      child.once('exit', () => resolve());
    }),
  );
  return child;
}

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
