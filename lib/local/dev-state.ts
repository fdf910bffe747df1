import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { processAlive } from '../aws/dev-file';
import { DevStateInUseError } from '../errors';

/**
 * The directory where `taskworker dev` keeps its emulators' state between runs
 * (`.taskworker/emulators/` of the project):
 *
 *   dynamodb/    the tables, kept by dynalite itself (LevelDB) as they are written
 *   snapshot/    the queues' messages and the buckets' objects, written at a clean stop (fauxqs keeps
 *                them in memory only; lib/local/snapshot.ts) and put back at the next start
 *   owner.json   the running dev's pid, from its start until its clean stop
 *
 * A dev that was killed leaves owner.json behind, and its tables say jobs are queued whose messages
 * died with it (and anything it ran since the last snapshot is in the tables but not the queues). Put
 * back half, such a state lists jobs that never run and dependents that wait for ever; so the next
 * start notices the stale owner.json, says so in one line, and starts empty, as `--reset` does.
 */
export interface DevStateDir {
  readonly dir: string;
  readonly dynamodbPath: string;
  readonly snapshotDir: string;
  /** How this start found the directory. */
  readonly found: DevStateFound;
  /** Gives the directory up at a clean stop (or a start that failed): the next start takes it as it is. */
  release(): void;
}

/**
 * - `new`: nothing kept there yet.
 * - `kept`: what the last dev left at its clean stop (tables; the snapshot, when one is there).
 * - `reset`: asked to start empty; what was kept is gone.
 * - `unclean`: the last dev there (`pid`, when its file could be read) did not stop cleanly; what it left is gone.
 */
export type DevStateFound =
  | { readonly kind: 'new' }
  | { readonly kind: 'kept' }
  | { readonly kind: 'reset' }
  | { readonly kind: 'unclean'; readonly pid?: number };

const OWNER_FILE = 'owner.json';

/**
 * Takes the state directory for this process: refuses one a running dev holds
 * ({@link DevStateInUseError}), empties it when asked (`reset`) or when its last dev did not stop
 * cleanly, and marks it as this process's until {@link DevStateDir.release}.
 */
export function claimDevState(dir: string, options: { readonly reset?: boolean } = {}): DevStateDir {
  const root = resolve(dir);
  const owner = join(root, OWNER_FILE);
  const previous = ownerOf(owner);
  if (typeof previous === 'number' && processAlive(previous)) throw new DevStateInUseError(root, previous);
  const dynamodbPath = join(root, 'dynamodb');
  const snapshotDir = join(root, 'snapshot');
  let found: DevStateFound;
  if (previous !== undefined) found = typeof previous === 'number' ? { kind: 'unclean', pid: previous } : { kind: 'unclean' };
  else if (options.reset) found = { kind: 'reset' };
  else found = existsSync(snapshotDir) || nonEmpty(dynamodbPath) ? { kind: 'kept' } : { kind: 'new' };
  if (found.kind === 'unclean' || found.kind === 'reset') rmSync(root, { recursive: true, force: true });
  mkdirSync(dynamodbPath, { recursive: true });
  writeFileSync(owner, `${JSON.stringify({ pid: process.pid, startedAt: new Date().toISOString() })}\n`);
  return {
    dir: root,
    dynamodbPath,
    snapshotDir,
    found,
    release: () => rmSync(owner, { force: true }),
  };
}

/** The pid in an owner file; `unreadable` for one cut short (by a crash as it was written: its writer is gone too). */
function ownerOf(file: string): number | 'unreadable' | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
  try {
    const pid = (JSON.parse(text) as { pid?: unknown }).pid;
    return typeof pid === 'number' && Number.isInteger(pid) && pid > 0 ? pid : 'unreadable';
  } catch {
    return 'unreadable';
  }
}

function nonEmpty(dir: string): boolean {
  try {
    return readdirSync(dir).length > 0;
  } catch {
    return false;
  }
}
