// Builds the package into dist/:
//   dist/cjs/       the library compiled by tsc, one CommonJS module per source file, with .d.ts and
//                   source maps: what `require('taskworker')`, `taskworker/cdk`, … load
//   dist/esm/       the same entry points as ES modules (esbuild, split so the entries share one copy
//                   of the library): what `import` and bundlers load
//   dist/artifact/  the dispatcher handler and the local runner, prebuilt (they hold no user code);
//                   only a user's tasks.cjs is built on their machine
//   dist/cli.js     the `taskworker` command
//   dist/ui/        the dashboard's page (`taskworker ui`), prebuilt
//
//   node scripts/build.mjs          everything (npm run build, prepare, prepack)
//   node scripts/build.mjs --cli    the command only (npm start, npm run dev: the repo runs from sources)
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { nodeEntryOptions } from './esbuild-node.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const require = createRequire(import.meta.url);
const cliOnly = process.argv.includes('--cli');

/** The public entry points: export name → source. */
const ENTRIES = {
  index: 'lib/index.ts',
  testing: 'lib/testing/index.ts',
  runtime: 'lib/runtime.ts',
  cdk: 'infra/index.ts',
};
/**
 * Entry points whose ES build is a bundle of its own. `taskworker/cdk` is not one: it finds the
 * package's files and loads its optional peers (esbuild) at synth, which needs CommonJS's
 * `require` and `__dirname`; its ES entry re-exports the CommonJS build (aws-cdk-lib and
 * constructs are CommonJS only anyway, so an ES CDK app loads them that way too).
 */
const ES_BUNDLED = ['index', 'testing', 'runtime'];

async function cli() {
  // The dashboard's server framework (hono) goes into the bundle: a publisher's install does not
  // carry it. Everything the package declares stays external, resolved from the user's install.
  const pkg = JSON.parse(readFileSync(`${root}package.json`, 'utf8'));
  const external = [...Object.keys(pkg.dependencies), ...Object.keys(pkg.peerDependencies)].flatMap((name) => [name, `${name}/*`]);
  await build({ ...nodeEntryOptions, packages: undefined, external, entryPoints: ['cli/taskworker.ts'], outfile: 'dist/cli.js' });
  // `taskworker init` pins a new project's tools at the versions built and tested with here; the
  // packed package.json has no devDependencies (scripts/pack-manifest.cjs), so they go in dist/.
  writeFileSync(`${root}dist/dev-dependencies.json`, `${JSON.stringify(pkg.devDependencies, null, 2)}\n`);
  await ui();
}

/** The dashboard's page, built ahead so that `npx taskworker ui` builds nothing. */
async function ui() {
  await require('./ui-page.cjs').buildUiPage(`${root}dist/ui`);
}

if (cliOnly) {
  await cli();
  process.exit(0);
}

rmSync(`${root}dist`, { recursive: true, force: true });

// CommonJS and declarations.
execFileSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' });

// ES modules: one bundle per entry point over shared chunks (one copy of the library across
// them), packages left to the user's install. The tasks a user bundles import these, so they
// hold nothing a CommonJS bundle could not hold (no import.meta, no require of their own).
await build({
  absWorkingDir: root,
  entryPoints: Object.fromEntries(ES_BUNDLED.map((name) => [name, ENTRIES[name]])),
  outdir: 'dist/esm',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  packages: 'external',
  sourcemap: 'linked',
  logLevel: 'warning',
  chunkNames: 'chunks/[name]-[hash]',
});
writeFileSync(`${root}dist/esm/package.json`, `${JSON.stringify({ type: 'module' })}\n`);
writeFileSync(`${root}dist/esm/cdk.js`, "export * from '../cjs/infra/index.js';\n");
// The ES entry points' types are the compiled declarations, re-exported.
for (const [name, source] of Object.entries(ENTRIES)) {
  const target = `../cjs/${source.replace(/\.ts$/, '.js')}`;
  writeFileSync(`${root}dist/esm/${name}.d.ts`, `export * from '${target}';\n`);
}

// The prebuilt handler and local runner: bundled, the AWS SDK included, as Lambda runs them.
mkdirSync(`${root}dist/artifact`, { recursive: true });
const artifact = {
  absWorkingDir: root,
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  minify: true,
  sourcemap: 'linked',
  logLevel: 'warning',
  external: ['fauxqs', 'dynalite', 'esbuild'],
};
await build({ ...artifact, entryPoints: ['functions/dispatcher-handler.ts'], outfile: 'dist/artifact/index.js' });
await build({ ...artifact, entryPoints: ['lib/local/runner.ts'], outfile: 'dist/artifact/runner.js' });

await cli();
