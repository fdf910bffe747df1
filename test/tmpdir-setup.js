/**
 * Jest's global setup: the run's temporary files (projects, cdk.out dirs, journals, bundles) go
 * into one directory of their own, removed at the end by test/tmpdir-teardown.js, so that test runs
 * do not leave thousands of directories in /tmp. Set in the environment, it reaches the workers and
 * every child process (CDK, npm, esbuild, Chromium) through os.tmpdir().
 */
const { mkdtempSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');

module.exports = async () => {
  const dir = mkdtempSync(join(tmpdir(), 'taskworker-tests-'));
  process.env.TASKWORKER_TEST_TMPDIR = dir;
  process.env.TMPDIR = dir;
};
