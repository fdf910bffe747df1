import { basename, extname, relative } from 'node:path';
import { watch } from 'chokidar';
import type { LocalStack } from '../lib/local/dev';

/** Time for an editor's burst of writes (save, format, rename) to settle before a rebuild. */
const SETTLE_MS = 300;

/** What a task module can import that the build reads: anything else in the folder is not source. */
const SOURCE_EXTENSIONS = new Set(['.ts', '.tsx', '.mts', '.cts', '.js', '.jsx', '.mjs', '.cjs', '.json']);

/**
 * Whether a changed file is source the build reads, not an editor's temporary or backup file
 * (sed's `sedAlFQ3j`, vim's `4913` and `.x.ts.swp`, emacs's `.#x.ts` and `x.ts~`, JetBrains'
 * `x.ts___jb_tmp___`).
 *
 * @example
 * isWatchedSource('tasks/send-email.ts'); // true
 * isWatchedSource('tasks/sedAlFQ3j'); // false
 */
export function isWatchedSource(file: string): boolean {
  const name = basename(file);
  if (name.startsWith('.') || name.startsWith('#') || name.endsWith('~')) return false;
  return SOURCE_EXTENSIONS.has(extname(name));
}

/**
 * `--watch`: rebuilds when a source file under the tasks directory or the config changes, and
 * restarts the dispatchers on the new build (running tasks finish, the rest are released). A
 * build that fails is reported in one line and the previous build keeps running.
 *
 * chokidar rather than `fs.watch`: an editor's atomic save (write a temporary file, rename it over
 * the task) replaces the watched inode, after which a raw recursive `fs.watch` on Linux hears
 * nothing more of that file; chokidar re-arms its watch and reports the rename as a change.
 * Resolves once the watcher has read the tree, so a save right after it is heard.
 */
export async function watchSources(
  stack: LocalStack,
  paths: { tasksDir: string; configFile: string },
  out: (line: string) => void,
  err: (line: string) => void,
): Promise<{ close(): Promise<void> }> {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  let changed = new Set<string>();
  const rebuild = () => {
    const files = [...changed].map((f) => relative(process.cwd(), f) || f);
    changed = new Set();
    running = running.then(async () => {
      out(`change in ${files.join(', ')}: rebuilding; running tasks finish first...`);
      try {
        const bundle = await stack.reload();
        out(
          `reloaded: ${bundle.tasks.length} task(s): ${bundle.tasks.map((t) => t.name).join(', ')}; ${stack.alive()} function container(s) restarted`,
        );
      } catch (error) {
        err(
          `rebuild failed, the previous build keeps running: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`,
        );
      }
    });
  };
  const watcher = watch([paths.tasksDir, paths.configFile], {
    ignoreInitial: true,
    // Files only: a directory's name says nothing about what it holds.
    ignored: (file, stats) => basename(file) === 'node_modules' || (stats?.isFile() === true && !isWatchedSource(file)),
  });
  const onChange = (file: string) => {
    if (!isWatchedSource(file)) return;
    changed.add(file);
    clearTimeout(timer);
    timer = setTimeout(rebuild, SETTLE_MS);
  };
  watcher.on('add', onChange).on('change', onChange).on('unlink', onChange);
  watcher.on('error', (error) => err(`watch: ${error instanceof Error ? error.message : String(error)}`));
  await new Promise<void>((ready) => watcher.once('ready', ready));
  return {
    async close() {
      clearTimeout(timer);
      await watcher.close();
    },
  };
}
