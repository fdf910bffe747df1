/** Jest's global teardown: removes the run's temporary directory (see test/tmpdir-setup.js). */
const { rmSync } = require('node:fs');

module.exports = async () => {
  const dir = process.env.TASKWORKER_TEST_TMPDIR;
  if (dir && !process.env.TASKWORKER_KEEP_TEST_TMPDIR) rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
};
