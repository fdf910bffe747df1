// Builds the two packages into dist/ (scripts/pack-manifest.cjs says why two, and derives their manifests):
//
// taskworker (this directory's package.json; `npm pack`): what a service and its tasks load
//   dist/cjs/lib/   the library compiled by tsc, one CommonJS module per source file, with .d.ts and
//                   source maps: what `require('taskworker')`, `taskworker/testing`, … load
//   dist/esm/       the same entry points as ES modules (esbuild, split so the entries share one copy
//                   of the library): what `import` and bundlers load
//   dist/cdk.js     the front door of `taskworker/cdk` (and dist/esm/cdk.js for `import`): names in one
//                   line what a construct needs that is missing, then loads taskworker-toolkit's
//
// taskworker-toolkit (dist/toolkit/; `npm pack ./dist/toolkit`): what builds, runs locally and deploys
//   dist/cjs/       the compiled library and the constructs (infra/), its own copy
//   dist/artifact/  the dispatcher handler and the local runner, prebuilt (they hold no user code);
//                   only a user's tasks.cjs is built on their machine, by the toolkit's esbuild
//   dist/cli.js     the `taskworker` command (bin/taskworker.js in taskworker starts it)
//   dist/ui/        the dashboard's page (`taskworker ui`), prebuilt
//   templates/      what `taskworker init` writes
//
//   node scripts/build.mjs          everything (npm run build, prepare, prepack)
//   node scripts/build.mjs --cli    the command only, dist/cli.js and dist/ui (npm start, npm run dev: the
//                                   repo runs from sources)
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { nodeEntryOptions } from './esbuild-node.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const require = createRequire(import.meta.url);
const { toolkitManifest } = require('./pack-manifest.cjs');
const cliOnly = process.argv.includes('--cli');

/** The public entry points: export name → source. */
const ENTRIES = {
  index: 'lib/index.ts',
  testing: 'lib/testing/index.ts',
  runtime: 'lib/runtime.ts',
  cdk: 'infra/index.ts',
};
/**
 * Entry points whose ES build is a bundle of its own. `taskworker/cdk` is not one: it is
 * taskworker-toolkit's CommonJS build (it finds the package's files and loads esbuild at synth,
 * which needs CommonJS's `require` and `__dirname`; aws-cdk-lib and constructs are CommonJS only
 * anyway, so an ES CDK app loads them that way too).
 */
const ES_BUNDLED = ['index', 'testing', 'runtime'];

const pkg = JSON.parse(readFileSync(`${root}package.json`, 'utf8'));
const toolkit = toolkitManifest(pkg);
const TOOLKIT_DIR = `${root}dist/toolkit`;

