/**
 * How the page writes durations and errors: pure, so the route tests' Jest can check it without a
 * browser (test/unit/ui-format.test.ts). No DOM, no Node.
 */
import { workerWeights } from '../../lib/operate/worker-views';
import type { JobRecord, WorkerView } from '../api-types';

/**
 * An instant as every page prints it: UTC to the millisecond, `2026-11-27 07:12:07.065 UTC`, the
 * instant the CLI prints in ISO 8601 and the logs carry; never the browser's local time, which
 * would not match them. – when there is none.
 */
export function utcTime(ms: number | undefined): string {
  return ms === undefined ? '–' : new Date(ms).toISOString().replace('T', ' ').replace('Z', ' UTC');
}

/** Whole seconds, never negative: `12 s`. */
const seconds = (ms: number) => `${Math.max(0, Math.round(ms / 1000))} s`;

/** The texts of a worker's row on the workers page, at `now` (the view's time). */
export function workerCells(
  w: WorkerView,
  now: number,
): { since: string; deadlineIn: string; lastHeard: string; weights: string; usage: string } {
  return {
    since: utcTime(w.startedAt),
    // Memory against the dispatcher's rssLimitMb (its memory guard's limit), CPU since its previous beat.
    usage: w.usage ? `${w.usage.rssMb} of ${w.usage.limitMb} MB · CPU ${w.usage.cpuPercent}%` : '–',
    deadlineIn: w.deadline > now ? seconds(w.deadline - now) : 'passed',
    lastHeard: `${seconds(now - w.heardAt)} ago`,
    weights: workerWeights(w, now) ?? '',
  };
}

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

/** A duration rounded for a glance (a histogram's bucket, an age): `840 ms`, `12.3 s`, `4.5 min`, `1.2 h`; – when there is none. */
export function duration(ms: number | undefined): string {
  if (ms === undefined || !Number.isFinite(ms)) return '–';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms < 3_600_000) return `${(ms / 60_000).toFixed(1)} min`;
  return `${(ms / 3_600_000).toFixed(1)} h`;
}

/** A quantile read off qless's buckets is the bucket's upper bound; none measured (null on the wire) is –. */
export const atMost = (ms: number | null) => (ms !== null && Number.isFinite(ms) ? `≤ ${duration(ms)}` : '–');

/** The CSS class of a queue's oldest-message age against its SLA: `ok` under half of it, `warn` under it, `late` past it, `unknown` without an age. */
export function ageClass(ageSeconds: number | undefined, slaSeconds: number): string {
  if (ageSeconds === undefined) return 'unknown';
  if (ageSeconds < slaSeconds / 2) return 'ok';
  return ageSeconds < slaSeconds ? 'warn' : 'late';
}

/** JSON text indented for reading; text that is not JSON as it is. */
export function pretty(json: string | undefined): string {
  if (json === undefined) return '';
  try {
    return JSON.stringify(JSON.parse(json), null, 2);
  } catch {
    return json;
  }
}
