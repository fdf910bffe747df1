// The package.json that `npm pack` / `npm publish` put in the tarball: only what a consumer's
// install and runtime read. The repository's own scripts (its `prepare` builds and installs Node
// 24 for CI: a consumer's install would warn about it, or run it) and devDependencies stay here.
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

/** The packed manifest for a repository manifest (pure): its consumer fields, in their order. */
function packedManifest(manifest) {
  return Object.fromEntries(Object.entries(manifest).filter(([key]) => CONSUMER_FIELDS.includes(key)));
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

module.exports = { packedManifest, CONSUMER_FIELDS };
if (require.main === module) {
  const command = process.argv[2];
  if (command === 'trim') trim();
  else if (command === 'restore') restore();
  else {
    process.stderr.write('usage: node scripts/pack-manifest.cjs trim|restore\n');
    process.exit(2);
  }
}
