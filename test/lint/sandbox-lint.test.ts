/**
 * The workflow-sandbox import rules (eslint.config.js) cover, by folder, every module that runs in
 * Temporal's V8 sandbox: `src/workflows` (the agent workflow in `agent/`, the plugin's workflow
 * side in `fenced/`: its interceptor module, call scopes, the approval scope, compensations; what
 * both share in `common/`), the workflow-safe entry (`src/workflow.ts`) and the contract folders
 * workflow code imports (`src/activities/contract`, `src/plugin/contract`). A Node-only import in
 * any of them, or one of the plugin's Node side, fails lint before the workflow bundler refuses it
 * at worker start.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { ESLint } from 'eslint';
import { untypedLintConfig } from './lint-config';

// The repository's own config, loaded here (jest cannot run eslint's dynamic import of it).
const eslint = new ESLint({ cwd: process.cwd(), overrideConfigFile: true, overrideConfig: untypedLintConfig() });

/** Rules that refuse an import: packages and builtins by name, project modules by resolved path (any depth or spelling). */
const IMPORT_RULES = new Set(['no-restricted-imports', 'import-x/no-restricted-paths']);

/** The import sources eslint refuses in `code` linted as the file `filePath`. */
async function restricted(filePath: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath });
  return result!.messages.filter((m) => IMPORT_RULES.has(m.ruleId ?? '')).map((m) => /['"]([^'"]+)['"]/.exec(m.message)![1]!);
}

/** The rule ids eslint reports for `code` linted as the file `filePath`. */
async function ruleIds(filePath: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath });
  return result!.messages.map((m) => m.ruleId ?? 'parse error');
}

const SANDBOX_FILES = [
  { file: 'src/workflow.ts', toSrc: './' },
  { file: 'src/workflows/index.ts', toSrc: '../' },
  { file: 'src/workflows/fenced/workflow-interceptors.ts', toSrc: '../../' },
  { file: 'src/workflows/agent/agent-workflow.ts', toSrc: '../../' },
  { file: 'src/plugin/contract/call-header.ts', toSrc: '../../' },
  { file: 'src/activities/contract/contract.ts', toSrc: '../../' },
  // The rules are by folder: a module added to a sandbox folder is covered without naming it.
  { file: 'src/workflows/a-new-module.ts', toSrc: '../' },
  // Any depth: the project rules resolve paths, they do not match text.
  { file: 'src/workflows/agent/nested/a-new-module.ts', toSrc: '../../../' },
  { file: 'src/activities/contract/nested/a-new-module.ts', toSrc: '../../../' },
  ...['workflows/agent', 'workflows/fenced', 'workflows/common', 'plugin/contract', 'activities/contract'].map((dir) => ({ file: `src/${dir}/a-new-module.ts`, toSrc: '../../' })),
];

