import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { PACKAGE_ROOT } from '../lib/tasks/package-root';
import { UsageError } from './shared';

export const INIT_USAGE = `taskworker init [DIR] [--name NAME] [--from-registry]
  Scaffolds a project in DIR (default: here): a config, a tasks folder with an example task and
  its unit test, a CDK app with a TaskworkerVersion, and a README. Refuses to overwrite a file.
  The project depends on this copy of taskworker and taskworker-toolkit, packed into DIR/vendor/
  (they are not on a public registry yet); --from-registry depends on the published versions instead.`;

/**
 * The devDependencies a new project needs besides taskworker-toolkit (which brings esbuild), at the
 * versions this package is built and tested with.
 */
const DEV_DEPENDENCIES = ['aws-cdk', 'aws-cdk-lib', 'constructs', 'dynalite', 'fauxqs', 'tsx', 'typescript', '@types/node'];

interface Manifest {
  readonly name: string;
  readonly version: string;
  /** In a checkout; the packed manifest has none, and the build keeps them in dist/dev-dependencies.json. */
  readonly devDependencies?: Record<string, string>;
}

function pinnedVersions(self: Manifest): Record<string, string> {
  if (self.devDependencies) return self.devDependencies;
  const file = join(PACKAGE_ROOT, 'dist', 'dev-dependencies.json');
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Record<string, string>) : {};
}

export async function initCommand(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { name: { type: 'string' }, 'from-registry': { type: 'boolean', default: false } },
    strict: true,
  });
  if (positionals.length > 1) throw new UsageError(`expected at most one DIR\n${INIT_USAGE}`);
  const dir = resolve(positionals[0] ?? '.');
  const app = projectName(values.name ?? basename(dir));
  const templates = join(PACKAGE_ROOT, 'templates', 'init');
  const files = listFiles(templates).map((file) => ({
    source: join(templates, file),
    // npm never packs a file named .gitignore, so the template is `gitignore`.
    target: join(dir, file === 'gitignore' ? '.gitignore' : file),
  }));
  const taken = [...files.map((f) => f.target), join(dir, 'package.json')].filter((path) => existsSync(path));
  if (taken.length > 0) {
    throw new UsageError(
      `${relative(process.cwd(), dir) || '.'} already has ${taken.map((p) => relative(dir, p)).join(', ')}: nothing was written`,
    );
  }

  const self = JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as Manifest;
  const packages = packageDirs(self);
  mkdirSync(dir, { recursive: true });
  const [taskworker, toolkit] = values['from-registry']
    ? [`^${self.version}`, `^${self.version}`]
    : [`file:${packInto(dir, packages.taskworker)}`, `file:${packInto(dir, packages.toolkit)}`];
  for (const { source, target } of files) {
    mkdirSync(resolve(target, '..'), { recursive: true });
    writeFileSync(target, readFileSync(source, 'utf8').replaceAll('{{app}}', app));
  }
  writeFileSync(join(dir, 'package.json'), `${JSON.stringify(manifest(app, { taskworker, toolkit }, self), null, 2)}\n`);
  const shown = relative(process.cwd(), dir) || '.';
  process.stdout.write(
    [
      `created a taskworker project in ${shown} (app ${app})`,
      '',
      `  cd ${shown}`,
      '  npm install',
      '  npm start      # taskworker dev --watch: the whole system locally',
      '  npm test       # the tasks’ unit tests',
      '  npx cdk deploy -c version=v1',
      '',
    ].join('\n'),
  );
}

function manifest(app: string, specs: { taskworker: string; toolkit: string }, self: Manifest) {
  const devDependencies = Object.fromEntries(
    [
      ...DEV_DEPENDENCIES.map((name) => [name, pinnedVersions(self)[name] ?? 'latest'] as const),
      ['taskworker-toolkit', specs.toolkit] as const,
    ].sort(([a], [b]) => a.localeCompare(b)),
  );
  return {
    name: app,
    version: '0.1.0',
    private: true,
    type: 'module',
    scripts: {
      start: 'taskworker dev --watch',
      test: 'node --import tsx --test tasks/*.test.ts',
      typecheck: 'tsc',
      synth: 'cdk synth -c version=v1',
    },
    dependencies: { taskworker: specs.taskworker },
    devDependencies,
  };
}

/**
 * Where the running copies of the two packages are: installed, this command is taskworker-toolkit's
 * and taskworker is its peer; in this repository, taskworker is the checkout and the toolkit its build.
 */
function packageDirs(self: Manifest): { taskworker: string; toolkit: string } {
  if (self.name === 'taskworker-toolkit') {
    return { taskworker: dirname(require.resolve('taskworker/package.json', { paths: [PACKAGE_ROOT] })), toolkit: PACKAGE_ROOT };
  }
  const toolkit = join(PACKAGE_ROOT, 'dist', 'toolkit');
  if (!existsSync(join(toolkit, 'package.json'))) throw new UsageError('no dist/toolkit in this checkout: run `npm run build` first');
  return { taskworker: PACKAGE_ROOT, toolkit };
}

/**
 * Packs a running copy of a package into DIR/vendor/ and returns the path the project's
 * package.json names: so the project installs from the same source, with no registry.
 */
function packInto(dir: string, packageDir: string): string {
  const vendor = join(dir, 'vendor');
  mkdirSync(vendor, { recursive: true });
  const out = execFileSync('npm', ['pack', packageDir, '--pack-destination', vendor, '--ignore-scripts', '--json'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const [packed] = JSON.parse(out) as Array<{ filename: string }>;
  if (!packed) throw new Error('npm pack reported no file');
  return `./vendor/${basename(packed.filename)}`;
}

/** npm package names: lowercase letters, digits, `-`; the app name in the config too. */
function projectName(name: string): string {
  const cleaned = name
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/^[^a-z]+/, '')
    .replace(/-+$/, '')
    .slice(0, 30);
  if (cleaned.length === 0) throw new UsageError(`cannot make a project name of ${JSON.stringify(name)}: pass --name NAME`);
  return cleaned;
}

function listFiles(dir: string, prefix = ''): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    return statSync(path).isDirectory() ? listFiles(path, join(prefix, entry)) : [join(prefix, entry)];
  });
}
