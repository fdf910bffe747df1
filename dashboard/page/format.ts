/**
 * How the page writes durations and errors: pure, so the route tests' Jest can check it without a
 * browser (test/unit/ui-format.test.ts). No DOM, no Node.
 */
import type { JobRecord } from '../api-types';

/** A duration to the millisecond, as measured (not a histogram bucket): `840 ms`, `12.345 s`, `2 min 3.456 s`, `1 h 0 min 5.000 s`. */
export function exactDuration(ms: number | undefined): string {
  if (ms === undefined || !Number.isFinite(ms) || ms < 0) return '–';
  const whole = Math.round(ms);
  if (whole < 1000) return `${whole} ms`;
  const seconds = ((whole % 60_000) / 1000).toFixed(3);
  if (whole < 60_000) return `${seconds} s`;
  const minutes = Math.floor(whole / 60_000) % 60;
  const hours = Math.floor(whole / 3_600_000);
  return `${hours > 0 ? `${hours} h ` : ''}${minutes} min ${seconds} s`;
}

/** How long the job waited: its publish to its first start (what the stats' wait histogram samples, for the first attempt). */
export function jobWaitMs(job: JobRecord): number | undefined {
  return job.firstStartedAt !== undefined && job.publishedAt !== undefined ? Math.max(0, job.firstStartedAt - job.publishedAt) : undefined;
}

/** How long its last attempt took, start to end as its record has them (ended or retrying jobs only). */
export function jobRunMs(job: JobRecord): number | undefined {
  if (job.lastStartedAt === undefined) return undefined;
  const ended = job.state === 'retrying' ? job.updatedAt : job.state === 'running' ? undefined : job.finishedAt;
  return ended !== undefined && ended >= job.lastStartedAt ? ended - job.lastStartedAt : undefined;
}

/**
 * A job's error as one text: `Type: message`, then the stack's frames. A V8 stack starts with the
 * error's own `Name: message` (the message again, several lines if it has several): that head is
 * left out, so the message is printed once.
 */
export function errorText(error: NonNullable<JobRecord['lastError']>): string {
  const head = `${error.type}: ${error.message}`;
  const stack = error.stack;
  if (!stack) return head;
  const firstFrame = stack.search(/\n\s+at /);
  const at = error.message === '' ? -1 : stack.indexOf(error.message);
  if (at !== -1 && (firstFrame === -1 || at < firstFrame)) {
    const frames = stack.slice(at + error.message.length).replace(/^\n/, '');
    return frames ? `${head}\n${frames}` : head;
  }
  return `${head}\n\n${stack}`;
}
