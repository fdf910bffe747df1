/** Tests run on a CommonJS transform (esbuild); fauxqs ships ESM only, so it is transformed too. */

/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.(t|j|mj)s$': '<rootDir>/test/esbuild-transform.js' },
  transformIgnorePatterns: ['/node_modules/(?!fauxqs/)'],
  moduleNameMapper: { '^fauxqs$': '<rootDir>/node_modules/fauxqs/dist/app.js' },
  testTimeout: 60000,
};
