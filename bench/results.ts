/**
 * What every benchmark's JSON records about where it was measured, and the one place they print
 * it. `bench/write-tables.ts` writes BENCHMARKS.md's tables from these files and names the
 * commit each came from; `bench/staleness.ts` judges that commit against the code as it is now.
 */
import { execFileSync } from 'node:child_process';

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

/** The benchmark's document with `measuredAt` added, as JSON (indented unless `indent` is 0). */
export function resultsJson(document: object, indent = 2): string {
  return JSON.stringify({ ...document, measuredAt: measuredAt() }, null, indent);
}

/** Prints the document, with `measuredAt`, as the benchmark's `--json` output. */
export function printResults(document: object, indent = 2): void {
  process.stdout.write(`${resultsJson(document, indent)}\n`);
}
