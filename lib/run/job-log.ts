/**
 * A job's log lines: what its body writes with `ctx.log`, and what it prints with `console`, each
 * one JSON line carrying the job's id, attempt, task and queue and `source: "task"`. The job page
 * and `taskworker jobs logs` find them by job id: locally in dev's log file, on AWS with a
 * CloudWatch Logs Insights query over the dispatcher's log group (lib/operate/job-logs.ts).
 *
 * Lines go to the process's stdout (`debug`, `info`) or stderr (`warn`, `error`) directly, as the
 * dispatcher's own log lines do: on Lambda each is one log event whose JSON Logs Insights reads
 * field by field. `console` is captured only inside a body's run (an AsyncLocalStorage scope, so
 * the inline executor's concurrent bodies each keep their own job); outside one it is untouched.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { format } from 'node:util';
import { stringify } from 'safe-stable-stringify';
import type { TaskLog, TaskLogLevel } from '../tasks/task';

/** What every line of one attempt carries. */
export interface JobLogBindings {
  readonly jobId: string;
  readonly attempt: number;
  readonly task: string;
  readonly queue: string;
  /**
   * A batch call's lines: the id of every job in the call (`jobId` and `attempt` are its first
   * item's). Each item's job page finds them by this.
   */
  readonly jobIds?: readonly string[];
}

/** The `source` of a task's own lines, beside the dispatcher's. */
export const TASK_LOG_SOURCE = 'task';

/** A body's line as written (and as the readers parse it back). */
export interface TaskLogLine extends JobLogBindings {
  readonly level: TaskLogLevel;
  readonly time: string;
  readonly message: string;
  readonly source: typeof TASK_LOG_SOURCE;
  readonly [field: string]: unknown;
}

/** A message longer than this is cut (and says so): CloudWatch takes events up to 256 KB, and a job's page shows every line. */
export const MAX_TASK_LOG_MESSAGE_CHARS = 8_192;

/** Where one attempt's lines go: the process's streams, or the run's own hook (the test kit's `runTask`). */
export type TaskLogSink = (line: string, level: TaskLogLevel) => void;

const toStreams: TaskLogSink = (line, level) =>
  (level === 'warn' || level === 'error' ? process.stderr : process.stdout).write(`${line}\n`);

const scope = new AsyncLocalStorage<{ readonly bindings: JobLogBindings; readonly sink: TaskLogSink }>();

/** One line of the attempt `bindings`, as written. */
export function taskLogLine(level: TaskLogLevel, bindings: JobLogBindings, message: string, fields?: Record<string, unknown>): string {
  const cut =
    message.length > MAX_TASK_LOG_MESSAGE_CHARS
      ? `${message.slice(0, MAX_TASK_LOG_MESSAGE_CHARS)}… (${message.length - MAX_TASK_LOG_MESSAGE_CHARS} more characters)`
      : message;
  // Cycles, BigInts and the like in `fields` are written as safe-stable-stringify writes them, never thrown.
  return (
    stringify({
      ...fields,
      level,
      time: new Date().toISOString(),
      message: cut,
      source: TASK_LOG_SOURCE,
      jobId: bindings.jobId,
      attempt: bindings.attempt,
      task: bindings.task,
      queue: bindings.queue,
      ...(bindings.jobIds ? { jobIds: bindings.jobIds } : {}),
    }) ?? ''
  );
}

/** The `ctx.log` of one attempt. */
export function taskLog(bindings: JobLogBindings, sink: TaskLogSink = toStreams): TaskLog {
  const at = (level: TaskLogLevel) => (message: string, fields?: Record<string, unknown>) =>
    sink(taskLogLine(level, bindings, String(message), fields), level);
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

const CONSOLE_LEVELS: ReadonlyArray<readonly ['log' | 'info' | 'debug' | 'trace' | 'warn' | 'error', TaskLogLevel]> = [
  ['log', 'info'],
  ['info', 'info'],
  ['debug', 'debug'],
  ['trace', 'debug'],
  ['warn', 'warn'],
  ['error', 'error'],
];

let consoleCaptured = false;

/** Makes `console` write a body's lines as the job's (once per thread; outside a body's scope it is as it was). */
function captureConsole(): void {
  if (consoleCaptured) return;
  consoleCaptured = true;
  for (const [method, level] of CONSOLE_LEVELS) {
    const original = console[method].bind(console);
    console[method] = (...args: unknown[]) => {
      const run = scope.getStore();
      if (run === undefined) original(...args);
      else run.sink(taskLogLine(level, run.bindings, format(...args)), level);
    };
  }
}

/** Runs a body with `console` written as the job's lines. */
export function inJobLogScope<T>(bindings: JobLogBindings, sink: TaskLogSink = toStreams, body: () => T): T {
  captureConsole();
  return scope.run({ bindings, sink }, body);
}
