// Runs the example in this repository, mapping the package name to the sources (a user's project
// resolves `temporal-tool-checkpoint` from node_modules instead):
//   npx jest -c examples/testing/jest.config.js
const path = require('node:path');

const root = path.resolve(__dirname, '../..');
process.env.TEMPORAL_TEST_SERVER_PATH ??= path.join(root, '.tools/bin/temporal-test-server');

/** @type {import('jest').Config} */
module.exports = {
  rootDir: root,
  roots: ['<rootDir>/examples/testing'],
  testEnvironment: 'node',
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { isolatedModules: true }] },
  moduleNameMapper: {
    '^temporal-tool-checkpoint$': '<rootDir>/src/index.ts',
    '^temporal-tool-checkpoint/(.*)$': '<rootDir>/src/$1',
  },
  forceExit: true,
};
