#!/usr/bin/env node

const { existsSync } = require('node:fs');
const { join } = require('node:path');

const cli = join(__dirname, '..', 'dist', 'cli.js');
if (!existsSync(cli)) {
  process.stderr.write('taskworker: the command is not built here (no dist/cli.js): run `npm run build` in this checkout\n');
  process.exit(1);
}
require(cli)
  .main(process.argv.slice(2))
  .then((code) => {
    process.exitCode = code;
  });
