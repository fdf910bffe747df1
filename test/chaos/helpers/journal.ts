import { readFileSync } from 'node:fs';
import type { JournalNote } from '../fixtures/journal-tasks/journal';

/** One job's bodies as its journal tells: their starts and their effects, each in the order noted. */
export interface JobJournal {
  readonly starts: readonly JournalNote[];
  readonly ends: readonly JournalNote[];
}

const NONE: JobJournal = { starts: [], ends: [] };

/** The `journal` task's file, by job (an empty journal for a job with no line). */
export function readJournal(file: string): { readonly of: (jobId: string) => JobJournal; readonly notes: number } {
  let text = '';
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    // no body ran
  }
  const notes = text
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as JournalNote);
  const byJob = new Map<string, { starts: JournalNote[]; ends: JournalNote[] }>();
  for (const n of notes) {
    const j = byJob.get(n.job) ?? { starts: [], ends: [] };
    (n.what === 'start' ? j.starts : j.ends).push(n);
    byJob.set(n.job, j);
  }
  return { of: (jobId) => byJob.get(jobId) ?? NONE, notes: notes.length };
}

/**
 * Why a job's body ran again without a crash, or undefined when every later body is explained.
 * A body started after another of the same job is explained by a crash (the earlier body's process
 * was killed before the later one started) or by a recorded failure of the earlier attempt
 * (`retrying` in the record's history) whose body had not reached its effect. A body that reached
 * its effect in a process that lived on, and ran again, is not; nor are two bodies of one attempt.
 */
export function unexplainedRerun(
  journal: JobJournal,
  /** The claims (fencing tokens, as the history's entries carry them) whose attempt failed. */
  failedAttempts: ReadonlySet<number>,
  killedAt: ReadonlyMap<number, number>,
): string | undefined {
  const starts = [...journal.starts].sort((a, b) => a.at - b.at);
  const attempts = new Set<number>();
  for (const s of starts) {
    if (attempts.has(s.token)) return `two bodies of claim ${s.token}`;
    attempts.add(s.token);
  }
  for (let i = 0; i + 1 < starts.length; i++) {
    const earlier = starts[i] as JournalNote;
    const later = starts[i + 1] as JournalNote;
    if ((killedAt.get(earlier.pid) ?? Number.POSITIVE_INFINITY) <= later.at) continue;
    const reachedEffect = journal.ends.some((e) => e.token === earlier.token);
    if (failedAttempts.has(earlier.token) && !reachedEffect) continue;
    return reachedEffect
      ? `claim ${earlier.token} reached its effect in process ${earlier.pid}, which lived on, and claim ${later.token} ran again`
      : `claim ${later.token} started while process ${earlier.pid} of claim ${earlier.token} lived and no failure of it was recorded`;
  }
  return undefined;
}
