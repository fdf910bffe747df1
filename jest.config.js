/** Tests run on a CommonJS transform (esbuild); fauxqs ships ESM only, so it is transformed too. */

const { availableParallelism } = require('node:os');

/** @type {import('jest').Config} */
module.exports = {
  // Two workers at least: most suites wait on emulators and child processes rather than compute,
  // so a 2-core machine runs two of them side by side in about half the time (jest's default, one
  // fewer than the cores, would be one). Every verdict counts things, never how fast they ran.
  maxWorkers: Math.max(2, availableParallelism() - 1),
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
