/** Tests run on a CommonJS transform (esbuild); fauxqs ships ESM only, so it is transformed too. */

const { availableParallelism } = require('node:os');

/** @type {import('jest').Config} */
module.exports = {
  // One worker more than the cores: many suites wait on the network (the adoption suite's npm
  // installs, five minutes of a run), on emulators or on child processes rather than compute, and a
  // worker held by one of them leaves a core idle (jest's default, one fewer than the cores, would
  // run one suite at a time on 2 cores). Every verdict counts things, never how fast they ran.
  maxWorkers: availableParallelism() + 1,
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.(t|j|mj)s$': '<rootDir>/test/esbuild-transform.js' },
  transformIgnorePatterns: ['/node_modules/(?!fauxqs/)'],
  moduleNameMapper: {
    '^fauxqs$': '<rootDir>/node_modules/fauxqs/dist/app.js',
    // The package's public entry points, from its sources (as tsconfig's paths have them).
    '^taskworker$': '<rootDir>/lib/index.ts',
    '^taskworker/cdk$': '<rootDir>/infra/index.ts',
    '^taskworker/testing$': '<rootDir>/lib/testing/index.ts',
    '^taskworker/runtime$': '<rootDir>/lib/runtime.ts',
  },
  testTimeout: 60000,
  // One temporary directory per run, removed at its end (TASKWORKER_KEEP_TEST_TMPDIR=1 keeps it).
  globalSetup: '<rootDir>/test/tmpdir-setup.js',
  globalTeardown: '<rootDir>/test/tmpdir-teardown.js',
};
