/** Tests run on a CommonJS transform (swc); fauxqs ships ESM only, so it is transformed too. */
const swc = ['@swc/jest', { jsc: { target: 'es2022', parser: { syntax: 'typescript' } }, module: { type: 'commonjs' } }];

/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.(t|j|mj)s$': swc },
  transformIgnorePatterns: ['/node_modules/(?!fauxqs/)'],
  moduleNameMapper: { '^fauxqs$': '<rootDir>/node_modules/fauxqs/dist/app.js' },
  testTimeout: 60000,
};
