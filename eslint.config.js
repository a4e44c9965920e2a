// Layer rules (docs/architecture.md): rules by folder, never by file name. src/checkpoint is pure;
// the workflow side (src/workflows, src/workflow.ts, and the contract folders it imports) is sandbox code; each
// layer folder imports only what its zone allows; no import cycles.
const tseslint = require('typescript-eslint');
const importX = require('eslint-plugin-import-x');
const { builtinModules } = require('node:module');

const nodeBuiltins = [...builtinModules, ...builtinModules.map((m) => `node:${m}`)];

/** Escapes `text` for a regular expression. */
const escapeRegex = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * The workflow-sandbox import rules for `files`, whose path to `src/` is `toSrc` ('../', './' or
 * '../../'): nothing Node-only, no drivers, no Node-side project code (stores, digests, activities
 * beyond the contract, the plugin outside its `workflow/` folder, the testing entry, the root
 * barrel). `extra`: more patterns.
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
            {
              group: [
                '@temporalio/activity',
                '@temporalio/client',
                '@temporalio/worker',
                '@temporalio/plugin',
                '@temporalio/envconfig',
                '@temporalio/testing',
                'pg',
                'better-sqlite3',
              ],
              message: 'workflow code must not import Node-side packages',
            },
            {
              group: [
                ...src(['stores', 'cli', 'dev', 'codec', 'testing', 'demo']),
                ...['checkpoint/digest', 'checkpoint/codec', 'index', 'config', 'worker', 'client', 'temporal-env-config', 'key-material'].map((n) => `${toSrc}${n}`),
              ],
              message: 'workflow code must not reach node:crypto, stores, the Node-side entries or the root barrel',
            },
            { regex: `^${escapeRegex(toSrc)}(activities|model)/?$`, message: 'workflow code must not import the activities or model barrels (Node-side)' },
            {
              regex: `^${escapeRegex(toSrc)}activities/(?!contract/[^/]+$).*$`,
              message: 'workflow code imports from src/activities only its sandbox-safe contract folder (activities/contract/*)',
            },
            { group: [`${toSrc}model/*`, `!${toSrc}model/types`], message: 'workflow code imports only model/types' },
            {
              regex: `^${escapeRegex(toSrc)}plugin(/(?!contract/[^/]+$).*)?/?$`,
              message: 'workflow code imports from src/plugin only its sandbox-safe contract folder (plugin/contract/*), never its Node side or its barrel',
            },
            ...extra,
          ],
        },
      ],
    },
  };
}

/** Folders of src, as no-restricted-paths zones name them (relative to this file). */
const SRC = (folder) => `./src/${folder}`;

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
    // --stdin (test/lint/sandbox-lint.test.ts) would be linted against other text; costs nothing measurable.
    files: ['src/**/*.ts'],
    languageOptions: { parserOptions: { project: './tsconfig.build.json', tsconfigRootDir: __dirname, disallowAutomaticSingleRunInference: true } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
    },
  },
  // The workflow sandbox: the workflows entry, the workflow-safe entry, src/workflows' folders
  // (agent/, fenced/, common/) and the contract folders workflow code imports.
  sandboxRules(['src/workflows/*.ts'], '../'),
  sandboxRules(['src/workflows/*/**/*.ts', 'src/activities/contract/**/*.ts', 'src/plugin/contract/**/*.ts'], '../../'),
  sandboxRules(['src/workflow.ts'], './'),
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
  {
    // The layers by folder (docs/architecture.md#folders): what each folder may import of ours.
    files: ['src/**/*.ts'],
    rules: {
      'import-x/no-restricted-paths': [
        'error',
        {
          basePath: __dirname,
          zones: [
            {
              target: SRC('checkpoint'),
              from: './src',
              except: ['./checkpoint'],
              message: 'src/checkpoint is the bottom layer: it imports nothing of ours outside src/checkpoint',
            },
            {
              target: SRC('stores'),
              from: './src',
              except: ['./stores', './checkpoint', './optional-peer.ts', './aes-gcm.ts', './config.ts'],
              message: 'src/stores imports only src/checkpoint, the optional-peer and AES-GCM helpers, and the config types',
            },
            {
              target: [SRC('workflows'), './src/workflow.ts', SRC('activities/contract'), SRC('plugin/contract')],
              from: ['stores', 'cli', 'console', 'dev', 'demo'].map(SRC),
              message: 'workflow code never imports the stores or the applications (cli, console, dev, demo)',
            },
            { target: SRC('activities'), from: ['cli', 'console', 'demo'].map(SRC), message: 'src/activities never imports the applications (cli, console, demo)' },
            // Inside src/activities, bottom up: contract (sandbox-safe shapes) → tools (the tool
            // author's API) → fence (the engine) → agent (the agent's activities) → index.ts.
            {
              target: SRC('activities/contract'),
              from: SRC('activities'),
              except: ['./contract'],
              message: 'src/activities/contract holds shapes shared with workflow code: it imports nothing else of src/activities',
            },
            {
              target: SRC('activities/tools'),
              from: ['fence', 'agent', 'index.ts'].map((f) => SRC(`activities/${f}`)),
              message: "the tool author's API (src/activities/tools) never imports the fence engine or the agent's activities",
            },
            {
              target: SRC('activities/fence'),
              from: ['agent', 'index.ts'].map((f) => SRC(`activities/${f}`)),
              message: "the fence engine (src/activities/fence) never imports the agent's activities or the activities barrel",
            },
            { target: SRC('activities/agent'), from: SRC('activities/index.ts'), message: "the agent's activities never import the activities barrel" },
            // Inside src/workflows: common/ serves both workflow surfaces, which never import each other.
            {
              target: SRC('workflows/common'),
              from: ['agent', 'fenced', 'index.ts'].map((f) => SRC(`workflows/${f}`)),
              message: 'src/workflows/common is shared by both workflow surfaces: it imports neither of them',
            },
            { target: SRC('workflows/agent'), from: SRC('workflows/fenced'), message: "the agent workflow never imports the plugin's workflow side (src/workflows/fenced)" },
            { target: SRC('workflows/fenced'), from: [SRC('workflows/agent'), SRC('workflows/index.ts')], message: "the plugin's workflow side never imports the agent workflow" },
            {
              target: SRC('plugin/contract'),
              from: SRC('plugin'),
              except: ['./contract'],
              message: 'src/plugin/contract holds shapes shared with workflow code: it imports nothing else of src/plugin',
            },
            { target: './src', from: ['./test', './bench'], message: 'src never imports tests or benchmarks' },
          ],
        },
      ],
    },
  },
);
