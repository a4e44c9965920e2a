// Layer rules (docs/architecture.md#folders): rules by folder. src/checkpoint is pure; the workflow
// side (src/workflows, src/workflow.ts, and the contract folders it imports) is sandbox code; each
// layer folder imports only what its zone allows; no import cycles. Project paths are checked by
// `import-x/no-restricted-paths` zones (resolved, so any depth or spelling of a path is caught);
// packages and Node builtins by `no-restricted-imports`.
const tseslint = require('typescript-eslint');
const importX = require('eslint-plugin-import-x');

/** `require()` and dynamic `import()`: what `no-restricted-imports` does not see. */
const dynamicImports = (where) => [
  { selector: "CallExpression[callee.name='require']", message: `${where}: no require(); use an import statement (lint checks those)` },
  { selector: 'ImportExpression', message: `${where}: no dynamic import(); use an import statement (lint checks those)` },
];

/** No import reaches into node_modules by path (a package by path escapes the package rules). */
const NO_NODE_MODULES_PATH = { regex: '(^|/)node_modules(/|$)', message: 'import a package by its name, never by a path into node_modules' };

/** What workflow code may not touch as globals: Node's module system, process, Buffer and eval. */
const SANDBOX_GLOBALS = ['require', 'module', 'exports', 'process', 'Buffer', 'global', '__dirname', '__filename', 'setImmediate'].map((name) => ({
  name,
  message: 'workflow code runs in the Temporal sandbox: no Node globals',
}));

/**
 * The workflow sandbox's rules for `files`: of packages only `@temporalio/workflow` and
 * `@temporalio/common` (an allowlist: any other package, builtin or driver is refused), no Node
 * globals, no require() or import(), no eval.
 */
function sandboxRules(files) {
  return {
    files,
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(?!\\.{1,2}(/|$)|@temporalio/(workflow|common)(/|$))',
              message: 'workflow code runs in the Temporal sandbox: of packages it imports only @temporalio/workflow and @temporalio/common',
            },
            NO_NODE_MODULES_PATH,
          ],
        },
      ],
      'no-restricted-syntax': [
        'error',
        ...dynamicImports('workflow code'),
        {
          // globalThis.require, (globalThis as any).process, …
          selector: "MemberExpression[property.name=/^(require|process|module|Buffer)$/]:matches([object.name='globalThis'], [object.expression.name='globalThis'])",
          message: 'workflow code runs in the Temporal sandbox: no Node globals',
        },
      ],
      'no-restricted-globals': ['error', ...SANDBOX_GLOBALS],
      'no-eval': 'error',
      'no-new-func': 'error',
    },
  };
}

/** Folders of src, as no-restricted-paths zones name them (relative to this file). */
const SRC = (folder) => `./src/${folder}`;

/** The workflow sandbox: what runs in Temporal's V8 isolate (workflow code and the contracts it imports). */
const SANDBOX = [SRC('workflows'), SRC('workflow.ts'), SRC('activities/contract'), SRC('plugin/contract'), SRC('model/types.ts')];

/** The applications (docs/architecture.md#layers): nothing below them imports them. */
const APPLICATIONS = ['cli', 'console', 'dev', 'demo'];

/** Every folder and root file of src below the applications and the testing entry (`src/testing` may use `dev`'s binary lookup). */
const BELOW_APPLICATIONS = [...['checkpoint', 'stores', 'activities', 'telemetry', 'plugin', 'codec', 'visibility', 'model', 'workflows', 'operator'].map(SRC), './src/*.ts'];

