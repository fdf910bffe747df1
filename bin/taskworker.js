#!/usr/bin/env node

const { existsSync } = require('node:fs');
const { join } = require('node:path');
const { execFileSync } = require('node:child_process');

const root = join(__dirname, '..');
const cli = join(root, 'dist', 'cli.js');
if (!existsSync(cli)) execFileSync(process.execPath, [join(root, 'scripts', 'build.mjs')], { cwd: root, stdio: 'inherit' });
require(cli)
  .main(process.argv.slice(2))
  .then((code) => {
    process.exitCode = code;
  });