async function cli() {
  // The dashboard's server framework (hono) and the watcher (chokidar) go into the bundle. What the
  // toolkit declares (taskworker's SDK clients, esbuild, cron-parser, the optional peers) stays
  // external, resolved from the user's install.
  const declared = [...Object.keys(toolkit.dependencies), ...Object.keys(toolkit.peerDependencies)].filter((name) => name !== 'taskworker');
  const external = declared.flatMap((name) => [name, `${name}/*`]);
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
// The ES entry points' types are the compiled declarations, re-exported.
for (const name of ES_BUNDLED) {
  const target = `../cjs/${ENTRIES[name].replace(/\.ts$/, '.js')}`;
  writeFileSync(`${root}dist/esm/${name}.d.ts`, `export * from '${target}';\n`);
}
cdkFrontDoors();

/**
 * `taskworker/cdk` in taskworker: the constructs are taskworker-toolkit's (with esbuild, which bundles
 * the tasks at synth), which a service that only publishes does not install. The CommonJS door names
 * everything a construct needs that is missing in one line, with the command that installs it, then
 * hands over the toolkit's module. The ES door runs it first and re-exports its exports by name (an
 * `export *` from a module that is not installed would fail to link before any line could say so).
 */
function cdkFrontDoors() {
  const CDK_NEEDS = { 'taskworker-toolkit': 'taskworker-toolkit/cdk', 'aws-cdk-lib': 'aws-cdk-lib', constructs: 'constructs' };
  for (const name of Object.keys(CDK_NEEDS)) {
    if (!pkg.peerDependencies[name]) throw new Error(`taskworker/cdk needs ${name}, which package.json's peerDependencies do not list`);
  }
  writeFileSync(
    `${root}dist/cdk.js`,
    `'use strict';
// taskworker/cdk: TaskworkerVersion and its parts, from taskworker-toolkit (scripts/build.mjs writes this door).
const NEEDS = ${JSON.stringify(CDK_NEEDS)};
const missing = Object.keys(NEEDS).filter((name) => {
  try {
    require.resolve(NEEDS[name]);
    return false;
  } catch (error) {
    if (error.code === 'MODULE_NOT_FOUND') return true;
    throw error;
  }
});
if (missing.length > 0) {
  const ranges = require('../package.json').peerDependencies;
  const specs = missing.map((name) => \`\${name}@\${ranges[name]}\`).map((spec) => (/^[\\w@/.^~-]+$/.test(spec) ? spec : \`'\${spec}'\`));
  const names = missing.length === 1 ? missing[0] : \`\${missing.slice(0, -1).join(', ')} and \${missing.at(-1)}\`;
  const { MissingDependencyError } = require('./cjs/lib/errors.js');
  throw new MissingDependencyError(missing.join(' '), \`taskworker/cdk needs \${names}: npm install --save-dev \${specs.join(' ')}\`);
}
module.exports = require('taskworker-toolkit/cdk');
`,
  );
  writeFileSync(`${root}dist/cdk.d.ts`, "export * from 'taskworker-toolkit/cdk';\n");
  // The construct module's value exports, by name, from the build that the toolkit ships.
  const names = Object.keys(require(`${root}dist/cjs/infra/index.js`)).filter((name) => name !== '__esModule');
  writeFileSync(
    `${root}dist/esm/cdk.js`,
    `// taskworker/cdk as an ES module: the CommonJS door first (it names what is missing), then its exports.
import { createRequire } from 'node:module';

const cdk = createRequire(import.meta.url)('../cdk.js');
export const { ${names.join(', ')} } = cdk;
`,
  );
  writeFileSync(`${root}dist/esm/cdk.d.ts`, "export * from 'taskworker-toolkit/cdk';\n");
}

// The prebuilt handler and local runner: bundled, the AWS SDK included, as Lambda runs them.
mkdirSync(`${TOOLKIT_DIR}/dist/artifact`, { recursive: true });
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
await build({ ...artifact, entryPoints: ['functions/dispatcher-handler.ts'], outfile: 'dist/toolkit/dist/artifact/index.js' });
await build({ ...artifact, entryPoints: ['lib/local/runner.ts'], outfile: 'dist/toolkit/dist/artifact/runner.js' });

await cli();

// taskworker-toolkit: its manifest, the compiled library and constructs, the command, the page, the templates.
writeFileSync(`${TOOLKIT_DIR}/package.json`, `${JSON.stringify(toolkit, null, 2)}\n`);
writeFileSync(
  `${TOOLKIT_DIR}/README.md`,
  `# taskworker-toolkit

${toolkit.description}

\`\`\`sh
npm i taskworker
npm i -D taskworker-toolkit
\`\`\`

Nothing here is imported by name: \`taskworker/cdk\` and the \`taskworker\` command (both in
taskworker) load it. It brings esbuild, which bundles your tasks into the dispatcher's code at
synth and in \`taskworker dev\`. The documentation is taskworker's README and its docs/.
`,
);
cpSync(`${root}dist/cjs`, `${TOOLKIT_DIR}/dist/cjs`, { recursive: true });
for (const file of ['cli.js', 'cli.js.map', 'dev-dependencies.json', 'ui']) {
  cpSync(`${root}dist/${file}`, `${TOOLKIT_DIR}/dist/${file}`, { recursive: true });
}
cpSync(`${root}templates`, `${TOOLKIT_DIR}/templates`, { recursive: true });
