import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, extname, join, relative, resolve } from 'node:path';
import type * as Esbuild from 'esbuild';
import type { BuildOptions as EsbuildOptions } from 'esbuild';
import { BundleError } from '../errors';
import { loadModule } from './bundle';
import { FROM_SOURCE, optionalDependency, PACKAGE_ROOT, PREBUILT_ARTIFACT_DIR } from './package-root';

export { PACKAGE_ROOT } from './package-root';

export interface ArtifactOptions {
  /** The app config module (`export default defineConfig({...})`) or a JSON file. */
  readonly configFile: string;
  /** Task modules directory. @defaultValue the config's `tasksDir`, relative to the config file */
  readonly tasksDir?: string;
  readonly outDir: string;
  /** Minify (Lambda) or keep readable stack traces (local). @defaultValue false */
  readonly minify?: boolean;
  /** Also build `runner.js`, the local stand-in for the Lambda runtime. @defaultValue false */
  readonly localRunner?: boolean;
  /**
   * Bundle the AWS SDK (`@aws-sdk/*`) into the artifact, or leave it to the Lambda runtime's copy.
   * Bundled is what the stack deploys: measured in BENCHMARKS.md (`npm run bench:artifact`).
   * @defaultValue true
   */
  readonly bundleAwsSdk?: boolean;
}

export interface Artifact {
  readonly outDir: string;
  /** Lambda handler file: `index.js`, export `handler`. */
  readonly handlerFile: string;
  /** Config + task modules + worker-thread runtime: `tasks.cjs`. */
  readonly tasksFile: string;
  readonly runnerFile: string | undefined;
  readonly taskFiles: readonly string[];
}

const TASK_EXTENSIONS = new Set(['.ts', '.mts', '.cts', '.js', '.mjs', '.cjs']);

/**
 * Lists the task modules of a directory: every top-level script except tests and declarations.
 * Helpers belong in subdirectories or in files starting with `_`.
 */
export function listTaskModules(tasksDir: string): string[] {
  if (!existsSync(tasksDir) || !statSync(tasksDir).isDirectory()) throw new BundleError(`tasks directory ${tasksDir} does not exist`);
  return readdirSync(tasksDir)
    .filter((f) => TASK_EXTENSIONS.has(extname(f)) && !f.startsWith('_') && !f.endsWith('.d.ts') && !/\.(test|spec)\./.test(f))
    .sort()
    .map((f) => join(tasksDir, f));
}

/** esbuild, which a service that only publishes need not install. */
function esbuild(): typeof Esbuild {
  return optionalDependency('esbuild', 'building task bundles', () => require('esbuild') as typeof Esbuild);
}

/**
 * From the sources, the package's public entry points resolve to the sources they are built from,
 * so the tasks bundle (and the example app) runs this checkout's code. An installed package needs
 * none of this: its entry points resolve through its `exports`.
 */
const SOURCE_ENTRIES: Record<string, string> = {
  taskworker: join(PACKAGE_ROOT, 'lib', 'index.ts'),
  'taskworker/runtime': join(PACKAGE_ROOT, 'lib', 'runtime.ts'),
  'taskworker/testing': join(PACKAGE_ROOT, 'lib', 'testing', 'index.ts'),
};

const esbuildDefaults = (minify: boolean, bundleAwsSdk = true): EsbuildOptions => ({
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  minify,
  sourcemap: 'linked',
  logLevel: 'silent',
  ...(FROM_SOURCE ? { alias: SOURCE_ENTRIES } : {}),
  // Dev-only packages that must never reach a Lambda bundle.
  // With bundleAwsSdk false, `@aws-sdk/*` resolves at run time (Lambda's runtime ships v3).
  external: ['fauxqs', 'dynalite', 'esbuild', ...(bundleAwsSdk ? [] : ['@aws-sdk/*'])],
});

export interface TasksBundleOptions {
  readonly configFile: string;
  readonly tasksDir?: string;
  readonly outFile: string;
  readonly minify?: boolean;
  /** @defaultValue true */
  readonly bundleAwsSdk?: boolean;
}

/**
 * Builds `tasks.cjs`: the config, every task module of the tasks directory and the worker-thread
 * runtime. The dispatcher loads it to read definitions; each pool thread loads it to run them.
 */
export async function buildTasksBundle(options: TasksBundleOptions): Promise<{ tasksFile: string; taskFiles: string[] }> {
  const { build, taskFiles } = tasksBundleBuild(options);
  await esbuildOrThrow(build);
  return { tasksFile: build.outfile as string, taskFiles };
}

/** {@link buildTasksBundle}, synchronously: for a CDK construct, whose constructor cannot wait. */
export function buildTasksBundleSync(options: TasksBundleOptions): { tasksFile: string; taskFiles: string[] } {
  const { build, taskFiles } = tasksBundleBuild(options);
  try {
    esbuild().buildSync(build);
  } catch (error) {
    throw esbuildFailed(error);
  }
  return { tasksFile: build.outfile as string, taskFiles };
}

