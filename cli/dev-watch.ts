import { basename, extname, relative } from 'node:path';
import { watch } from 'chokidar';
import { RestartRequiredError } from '../lib/errors';
import type { LocalStack, ProvisionChanges, Reloaded } from '../lib/local/dev';

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
 * The line a reload prints: the tasks it runs now, and what it created or removed on the emulators
 * for the new config (nothing said when it changed none).
 *
 * @example
 * reloadLine({ bundle, provisioned: { queues: ['mail'], topics: [], subscribed: [], unsubscribed: [] } }, 2);
 * // 'reloaded: 2 task(s): pack, receipt; created queue mail; 2 function container(s) restarted'
 */
export function reloadLine(reloaded: Reloaded, containers: number): string {
  const { bundle, provisioned } = reloaded;
  const changed = provisionedParts(provisioned);
  return `reloaded: ${bundle.tasks.length} task(s): ${bundle.tasks.map((t) => t.name).join(', ')}; ${
    changed.length > 0 ? `${changed.join(', ')}; ` : ''
  }${containers} function container(s) restarted`;
}

function provisionedParts(p: ProvisionChanges): string[] {
  const arrow = (s: { queue: string; topic: string }) => `${s.queue} ← ${s.topic}`;
  return [
    ...(p.queues.length > 0 ? [`created queue ${p.queues.join(', ')}`] : []),
    ...(p.topics.length > 0 ? [`created topic ${p.topics.join(', ')}`] : []),
    ...(p.subscribed.length > 0 ? [`subscribed ${p.subscribed.map(arrow).join(', ')}`] : []),
    ...(p.unsubscribed.length > 0 ? [`unsubscribed ${p.unsubscribed.map(arrow).join(', ')}`] : []),
  ];
}

/**
 * `--watch`: rebuilds when a source file under the tasks directory or the config changes, provisions
 * what the new config needs and restarts the dispatchers on the new build (running tasks finish, the
 * rest are released). A build that fails, or a change that needs a restart (another app name), is
 * reported in one line and the previous build keeps running.
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
        const reloaded = await stack.reload();
        out(reloadLine(reloaded, stack.alive()));
      } catch (error) {
        if (error instanceof RestartRequiredError) {
          err(`not reloaded: ${error.message}`);
          return;
        }
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
