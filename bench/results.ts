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
   * imports them. Nor are what benchmarks write ({@link BENCHMARK_OUTPUTS}): another benchmark's
   * new JSON or the tables generated from it, uncommitted while a session re-measures one
   * benchmark after another, are not code any benchmark runs.
   */
  readonly dirty: boolean | null;
}

/** What benchmarks and `npm run bench:tables` write, as git pathspecs: never code a benchmark runs. */
export const BENCHMARK_OUTPUTS: readonly string[] = ['bench/results/', '*.md'];

function git(args: readonly string[], cwd?: string): string | null {
  try {
    return execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return null;
  }
}

/** The commit the working tree (of `cwd`, this process's own by default) is at, and whether it has changes. */
export function measuredAt(cwd?: string): MeasuredAt {
  const commit = git(['rev-parse', '--short', 'HEAD'], cwd);
  const outputs = BENCHMARK_OUTPUTS.map((path) => `:(exclude)${path}`);
  const status = commit === null ? null : git(['status', '--porcelain', '--untracked-files=no', '--', '.', ...outputs], cwd);
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
