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

/** The rule ids and import sources eslint reports for `code` linted as the file `filePath`. */
async function restricted(filePath: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath });
  return result!.messages.filter((m) => m.ruleId === 'no-restricted-imports').map((m) => /'([^']+)'/.exec(m.message)![1]!);
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
      `${toSrc}index`,
    ];
    const allowed = [
      '@temporalio/workflow',
      '@temporalio/common',
      `${toSrc}activities/contract/contract`,
      `${toSrc}activities/contract/error-classes`,
      `${toSrc}plugin/contract/call-header`,
      `${toSrc}checkpoint/errors`,
    ];
    const code =
      [...refused, ...allowed].map((source, i) => `import * as m${i} from '${source}';`).join('\n') +
      `\nexport const all = [${[...refused, ...allowed].map((_, i) => `m${i}`).join(', ')}];\n`;
    expect((await restricted(file, code)).sort()).toEqual([...refused].sort());
  });

  it("the plugin's workflow side imports nothing of the plugin's Node side, only its contract folder", async () => {
    const refused = ['../../plugin/fence-interceptor', '../../plugin/call-context', '../../plugin/index', '../../plugin', '../../plugin/contract/nested/x'];
    const allowed = ['./call-scope', '../../plugin/contract/call-header', '../../checkpoint/errors', '../common/failures'];
    const code =
      [...refused, ...allowed].map((source, i) => `import { x${i} } from '${source}';`).join('\n') +
      `\nexport const all = [${[...refused, ...allowed].map((_, i) => `x${i}`).join(', ')}];\n`;
    expect((await restricted('src/workflows/fenced/workflow-interceptors.ts', code)).sort()).toEqual([...refused].sort());
  });

  it('the sandbox files as they are lint clean', async () => {
    const results = await eslint.lintFiles(SANDBOX_PATHS);
    expect(results.flatMap((r) => r.messages.map((m) => `${r.filePath}:${m.line} ${m.message}`))).toEqual([]);
  });
});