module.exports = tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.tools/**', '.data/**', 'coverage/**', '**/*.js', '!src/**/*.js'] },
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
  // The workflow sandbox: src/workflows (entry and folders), the workflow-safe entry and the
  // contract folders workflow code imports. Which project modules they may import: the zones below.
  sandboxRules(SANDBOX.map((path) => (path.endsWith('.ts') ? path.slice(2) : `${path.slice(2)}/**/*.{ts,js}`))),
  {
    // The pure protocol core: no Temporal, no drivers, no I/O (node:crypto only), no env, no clock.
    files: ['src/checkpoint/**/*.{ts,js}'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(?!\\.{1,2}(/|$)|node:crypto$|canonicalize$|@humanwhocodes/momoa$)',
              message: 'src/checkpoint is pure: of packages only node:crypto, canonicalize (RFC 8785) and @humanwhocodes/momoa (JSON syntax trees)',
            },
            NO_NODE_MODULES_PATH,
          ],
        },
      ],
      'no-restricted-syntax': [
        'error',
        ...dynamicImports('src/checkpoint'),
        { selector: "NewExpression[callee.name='Date'][arguments.length=0]", message: 'src/checkpoint reads no clock: take `at` from the caller' },
        { selector: "CallExpression[callee.name='Date']", message: 'src/checkpoint reads no clock: take `at` from the caller' },
      ],
      'no-restricted-globals': [
        'error',
        ...['process', 'require', 'module', 'global'].map((name) => ({ name, message: 'src/checkpoint reads no environment and loads nothing' })),
        ...['performance', 'setTimeout', 'setInterval', 'setImmediate', 'fetch'].map((name) => ({
          name,
          message: 'src/checkpoint reads no clock, waits for nothing and does no I/O',
        })),
      ],
      'no-restricted-properties': [
        'error',
        { object: 'Date', property: 'now', message: 'src/checkpoint reads no clock: take `at` from the caller' },
        { object: 'Math', property: 'random', message: 'src/checkpoint is deterministic: no randomness' },
        ...['process', 'require', 'Date', 'performance', 'crypto'].map((property) => ({ object: 'globalThis', property, message: 'src/checkpoint reads no globals of the host' })),
      ],
      'no-eval': 'error',
      'no-new-func': 'error',
    },
  },
  {
    // The layers by folder (docs/architecture.md#folders): what each folder may import of ours.
    // Every import must resolve (a path the zones cannot resolve would escape them, e.g. `./x.js` for x.ts).
    files: ['src/**/*.{ts,js}'],
    rules: {
      'import-x/no-unresolved': ['error', { commonjs: true }],
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
              except: ['./stores', './checkpoint', './optional-peer.ts', './aes-gcm.ts'],
              message: 'src/stores imports only src/checkpoint and the optional-peer and AES-GCM helpers',
            },
            // The workflow sandbox: of ours only src/workflows, the contract folders, model/types and
            // the pure protocol without its node:crypto modules (digest, codec, batch identity).
            {
              target: SANDBOX,
              from: './src',
              except: ['./workflows', './activities/contract', './plugin/contract', './model/types.ts', './checkpoint'],
              message: 'workflow code imports of ours only src/workflows, the contract folders (activities/contract, plugin/contract), model/types and src/checkpoint',
            },
            {
              target: SANDBOX,
              from: ['digest.ts', 'codec.ts', 'batch-identity.ts', 'approval-grant.ts'].map((f) => SRC(`checkpoint/${f}`)),
              message: 'workflow code must not reach node:crypto (checkpoint/digest, codec, batch-identity, approval-grant)',
            },
            // Nothing below the applications imports them.
            {
              target: BELOW_APPLICATIONS,
              from: [...APPLICATIONS, 'testing'].map(SRC),
              message: 'only the applications (cli, console, dev, demo) import the applications and the testing entry',
            },
            { target: SRC('testing'), from: ['cli', 'console', 'demo'].map(SRC), message: 'src/testing never imports the applications (cli, console, demo)' },
            {
              target: SRC('telemetry'),
              from: './src',
              except: ['./telemetry', './checkpoint', './stores'],
              message: 'src/telemetry observes the fence: it imports only src/checkpoint and src/stores',
            },
            // src/activities: the fence and the Temporal activities, below the Temporal surfaces.
            {
              target: SRC('activities'),
              from: './src',
              except: ['./activities', './checkpoint', './stores', './telemetry', './model', './optional-peer.ts', './aes-gcm.ts'],
              message: 'src/activities imports only src/checkpoint, src/stores, src/telemetry, src/model and the helpers',
            },
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
              from: SRC('activities'),
              except: ['./contract', './tools'],
              message: "the tool author's API (src/activities/tools) imports of src/activities only contract",
            },
            {
              target: SRC('activities/fence'),
              from: SRC('activities'),
              except: ['./contract', './tools', './fence'],
              message: "the fence engine (src/activities/fence) never imports the agent's activities or the activities barrel",
            },
            { target: SRC('activities/agent'), from: SRC('activities/*.ts'), message: "the agent's activities never import the activities barrel" },
            // src/plugin (Node side): above the activities, below the agent workflow and the applications.
            {
              target: SRC('plugin'),
              from: './src',
              except: ['./plugin', './activities', './checkpoint', './stores', './telemetry', './workflows/fenced', './optional-peer.ts'],
              message: 'src/plugin imports only src/activities, src/checkpoint, src/stores, src/telemetry and its workflow side',
            },
            {
              target: SRC('plugin/contract'),
              from: SRC('plugin'),
              except: ['./contract'],
              message: 'src/plugin/contract holds shapes shared with workflow code: it imports nothing else of src/plugin',
            },
            // Inside src/workflows: common/ serves both workflow surfaces, which never import each other.
            {
              target: SRC('workflows/common'),
              from: SRC('workflows'),
              except: ['./common'],
              message: 'src/workflows/common is shared by both workflow surfaces: it imports neither of them',
            },
            {
              target: SRC('workflows/agent'),
              from: SRC('workflows'),
              except: ['./agent', './common'],
              message: "the agent workflow never imports the plugin's workflow side (src/workflows/fenced) or the entry",
            },
            {
              target: SRC('workflows/fenced'),
              from: SRC('workflows'),
              except: ['./fenced', './common'],
              message: "the plugin's workflow side never imports the agent workflow or the entry",
            },
            { target: './src', from: ['./test', './bench', './crash', './scripts'], message: 'src never imports tests, benchmarks, the crash suite or scripts' },
            { target: BELOW_APPLICATIONS, from: ['./examples', './temporal.config.ts'], message: 'only the applications (the demo) import the examples or the repository config' },
          ],
        },
      ],
    },
  },
);
