// Layer rules (docs/architecture.md): src/checkpoint is pure; src/workflows is sandbox code; no import cycles.
const tseslint = require('typescript-eslint');
const importX = require('eslint-plugin-import-x');
const { builtinModules } = require('node:module');

const nodeBuiltins = [...builtinModules, ...builtinModules.map((m) => `node:${m}`)];

/** Modules of src/plugin that run on the Node side (the worker), never in the workflow sandbox. */
const NODE_SIDE_PLUGIN_MODULES = ['index', 'tool-checkpoint-plugin', 'fence-interceptor', 'options', 'call-context', 'call-identity', 'approval-activity'];

/**
 * The workflow-sandbox import rules for `files`, whose path to `src/` is `toSrc` ('../' or './'):
 * nothing Node-only, no drivers, no Node-side project code (stores, digests, activities beyond the
 * contract, the plugin's Node side, the testing entry, the root barrel). `extra`: more patterns.
 */
function sandboxRules(files, toSrc, extra = []) {
  const src = (names) => names.flatMap((name) => [`${toSrc}${name}`, `${toSrc}${name}/**`]);
  return {
    files,
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: nodeBuiltins.map((name) => ({ name, message: 'workflow code runs in the Temporal sandbox: no Node builtins' })),
          patterns: [
            { group: ['@temporalio/activity', '@temporalio/client', '@temporalio/worker', '@temporalio/plugin', '@temporalio/envconfig', '@temporalio/testing', 'pg', 'better-sqlite3'], message: 'workflow code must not import Node-side packages' },
            { group: [...src(['stores', 'cli', 'dev', 'codec', 'testing', 'demo']), ...['checkpoint/digest', 'checkpoint/codec', 'index', 'config', 'worker', 'client', 'temporal-env-config', 'key-material'].map((n) => `${toSrc}${n}`)], message: 'workflow code must not reach node:crypto, stores, the Node-side entries or the root barrel' },
            { regex: `^${toSrc.replace(/\./g, '\\.')}(activities|model|plugin)/?$`, message: 'workflow code must not import the activities, model or plugin barrels (Node-side)' },
            { group: [`${toSrc}activities/*`, `!${toSrc}activities/contract`, `!${toSrc}activities/error-classes`, `!${toSrc}activities/batch-items`, `!${toSrc}activities/compensation-contract`], message: 'workflow code imports only the sandbox-safe activities/contract, error-classes, batch-items and compensation-contract' },
            { group: [`${toSrc}model/*`, `!${toSrc}model/types`], message: 'workflow code imports only model/types' },
            { group: NODE_SIDE_PLUGIN_MODULES.map((m) => `${toSrc}plugin/${m}`), message: "workflow code must not import the plugin's Node side (fence interceptor, plugin class, options, activity context)" },
            ...extra,
          ],
        },
      ],
    },
  };
}

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
    // Typed linting, on the package's source only (typing costs about 10 s of CPU and 1 GB more
    // per full lint): a promise nobody awaits loses its rejection. Typed by tsconfig.build.json
    // (src and examples), not tsconfig.json with the tests: half the cost of projectService. No
    // single-run inference (CI=true, the CLI): it types a file as it is on disk, so lintText and
    // --stdin (test/unit/sandbox-lint.test.ts) would be linted against other text; costs nothing measurable.
    files: ['src/**/*.ts'],
    languageOptions: { parserOptions: { project: './tsconfig.build.json', tsconfigRootDir: __dirname, disallowAutomaticSingleRunInference: true } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
    },
  },
  // The workflow sandbox: the agent workflow, the workflow-safe entry and the plugin's workflow
  // interceptor module (with the call header it shares with the Node side).
  sandboxRules(['src/workflows/**/*.ts'], '../'),
  sandboxRules(['src/workflow.ts'], './'),
  sandboxRules(['src/plugin/workflow-interceptors.ts', 'src/plugin/call-header.ts', 'src/plugin/approval-scope.ts', 'src/plugin/approval-describe.ts', 'src/plugin/approval-contract.ts', 'src/plugin/call-scope.ts', 'src/plugin/compensations.ts'], '../', [
    { group: NODE_SIDE_PLUGIN_MODULES.map((m) => `./${m}`), message: "the plugin's workflow side must not import the plugin's Node side" },
  ]),
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
