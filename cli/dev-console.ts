/**
 * What `taskworker dev` prints: one readable line per settled batch, per failed attempt, per
 * dispatcher that died, and per log line at or above the console's level. Pure functions of what
 * the local stack reports, so they are tested without processes.
 */
import { isAbsolute, relative } from 'node:path';
import type { DispatcherExit, StateAtStart } from '../lib/local/dev';
import type { BatchReport, JobReport } from '../lib/settle/report';

export const LOG_LEVELS = ['DEBUG', 'INFO', 'WARN', 'ERROR'] as const;
export type ConsoleLevel = (typeof LOG_LEVELS)[number];

/** `[dispatcher 0] urgent: 10 received: 9 succeeded, 1 retried` */
export function batchLine(report: BatchReport, dispatcher: number): string {
  const counts = new Map<string, number>();
  for (const job of report.jobs) {
    const key = job.outcome === 'archived' ? `archived(${job.reason})` : job.outcome;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  const parts = [...counts].map(([k, n]) => `${n} ${k}`).join(', ');
  return `[dispatcher ${dispatcher}] ${report.queue}: ${report.jobs.length} received: ${parts}`;
}

/**
 * One line per failed attempt of a batch: task, job id, attempt, the error's name and message,
 * where it was thrown (the first stack frame in the user's code, source-mapped), and what follows.
 */
export function failureLines(report: BatchReport, dispatcher: number, cwd = process.cwd()): string[] {
  return report.jobs
    .filter((j) => j.error && (j.outcome === 'retried' || j.outcome === 'archived'))
    .map((j) => failureLine(j, dispatcher, cwd));
}

function failureLine(job: JobReport, dispatcher: number, cwd: string): string {
  const error = job.error as NonNullable<JobReport['error']>;
  const at = userFrame(error.stack, cwd);
  const then = job.outcome === 'retried' ? 'retrying' : `archived (${job.reason})`;
  const what = job.task ? `${job.task} ${job.jobId ?? job.messageId} attempt ${job.attempt}` : `message ${job.messageId}`;
  return `[dispatcher ${dispatcher}] ✗ ${what}: ${error.type}: ${error.message}${at ? ` at ${at}` : ''} → ${then}`;
}

/** `file:line:column` of the first stack frame outside node_modules and Node itself, relative to `cwd`. */
export function userFrame(stack: string | undefined, cwd: string): string | undefined {
  for (const line of stack?.split('\n') ?? []) {
    const location = /^\s+at (?:.*?\()?((?:[A-Za-z]:)?[^():]+):(\d+):(\d+)\)?\s*$/.exec(line);
    if (!location) continue;
    const [, file = '', row, column] = location;
    if (file.startsWith('node:') || file.includes('node_modules') || /[\\/]taskworker-dev-[^\\/]+[\\/]/.test(file)) continue;
    return `${isAbsolute(file) ? relative(cwd, file) : file}:${row}:${column}`;
  }
  return undefined;
}

/** One line for a dispatcher process that ended while dev ran: how, the jobs it held, what comes next. */
export function exitLine(exit: DispatcherExit): string {
  const how = exit.signal ? `was killed by ${exit.signal}` : `exited with code ${exit.code}`;
  const jobs = exit.held.slice(0, 5).map((j) => `${j.task ?? '(undecoded)'} ${j.jobId ?? j.messageId}`);
  const more = exit.held.length > 5 ? `, and ${exit.held.length - 5} more` : '';
  const held =
    exit.held.length === 0
      ? 'it held no job'
      : `it held ${exit.held.length} job(s): ${jobs.join(', ')}${more} (they return when their visibility lapses)`;
  const next = exit.replacement
    ? `; starting dispatcher ${exit.replacement.dispatcher} in ${(exit.replacement.afterMs / 1000).toFixed(1)} s`
    : '';
  return `[dispatcher ${exit.dispatcher}] ${how}; ${held}${next}`;
}

/** Lambda context fields Powertools adds to every line: noise on a local console. */
const CONTEXT_KEYS = new Set([
  'level',
  'message',
  'timestamp',
  'time',
  'service',
  'cold_start',
  'function_arn',
  'function_memory_size',
  'function_name',
  'function_request_id',
  'sampling_rate',
  'xray_trace_id',
]);

/**
 * A dispatcher's output line for the console: a JSON log line at or above `level` becomes
 * `[dispatcher 0] WARN message key=value …`; below it, undefined. Anything else (a task's own
 * console output) is shown as it is, prefixed.
 */
export function consoleLine(line: string, dispatcher: number, level: ConsoleLevel): string | undefined {
  const parsed = parseLogLine(line);
  if (!parsed) return `[dispatcher ${dispatcher}] ${line}`;
  const lineLevel = String(parsed.level ?? 'INFO').toUpperCase() as ConsoleLevel;
  // A task's own line (ctx.log, console) is shown whatever the level, as its raw output was: the job's id and attempt first.
  if (parsed.source === 'task') return taskLine(parsed, dispatcher, lineLevel);
  if (LOG_LEVELS.indexOf(lineLevel) < LOG_LEVELS.indexOf(level)) return undefined;
  const fields = Object.entries(parsed)
    .filter(([key]) => !CONTEXT_KEYS.has(key))
    .map(([key, value]) => `${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`)
    .join(' ');
  return `[dispatcher ${dispatcher}] ${lineLevel} ${String(parsed.message ?? '')}${fields ? `  ${fields}` : ''}`;
}

/** A task's line: `[dispatcher 0] [job ID #1] INFO message  key=value …` (the job's task and queue left out). */
function taskLine(parsed: Record<string, unknown>, dispatcher: number, level: string): string {
  const fields = Object.entries(parsed)
    .filter(([key]) => !CONTEXT_KEYS.has(key) && !TASK_KEYS.has(key))
    .map(([key, value]) => `${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`)
    .join(' ');
  return `[dispatcher ${dispatcher}] [job ${String(parsed.jobId)} #${String(parsed.attempt)}] ${level} ${String(parsed.message ?? '')}${fields ? `  ${fields}` : ''}`;
}

const TASK_KEYS = new Set(['source', 'jobId', 'attempt', 'task', 'queue']);

/** Whether a JSON log line is at or above `level` (lines that are not JSON, and a task's own lines, always are). */
export function atLeast(line: string, level: ConsoleLevel): boolean {
  const parsed = parseLogLine(line);
  if (parsed?.source === 'task') return true;
  const lineLevel = String(parsed?.level ?? 'ERROR').toUpperCase() as ConsoleLevel;
  return LOG_LEVELS.indexOf(lineLevel) >= LOG_LEVELS.indexOf(level);
}

function parseLogLine(line: string): Record<string, unknown> | undefined {
  if (!line.startsWith('{')) return undefined;
  try {
    const parsed = JSON.parse(line) as unknown;
    return typeof parsed === 'object' && parsed !== null && 'level' in parsed ? (parsed as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The one line on what a start kept from the last run. A dev that was killed is told apart (it goes
 * to stderr): it started empty, and why.
 *
 * @example
 * stateLine({ dir: '/p/.taskworker/emulators', found: { kind: 'new' } }, '/p');
 * // { line: 'state: kept in .taskworker/emulators between runs (Ctrl-C stops cleanly and keeps it; --reset starts empty)' }
 */
export function stateLine(state: StateAtStart, cwd = process.cwd()): { line: string; warning?: true } {
  const dir = relative(cwd, state.dir) || state.dir;
  switch (state.found.kind) {
    case 'new':
      return { line: `state: kept in ${dir} between runs (Ctrl-C stops cleanly and keeps it; --reset starts empty)` };
    case 'reset':
      return { line: `state: started empty (--reset); kept in ${dir} between runs from now on` };
    case 'kept': {
      const r = state.restored;
      const put = r ? `, ${r.messages} message(s) in ${r.queues} queue(s), ${r.objects} stored object(s)` : '';
      return { line: `state: kept from the last run in ${dir}: the jobs tables${put} (--reset starts empty)` };
    }
    case 'unclean': {
      const who = state.found.pid !== undefined ? ` (pid ${state.found.pid})` : '';
      return {
        line: `the last taskworker dev here${who} did not stop cleanly (killed?): its queues' messages died with it, so this one starts empty rather than with jobs that would never run (Ctrl-C stops cleanly and keeps them)`,
        warning: true,
      };
    }
  }
}
