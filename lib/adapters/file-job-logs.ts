/**
 * A job's log lines from a file of JSON lines: `taskworker dev`'s log (`.taskworker/dev.log`), where
 * every line its dispatcher processes write lands. A line is the job's when its `jobId` is the id, or
 * its `jobIds` (a batch call's line) name it.
 */
import { readFile } from 'node:fs/promises';
import type { JobLogEntry, JobLogReader } from '../track/job-logs';

/** The fields every job line carries, shown apart from its own. */
const BOUND_FIELDS = new Set(['level', 'time', 'message', 'source', 'jobId', 'attempt', 'task', 'queue', 'service', 'jobIds']);

/** A JSON log line as a job's entry, when it names `jobId`; undefined for any other line. */
export function jobLogEntryOf(line: string, jobId: string): JobLogEntry | undefined {
  // Most lines are other jobs': the id's text is looked for before any parsing.
  if (!line.startsWith('{') || !line.includes(jobId)) return undefined;
  let parsed: Record<string, unknown>;
  try {
    parsed = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null) return undefined;
  const own = parsed.jobId === jobId;
  if (!own && !(Array.isArray(parsed.jobIds) && parsed.jobIds.includes(jobId))) return undefined;
  const fields = Object.fromEntries(Object.entries(parsed).filter(([key]) => !BOUND_FIELDS.has(key)));
  return {
    time: typeof parsed.time === 'string' ? parsed.time : '',
    level: typeof parsed.level === 'string' ? parsed.level.toLowerCase() : 'info',
    message: typeof parsed.message === 'string' ? parsed.message : '',
    source: parsed.source === 'task' ? 'task' : 'dispatcher',
    // A batch call's `attempt` is its first item's: the others' are on their own records.
    ...(own && typeof parsed.attempt === 'number' ? { attempt: parsed.attempt } : {}),
    fields,
  };
}

/** Reads the job's lines from `file` (a missing file has none). */
export function fileJobLogs(file: string, shownAs = file): JobLogReader {
  return {
    where: shownAs,
    async linesOf(jobId, window) {
      let text: string;
      try {
        text = await readFile(file, 'utf8');
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
        throw error;
      }
      const entries: JobLogEntry[] = [];
      for (const line of text.split('\n')) {
        const entry = jobLogEntryOf(line, jobId);
        if (!entry) continue;
        const at = Date.parse(entry.time);
        if (Number.isFinite(at) && (at < window.from || at > window.to)) continue;
        entries.push(entry);
      }
      return entries;
    },
  };
}
