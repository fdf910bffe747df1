// The manifests of the two packages this repository publishes, both derived from its package.json:
//
//   taskworker          what a service and its tasks import (publishing, defineTask, the test kit, the
//                       runtime), with the AWS SDK clients it publishes with: a publish-only install. Its
//                       `taskworker/cdk` and `taskworker` command are front doors to the toolkit.
//   taskworker-toolkit  what builds, runs locally and deploys: the construct, the command, the prebuilt
//                       dispatcher artifact and the dashboard, with esbuild (it bundles the user's tasks at
//                       synth and in `taskworker dev`) and cron-parser as dependencies. scripts/build.mjs
//                       writes it to dist/toolkit/; `npm pack ./dist/toolkit` packs it.
//
// The repository's package.json is taskworker's plus what only the repository or the toolkit needs: its
// scripts (`prepare` builds and installs Node 24 for CI: a consumer's install would warn about it, or run
// it) and devDependencies stay here, and the toolkit's optional peers (the emulators, CloudWatch) are
// taken out of taskworker's packed manifest.
//
//   node scripts/pack-manifest.cjs trim       (prepack, last) keeps the full file aside, writes the packed one
//   node scripts/pack-manifest.cjs restore    (postpack) puts the full file back
//
// A pack that died between the two leaves the full file aside: the next `trim` restores it first.
'use strict';
const { existsSync, readFileSync, renameSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');

const MANIFEST = join(__dirname, '..', 'package.json');
const ASIDE = join(__dirname, '..', '.package.json.unpacked');

/** The fields a consumer's npm, Node, TypeScript and bundlers read; everything else stays home. */
const CONSUMER_FIELDS = [
  'name',
  'version',
  'description',
  'keywords',
  'homepage',
  'bugs',
  'repository',
  'license',
  'author',
  'engines',
  'type',
  'main',
  'module',
  'types',
  'exports',
  'typesVersions',
  'bin',
  'files',
  'dependencies',
  'peerDependencies',
  'peerDependenciesMeta',
  'optionalDependencies',
];

const TOOLKIT = 'taskworker-toolkit';

/**
 * The toolkit's own dependencies, at the versions this repository builds and tests with (its devDependencies):
 * esbuild bundles the tasks, cron-parser checks schedules, and the S3 client is loaded by every command that
 * makes a version's parts (`dev` creates its payload bucket) or reads a payload (`jobs show`, `ui`), so for the
 * toolkit it is not optional (for taskworker, a publisher that never sends a large payload, it stays a peer).
 */
const TOOLKIT_DEPENDENCIES = ['esbuild', 'cron-parser', '@aws-sdk/client-s3'];

/** Optional peers only the toolkit loads (`taskworker dev`'s emulators, the dashboard's CloudWatch reads, `jobs logs` on AWS). */
const TOOLKIT_PEERS = ['fauxqs', 'dynalite', '@aws-sdk/client-cloudwatch', '@aws-sdk/client-cloudwatch-logs'];

const without = (record, names) => Object.fromEntries(Object.entries(record ?? {}).filter(([name]) => !names.includes(name)));

/** A devDependency's pinned version as a range that takes its patches (`0.28.2` → `^0.28.2`). */
const caret = (version) => (/^\d/.test(version) ? `^${version}` : version);

/** taskworker's packed manifest for the repository's (pure): its consumer fields, in their order, without the toolkit's peers. */
function packedManifest(manifest) {
  if (manifest.peerDependencies?.[TOOLKIT] !== manifest.version) {
    throw new Error(`package.json: peerDependencies["${TOOLKIT}"] must be this version, ${manifest.version}`);
  }
  const packed = Object.fromEntries(Object.entries(manifest).filter(([key]) => CONSUMER_FIELDS.includes(key)));
  for (const field of ['peerDependencies', 'peerDependenciesMeta']) {
    if (packed[field]) packed[field] = without(packed[field], TOOLKIT_PEERS);
  }
  return packed;
}

/**
 * taskworker-toolkit's manifest for the repository's (pure). Its dependencies: taskworker's (its copy of the
 * library publishes and tracks with the same clients) and its own; its peers: taskworker at this very version
 * (the user's tasks import it, and the tasks bundle takes the runtime from it), the user's aws-cdk-lib and
 * constructs, and the emulators — all optional but taskworker, and all named in one line when missing.
 */
function toolkitManifest(manifest) {
  const dependencies = { ...manifest.dependencies };
  for (const name of TOOLKIT_DEPENDENCIES) {
    const version = manifest.dependencies?.[name] ?? manifest.devDependencies?.[name];
    if (!version) throw new Error(`${TOOLKIT} depends on ${name}, which package.json does not list`);
    dependencies[name] = caret(version);
  }
  const peers = without(manifest.peerDependencies, [TOOLKIT, ...TOOLKIT_DEPENDENCIES]);
  const meta = without(manifest.peerDependenciesMeta, [TOOLKIT, ...TOOLKIT_DEPENDENCIES]);
  return {
    name: TOOLKIT,
    version: manifest.version,
    description: `Builds, runs locally and deploys taskworker apps: the TaskworkerVersion construct behind taskworker/cdk, the taskworker command (init, dev, the operator commands, ui) and the prebuilt dispatcher. Install it beside taskworker ${manifest.version} where the stack is synthesized.`,
    license: manifest.license,
    engines: manifest.engines,
    exports: {
      './cdk': { types: './dist/cjs/infra/index.d.ts', default: './dist/cjs/infra/index.js' },
      './cli': './dist/cli.js',
      './package.json': './package.json',
    },
    typesVersions: { '*': { cdk: ['./dist/cjs/infra/index.d.ts'] } },
    files: ['dist/', 'templates/', 'README.md'],
    dependencies: Object.fromEntries(Object.entries(dependencies).sort(([a], [b]) => a.localeCompare(b))),
    peerDependencies: { taskworker: manifest.version, ...peers },
    peerDependenciesMeta: meta,
  };
}

function restore() {
  if (existsSync(ASIDE)) renameSync(ASIDE, MANIFEST);
}

function trim() {
  restore();
  const text = readFileSync(MANIFEST, 'utf8');
  writeFileSync(ASIDE, text);
  writeFileSync(MANIFEST, `${JSON.stringify(packedManifest(JSON.parse(text)), null, 2)}\n`);
}

module.exports = { packedManifest, toolkitManifest, CONSUMER_FIELDS, TOOLKIT, TOOLKIT_DEPENDENCIES, TOOLKIT_PEERS };
if (require.main === module) {
  const command = process.argv[2];
  if (command === 'trim') trim();
  else if (command === 'restore') restore();
  else {
    process.stderr.write('usage: node scripts/pack-manifest.cjs trim|restore\n');
    process.exit(2);
  }
}
