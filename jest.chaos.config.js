/**
 * The chaos suites (`npm run test:chaos`): crashes, injected faults, hostile input. Heavy and
 * long, so kept out of `npm test`; run one file at a time (the machine has two cores).
 */
const base = require('./jest.config.js');

/** @type {import('jest').Config} */
module.exports = {
  ...base,
  testMatch: ['**/test/chaos/**/*.chaos.ts'],
  testTimeout: 300_000,
  maxWorkers: 1,
};
