// Run first by `npm test`: the browser test (test/browser) drives Debian's Chromium. When it is
// missing and this user may install packages (root, or sudo without a password) on a machine
// with apt-get, installs it as .ci/run does; otherwise prints one line saying why it cannot and
// how to fix it, and lets the rest of the tests run (the browser test then fails with its reason).
//
//   node scripts/test-browser.cjs     (npm test runs it)
//   require('./scripts/test-browser.cjs').plan({ ... })  → what to do, for a given machine (pure)
'use strict';
const { existsSync } = require('node:fs');
const { spawnSync } = require('node:child_process');

const DEBIAN_CHROMIUM = '/usr/bin/chromium';
const CHROMIUM = process.env.CHROMIUM_PATH || DEBIAN_CHROMIUM;

/**
 * What to do about Chromium on a machine described by `facts`:
 * `{ action: 'none' }`, `{ action: 'install', sudo }` or `{ action: 'explain', line }`.
 */
function plan({ chromium, present, uid, sudoWithoutPassword, aptGet }) {
  if (present) return { action: 'none' };
  const fix = `install it (sudo apt-get install -y chromium) or set CHROMIUM_PATH`;
  if (chromium !== DEBIAN_CHROMIUM)
    return {
      action: 'explain',
      line: `no Chromium at CHROMIUM_PATH ${chromium}: the browser test will fail; point CHROMIUM_PATH at one, or unset it`,
    };
  if (!aptGet) return { action: 'explain', line: `no Chromium at ${chromium} and no apt-get here: the browser test will fail; ${fix}` };
  if (uid !== 0 && !sudoWithoutPassword)
    return {
      action: 'explain',
      line: `no Chromium at ${chromium}, and installing it needs root or sudo without a password: the browser test will fail; ${fix}`,
    };
  return { action: 'install', sudo: uid !== 0 };
}

function succeeds(command, args) {
  return spawnSync(command, args, { stdio: 'ignore' }).status === 0;
}

function main() {
  const uid = typeof process.getuid === 'function' ? process.getuid() : -1;
  const present = existsSync(CHROMIUM);
  const facts = {
    chromium: CHROMIUM,
    present,
    uid,
    aptGet: present || succeeds('sh', ['-c', 'command -v apt-get']),
    sudoWithoutPassword: present || uid === 0 ? false : succeeds('sudo', ['-n', 'true']),
  };
  const step = plan(facts);
  if (step.action === 'none') return;
  if (step.action === 'explain') {
    process.stderr.write(`test-browser: ${step.line}\n`);
    return;
  }
  process.stderr.write(`test-browser: no Chromium at ${CHROMIUM}: installing Debian's chromium for the browser test (apt-get)...\n`);
  const [command, prefix] = step.sudo ? ['sudo', ['-n', 'apt-get']] : ['apt-get', []];
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const run = (args) => spawnSync(command, [...prefix, ...args], { stdio: ['ignore', 'ignore', 'inherit'], env }).status === 0;
  const installed = run(['update', '-qq']) && run(['install', '-y', '-qq', 'chromium']) && existsSync(CHROMIUM);
  if (!installed) process.stderr.write('test-browser: apt-get could not install chromium (see above): the browser test will fail\n');
}

module.exports = { plan };
if (require.main === module) main();
