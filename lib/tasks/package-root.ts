import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { MissingDependencyError } from '../errors';

/**
 * The packages this code is published in: `taskworker` (this repository, and what a service installs) and
 * `taskworker-toolkit` (the construct, the command and the prebuilt artifact, with their own copy of this library).
 */
const PACKAGE_NAMES: readonly string[] = ['taskworker', 'taskworker-toolkit'];

/** The package root: the nearest folder above this file whose package.json is one of {@link PACKAGE_NAMES}. */
export const PACKAGE_ROOT = findPackageRoot(__dirname);

function findPackageRoot(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    const manifest = join(dir, 'package.json');
    const name = existsSync(manifest) ? (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name : undefined;
    if (name !== undefined && PACKAGE_NAMES.includes(name)) return dir;
    if (dirname(dir) === dir) return resolve(from, '..');
  }
}

/**
 * Whether the package runs from its TypeScript sources (this repository, its tests) rather than
 * from the compiled package a user installed. From sources, artifacts are built from the sources;
 * installed, from the package's compiled and prebuilt files.
 */
export const FROM_SOURCE = existsSync(join(PACKAGE_ROOT, 'lib', 'index.ts'));

/** The installed package's prebuilt dispatcher handler and local runner (`npm run build` makes them). */
export const PREBUILT_ARTIFACT_DIR = join(PACKAGE_ROOT, 'dist', 'artifact');

/**
 * Loads a package taskworker needs only for some commands (esbuild to build task bundles, the
 * emulators for `taskworker dev`), which a service that only publishes does not install. A missing
 * one is one line saying what to install.
 */
export function optionalDependency<T>(name: string, purpose: string, load: () => T): T {
  try {
    return load();
  } catch (error) {
    throw missing(name, purpose, error);
  }
}

/** {@link optionalDependency} for a package loaded with `import()` (one that ships ES modules only). */
export async function optionalDependencyAsync<T>(name: string, purpose: string, load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (error) {
    throw missing(name, purpose, error);
  }
}

/**
 * Loads the optional packages one purpose needs, all of them (`taskworker dev`'s emulators: fauxqs
 * and dynalite). When any is missing, one {@link MissingDependencyError} names every missing one
 * with one command that installs them all, rather than one at a time (install it, run again, learn
 * of the next). Another failure to load is thrown as it is.
 *
 * @example
 * ```ts
 * const { fauxqs, dynalite } = await optionalDependencies('the local emulators (taskworker dev)', {
 *   fauxqs: () => import('fauxqs'),
 *   dynalite: () => require('dynalite'),
 * });
 * // missing both: "the local emulators (taskworker dev) needs fauxqs and dynalite: npm install --save-dev fauxqs@~1.9.2 dynalite@^4.0.0"
 * ```
 */
export async function optionalDependencies<L extends Record<string, () => unknown>>(
  purpose: string,
  loaders: L,
): Promise<{ -readonly [K in keyof L]: Awaited<ReturnType<L[K]>> }> {
  const names = Object.keys(loaders);
  const settled = await Promise.allSettled(names.map(async (name) => (loaders[name] as () => unknown)()));
  const absent: string[] = [];
  const loaded: Record<string, unknown> = {};
  settled.forEach((outcome, i) => {
    const name = names[i] as string;
    if (outcome.status === 'fulfilled') loaded[name] = outcome.value;
    else if (isModuleNotFound(outcome.reason)) absent.push(name);
  });
  const failed = settled.find((outcome) => outcome.status === 'rejected' && !isModuleNotFound(outcome.reason));
  if (failed?.status === 'rejected') throw failed.reason;
  if (absent.length > 0) throw missingAll(absent, purpose);
  return loaded as { -readonly [K in keyof L]: Awaited<ReturnType<L[K]>> };
}

function isModuleNotFound(error: unknown): boolean {
  const code = (error as { code?: string } | undefined)?.code;
  return code === 'MODULE_NOT_FOUND' || code === 'ERR_MODULE_NOT_FOUND';
}

function missing(name: string, purpose: string, error: unknown): unknown {
  return isModuleNotFound(error) ? missingAll([name], purpose) : error;
}

/** One line naming every missing package and the one command that installs them, at the versions the package expects. */
function missingAll(names: readonly string[], purpose: string): MissingDependencyError {
  const specs = names.map((name) => {
    const version = peerVersion(name);
    const spec = version ? `${name}@${version}` : name;
    // A range such as `>=0.28.2 <1` is quoted so the hint pastes into a shell as it is.
    return /^[\w@/.^~-]+$/.test(spec) ? spec : `'${spec}'`;
  });
  const listed = names.length === 1 ? names[0] : `${names.slice(0, -1).join(', ')} and ${names.at(-1)}`;
  return new MissingDependencyError(names.join(' '), `${purpose} needs ${listed}: npm install --save-dev ${specs.join(' ')}`);
}

/** The version range of a peer dependency, as the package's manifest gives it. */
function peerVersion(name: string): string | undefined {
  const manifest = JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { peerDependencies?: Record<string, string> };
  return manifest.peerDependencies?.[name];
}
