#!/usr/bin/env node

// The `taskworker` command. In this repository it is the build's dist/cli.js; where taskworker is
// installed, it is taskworker-toolkit's (the command, the construct and esbuild, which bundles the
// tasks), which a service that only publishes does not install: then one line says how to get it.
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

require(cliPath())
  .main(process.argv.slice(2))
  .then((code) => {
    process.exitCode = code;
  });
