/**
 * The workflow-sandbox import rules (eslint.config.js) cover every module that runs in
 * Temporal's V8 sandbox: the agent workflow, the workflow-safe entry (`src/workflow.ts`) and the
 * plugin's workflow interceptor module with the call header it imports. A Node-only import in
 * any of them fails lint before the workflow bundler refuses it at worker start.
 */
import { ESLint } from 'eslint';

// The repository's own config, loaded here (jest cannot run eslint's dynamic import of it).
const eslint = new ESLint({ cwd: process.cwd(), overrideConfigFile: true, overrideConfig: require('../../eslint.config.js') });

/** The rule ids and import sources eslint reports for `code` linted as the file `filePath`. */
async function restricted(filePath: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath });
  return result!.messages.filter((m) => m.ruleId === 'no-restricted-imports').map((m) => /'([^']+)'/.exec(m.message)![1]!);
}

const SANDBOX_FILES = [
  { file: 'src/workflow.ts', toSrc: './' },
  { file: 'src/plugin/workflow-interceptors.ts', toSrc: '../' },
  { file: 'src/plugin/call-header.ts', toSrc: '../' },
  { file: 'src/workflows/agent-workflow.ts', toSrc: '../' },
];

describe('workflow-sandbox lint rules', () => {
  jest.setTimeout(60_000);

  it.each(SANDBOX_FILES)('$file: Node builtins, Node-side packages and Node-side project modules are refused', async ({ file, toSrc }) => {
    const refused = ['node:crypto', 'fs', '@temporalio/worker', '@temporalio/activity', '@temporalio/plugin', 'better-sqlite3', `${toSrc}stores/sqlite-store`, `${toSrc}activities`, `${toSrc}activities/fenced-tool`, `${toSrc}plugin`, `${toSrc}plugin/fence-interceptor`, `${toSrc}testing`, `${toSrc}checkpoint/digest`, `${toSrc}index`];
    const allowed = ['@temporalio/workflow', '@temporalio/common', `${toSrc}activities/contract`, `${toSrc}plugin/call-header`, `${toSrc}checkpoint/errors`];
    const code = [...refused, ...allowed].map((source, i) => `import * as m${i} from '${source}';`).join('\n') + `\nexport const all = [${[...refused, ...allowed].map((_, i) => `m${i}`).join(', ')}];\n`;
    expect((await restricted(file, code)).sort()).toEqual([...refused].sort());
  });

  it("the plugin's workflow side imports no Node-side sibling", async () => {
    expect(await restricted('src/plugin/workflow-interceptors.ts', "import { x } from './fence-interceptor';\nimport { y } from './call-header';\nexport const z = [x, y];\n")).toEqual(['./fence-interceptor']);
  });

  it('the sandbox files as they are lint clean', async () => {
    const results = await eslint.lintFiles(SANDBOX_FILES.map((f) => f.file));
    expect(results.flatMap((r) => r.messages.map((m) => `${r.filePath}:${m.line} ${m.message}`))).toEqual([]);
  });
});
