// Layer rules (STYLE.md): src/checkpoint is pure; src/workflows is sandbox code; no import cycles.
const tseslint = require('typescript-eslint');
const importX = require('eslint-plugin-import-x');
const { builtinModules } = require('node:module');

const nodeBuiltins = [...builtinModules, ...builtinModules.map((m) => `node:${m}`)];

module.exports = tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.tools/**', '.data/**', 'coverage/**', '**/*.js'] },
  ...tseslint.configs.recommended,
  {
    plugins: { 'import-x': importX },
    settings: { 'import-x/resolver': { node: { extensions: ['.ts', '.js'] } } },
    rules: {
      'import-x/no-cycle': 'error',
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-require-imports': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // The workflow sandbox: nothing Node-only, no drivers, no Node-side project code.
    files: ['src/workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: nodeBuiltins.map((name) => ({ name, message: 'workflow code runs in the Temporal sandbox: no Node builtins' })),
          patterns: [
            { group: ['@temporalio/activity', '@temporalio/client', '@temporalio/worker', 'pg', 'better-sqlite3'], message: 'workflow code must not import Node-side packages' },
            { group: ['../stores/**', '../stores', '../checkpoint/digest', '../checkpoint/codec', '../index', '../cli/**', '../dev/**', '../config', '../worker', '../client'], message: 'workflow code must not reach node:crypto, stores or the root barrel' },
            { group: ['../activities/*', '!../activities/contract', '!../activities/error-classes'], message: 'workflow code imports only the sandbox-safe activities/contract and activities/error-classes' },
            { group: ['../model/*', '!../model/types'], message: 'workflow code imports only model/types' },
          ],
        },
      ],
    },
  },
  {
    // The pure protocol core: no Temporal, no drivers, no stores or activities, no filesystem, no env or clock.
    files: ['src/checkpoint/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: ['fs', 'node:fs', 'fs/promises', 'node:fs/promises', 'pg', 'better-sqlite3'].map((name) => ({ name, message: 'src/checkpoint is pure: no I/O' })),
          patterns: [
            { group: ['@temporalio/*'], message: 'src/checkpoint is pure: no Temporal' },
            { group: ['../stores', '../stores/**', '../activities', '../activities/**', '../workflows/**'], message: 'src/checkpoint is the bottom layer' },
          ],
        },
      ],
      'no-restricted-properties': [
        'error',
        { object: 'process', property: 'env', message: 'src/checkpoint reads no environment' },
        { object: 'Date', property: 'now', message: 'src/checkpoint reads no clock: take `at` from the caller' },
      ],
    },
  },
);
