/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: {
    '^.+\\.ts$': ['ts-jest', { isolatedModules: true }],
  },
  testTimeout: 60_000,
  // The Temporal SDK's native runtime and pooled connections of some suites outlive their tests
  // in the single --runInBand process; every suite tears its own servers down, so exit promptly.
  forceExit: true,
  globalSetup: '<rootDir>/test/helpers/global-setup.ts',
  // One in-band process: a file's AsyncLocalStorage instances must not slow the files after it.
  setupFilesAfterEnv: ['<rootDir>/test/helpers/release-async-local-storage.ts'],
  globalTeardown: '<rootDir>/test/helpers/global-teardown.ts',
};