/** Every file of the sandbox folders (listed here: eslint's own directory search needs a dynamic import jest cannot run). */
const SANDBOX_PATHS = [
  'src/workflow.ts',
  ...['src/workflows', 'src/activities/contract', 'src/plugin/contract'].flatMap((dir) =>
    readdirSync(dir, { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.ts'))
      .map((f) => join(dir, f)),
  ),
];

describe('workflow-sandbox lint rules', () => {
  jest.setTimeout(60_000);

  it.each(SANDBOX_FILES)('$file: Node builtins, Node-side packages and Node-side project modules are refused', async ({ file, toSrc }) => {
    const refused = [
      'node:crypto',
      'fs',
      '@temporalio/worker',
      '@temporalio/activity',
      '@temporalio/plugin',
      'better-sqlite3',
      `${toSrc}stores/sqlite-store`,
      `${toSrc}activities`,
      `${toSrc}activities/fence/fenced-tool`,
      `${toSrc}activities/tools/define-tool`,
      `${toSrc}activities/index`,
      `${toSrc}plugin`,
      `${toSrc}plugin/fence-interceptor`,
      `${toSrc}plugin/options`,
      `${toSrc}plugin/tool-checkpoint-plugin`,
      `${toSrc}testing`,
      `${toSrc}checkpoint/digest`,
      `${toSrc}checkpoint/batch-identity`,
      `${toSrc}index`,
      `${toSrc}protocol`,
      `${toSrc}aes-gcm`,
      `${toSrc}codec/payload-codec`,
      `${toSrc}visibility/namespace-search-attributes`,
      `${toSrc}operator`,
      `${toSrc}telemetry/traced-store`,
      `${toSrc}optional-peer`,
      `${toSrc}workflow`,
      'temporal-tool-checkpoint/stores',
      // Packages are an allowlist (@temporalio/workflow, @temporalio/common): any other is refused, whatever Node version lints.
      '@grpc/grpc-js',
      '@temporalio/core-bridge',
      'fastify',
      'pg-pool',
      'node:test',
      `${toSrc}../node_modules/@temporalio/worker`,
    ];
    const allowed = [
      '@temporalio/workflow',
      '@temporalio/common',
      `${toSrc}activities/contract/contract`,
      `${toSrc}activities/contract/error-classes`,
      `${toSrc}checkpoint/errors`,
    ];
    // The plugin's contract is workflow code's to import, not the activities' contract's (a layer below the plugin).
    (file.startsWith('src/activities/') ? refused : allowed).push(`${toSrc}plugin/contract/call-header`);
    const code =
      [...refused, ...allowed].map((source, i) => `import * as m${i} from '${source}';`).join('\n') +
      `\nexport const all = [${[...refused, ...allowed].map((_, i) => `m${i}`).join(', ')}];\n`;
    expect([...new Set(await restricted(file, code))].sort()).toEqual([...refused].sort());
  });

  it("the plugin's workflow side imports nothing of the plugin's Node side, only its contract folder", async () => {
    const refused = [
      '../../plugin/fence-interceptor',
      '../../plugin/call-context',
      '../../plugin/index',
      '../../plugin',
      '../agent/types',
      '../../workflow',
      '../agent/../../codec/payload-codec',
    ];
    const allowed = ['./call-scope', '../../plugin/contract/call-header', '../../checkpoint/errors', '../common/failures'];
    const code =
      [...refused, ...allowed].map((source, i) => `import { x${i} } from '${source}';`).join('\n') +
      `\nexport const all = [${[...refused, ...allowed].map((_, i) => `x${i}`).join(', ')}];\n`;
    expect([...new Set(await restricted('src/workflows/fenced/workflow-interceptors.ts', code))].sort()).toEqual([...refused].sort());
  });

  it.each([
    ['require()', "const fs = require('node:fs');\nexport const a = fs;\n", 'no-restricted-syntax'],
    ['require.call()', "export const a = require.call(null, 'node:fs');\n", 'no-restricted-globals'],
    ['require by another name', 'const r = require;\nexport const a = r;\n', 'no-restricted-globals'],
    ['module.require()', "export const a = module.require('node:net');\n", 'no-restricted-globals'],
    ['globalThis.require()', "export const a = (globalThis as any).require('node:http');\n", 'no-restricted-syntax'],
    ['process (env, getBuiltinModule)', "export const a = process.getBuiltinModule('node:fs');\n", 'no-restricted-globals'],
    ['eval', "export const a = (0, eval)('1');\n", 'no-eval'],
    ['dynamic import()', "export const a = () => import('node:fs');\n", 'no-restricted-syntax'],
    ['a path that does not resolve (a .js suffix on a .ts module)', "import * as m from '../../console/app.js';\nexport const a = m;\n", 'import-x/no-unresolved'],
  ])('workflow code cannot get past the import rules with %s', async (_what, code, rule) => {
    expect(await ruleIds('src/workflows/fenced/a-new-module.ts', code)).toContain(rule);
  });

  it('a .js file in a sandbox folder is linted like a .ts file', async () => {
    expect(await ruleIds('src/workflows/agent/a-new-module.js', "const fs = require('node:fs');\nmodule.exports = fs;\n")).toContain('no-restricted-syntax');
    expect(await restricted('src/workflows/agent/a-new-module.js', "import * as fs from 'node:fs';\nexport const a = fs;\n")).toEqual(['node:fs']);
  });

  it('the sandbox files as they are lint clean', async () => {
    const results = await eslint.lintFiles(SANDBOX_PATHS);
    expect(results.flatMap((r) => r.messages.map((m) => `${r.filePath}:${m.line} ${m.message}`))).toEqual([]);
  });
});