function tasksBundleBuild(options: TasksBundleOptions): { build: EsbuildOptions; taskFiles: string[] } {
  const configFile = resolve(options.configFile);
  if (!existsSync(configFile)) throw new BundleError(`config file ${configFile} does not exist`);
  // A relative tasksDir is relative to the config module; an absolute one stands as it is.
  const tasksDir = resolve(options.tasksDir ?? resolve(dirname(configFile), readTasksDir(configFile)));
  const taskFiles = listTaskModules(tasksDir);
  if (taskFiles.length === 0) throw new BundleError(`tasks directory ${tasksDir} has no task modules`);
  // Modules are required lazily, one at a time, so one that throws while loading is named (by its
  // path in the user's project) instead of the bundle.
  const shown = (file: string) => relative(dirname(configFile), file) || file;
  const list = taskFiles
    .map((file) => `{ file: ${JSON.stringify(shown(file))}, load: () => require(${JSON.stringify(file)}) }`)
    .join(',\n  ');
  const entry = [
    // Through the package, as the tasks import it: one copy of the library in the bundle.
    "import { loadModule, startTaskWorker } from 'taskworker/runtime';",
    `const configModule = loadModule({ file: ${JSON.stringify(shown(configFile))}, load: () => require(${JSON.stringify(configFile)}) }, 'config file');`,
    'export const config = configModule.default ?? configModule;',
    `export const taskModules = [\n  ${list}\n].map((m) => ({ file: m.file, module: loadModule(m, 'task module') }));`,
    'startTaskWorker(taskModules);',
  ].join('\n');
  return {
    build: {
      ...esbuildDefaults(options.minify ?? false, options.bundleAwsSdk),
      stdin: { contents: entry, resolveDir: tasksDir, sourcefile: 'tasks-entry.ts', loader: 'ts' },
      outfile: resolve(options.outFile),
    },
    taskFiles,
  };
}

/**
 * The handler (`index.js`) and the local runner (`runner.js`): built from the sources, or copied
 * from the installed package, which ships them prebuilt (they hold no user code; only `tasks.cjs`
 * does).
 */
async function buildRuntimeFiles(outDir: string, minify: boolean, bundleAwsSdk: boolean, localRunner: boolean): Promise<void> {
  const files = [
    { name: 'index.js', source: join(PACKAGE_ROOT, 'functions', 'dispatcher-handler.ts'), sdk: bundleAwsSdk },
    ...(localRunner ? [{ name: 'runner.js', source: join(PACKAGE_ROOT, 'lib', 'local', 'runner.ts'), sdk: true }] : []),
  ];
  if (!FROM_SOURCE) {
    for (const { name } of files) {
      for (const file of [name, `${name}.map`]) copyFileSync(join(PREBUILT_ARTIFACT_DIR, file), join(outDir, file));
    }
    return;
  }
  await Promise.all(
    files.map(({ name, source, sdk }) =>
      esbuildOrThrow({ ...esbuildDefaults(minify, sdk), entryPoints: [source], outfile: join(outDir, name) }),
    ),
  );
}

/**
 * Builds the dispatcher artifact with esbuild: the same files run in Lambda and in
 * `taskworker dev`. `index.js` is the handler; `tasks.cjs` is {@link buildTasksBundle}'s output.
 */
export async function buildArtifact(options: ArtifactOptions): Promise<Artifact> {
  const outDir = resolve(options.outDir);
  await mkdir(outDir, { recursive: true });
  const minify = options.minify ?? false;
  const bundleAwsSdk = options.bundleAwsSdk ?? true;
  const handlerFile = join(outDir, 'index.js');
  const runnerFile = options.localRunner ? join(outDir, 'runner.js') : undefined;
  const [{ tasksFile, taskFiles }] = await Promise.all([
    buildTasksBundle({
      configFile: options.configFile,
      ...(options.tasksDir ? { tasksDir: options.tasksDir } : {}),
      outFile: join(outDir, 'tasks.cjs'),
      minify,
      bundleAwsSdk,
    }),
    buildRuntimeFiles(outDir, minify, bundleAwsSdk, options.localRunner ?? false),
  ]);
  return { outDir, handlerFile, tasksFile, runnerFile, taskFiles };
}

async function esbuildOrThrow(options: EsbuildOptions): Promise<void> {
  const { build } = esbuild();
  try {
    await build(options);
  } catch (error) {
    throw esbuildFailed(error);
  }
}

function esbuildFailed(error: unknown): BundleError {
  return new BundleError(`esbuild failed: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
}

/** Reads `tasksDir` from a config module without running it twice: bundle it alone and evaluate. */
function readTasksDir(configFile: string): string {
  const config = loadConfigModuleSync(configFile);
  const dir = (config as { tasksDir?: unknown } | undefined)?.tasksDir;
  return typeof dir === 'string' && dir.length > 0 ? dir : 'tasks';
}

/** Evaluates a config module (TypeScript, JavaScript or JSON) and returns its default export. */
export async function loadConfigModule(configFile: string): Promise<unknown> {
  return loadConfigModuleSync(configFile);
}

/**
 * {@link loadConfigModule}, synchronously: a CDK construct's constructor cannot wait. The config
 * module is compiled by esbuild and evaluated in this process (it should be data, not side effects).
 */
export function loadConfigModuleSync(configFile: string): unknown {
  const file = resolve(configFile);
  if (extname(file) === '.json') return JSON.parse(readFileSync(file, 'utf8'));
  const dir = mkdtempSync(join(tmpdir(), 'taskworker-config-'));
  const outfile = join(dir, 'config.cjs');
  const { buildSync } = esbuild();
  try {
    try {
      buildSync({ ...esbuildDefaults(false), sourcemap: false, entryPoints: [file], outfile });
    } catch (error) {
      throw esbuildFailed(error);
    }
    const exported = loadModule({ file: relative(process.cwd(), file) || file, load: () => require(outfile) }, 'config file');
    return exported.default ?? exported;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
