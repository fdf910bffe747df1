#!/usr/bin/env node

// The `taskworker` command. In this repository it is the build's dist/cli.js; where taskworker is
// installed, it is taskworker-toolkit's (the command, the construct and esbuild, which bundles the
// tasks), which a service that only publishes does not install: then one line says how to get it.
// Whatever else cannot be found while the command loads or runs (a package an install left out)
// is one line too, naming the package and the command that installs it, never a Node stack.
const { existsSync } = require('node:fs');
const { join } = require('node:path');

const root = join(__dirname, '..');

function cliPath() {
  const built = join(root, 'dist', 'cli.js');
  if (existsSync(built)) return built;
  if (existsSync(join(root, 'lib', 'index.ts'))) {
    process.stderr.write('taskworker: the command is not built here (no dist/cli.js): run `npm run build` in this checkout\n');
    process.exit(1);
  }
  try {
    return require.resolve('taskworker-toolkit/cli');
  } catch (error) {
    if (error.code !== 'MODULE_NOT_FOUND') throw error;
    const version = require('../package.json').peerDependencies['taskworker-toolkit'];
    process.stderr.write(`taskworker: the command needs taskworker-toolkit: npm install --save-dev taskworker-toolkit@${version}\n`);
    process.exit(1);
  }
}

/** The package a "Cannot find module" names (`@scope/name` or `name`), or undefined for a file path. */
function missingPackage(error) {
  if (!error || (error.code !== 'MODULE_NOT_FOUND' && error.code !== 'ERR_MODULE_NOT_FOUND')) return undefined;
  const named = /Cannot find (?:module|package) '([^']+)'/.exec(String(error.message))?.[1];
  if (!named || named.startsWith('.') || named.startsWith('/') || named.startsWith('node:')) return undefined;
  return named.startsWith('@') ? named.split('/').slice(0, 2).join('/') : named.split('/')[0];
}

function fail(error) {
  const name = missingPackage(error);
  if (!name) throw error;
  process.stderr.write(`taskworker: ${name} is not installed, and the command needs it: npm install --save-dev ${name}\n`);
  process.exitCode = 1;
}

let cli;
try {
  cli = require(cliPath());
} catch (error) {
  fail(error);
}
if (cli) {
  cli.main(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  }, fail);
}
