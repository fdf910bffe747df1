/**
 * What every benchmark's JSON records about where it was measured, and the one place they print
 * it. `bench/write-tables.ts` writes BENCHMARKS.md's tables from these files and names the
 * commit each came from; `bench/staleness.ts` judges that commit against the code as it is now.
 */
import { execFileSync } from 'node:child_process';
import { isMainThread } from 'node:worker_threads';

export interface MeasuredAt {
  /** `git rev-parse --short HEAD` where the benchmark ran; null outside a git checkout. */
  readonly commit: string | null;
  /**
   * Tracked files differed from that commit (`git status --porcelain --untracked-files=no`), so
   * the figures may not be the commit's. Untracked files are not counted: nothing at the commit
   * imports them.
   */
  readonly dirty: boolean | null;
}

function git(args: readonly string[]): string | null {
  try {
    return execFileSync('git', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return null;
  }
}

/** The commit the working tree is at, and whether it has changes. */
export function measuredAt(): MeasuredAt {
  const commit = git(['rev-parse', '--short', 'HEAD']);
  const status = commit === null ? null : git(['status', '--porcelain', '--untracked-files=no']);
  return { commit, dirty: status === null ? null : status.length > 0 };
}

/**
 * Where the run began. A benchmark builds and loads its code when it starts, so that is the code it
 * measures: read at the end, a commit made while an hour-long run went on would be named instead.
 */
const atStart = isMainThread ? measuredAt() : undefined;

/** The benchmark's document with `measuredAt` (the tree as the run began) added, as JSON (indented unless `indent` is 0). */
export function resultsJson(document: object, indent = 2): string {
  return JSON.stringify({ ...document, measuredAt: atStart ?? measuredAt() }, null, indent);
}

/** Prints the document, with `measuredAt`, as the benchmark's `--json` output. */
export function printResults(document: object, indent = 2): void {
  process.stdout.write(`${resultsJson(document, indent)}\n`);
}
