/**
 * The layer rules by folder (eslint.config.js, `import-x/no-restricted-paths` zones;
 * docs/architecture.md#folders): what each layer folder may import of ours. Each case lints an
 * import as a new file of the folder, so the rule is shown to hold for the folder, not for a list
 * of files.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ESLint } from 'eslint';
import { untypedLintConfig } from './lint-config';

// The repository's own config, loaded here (jest cannot run eslint's dynamic import of it).
const eslint = new ESLint({ cwd: process.cwd(), overrideConfigFile: true, overrideConfig: untypedLintConfig() });

/** The import sources the layer zones refuse in `code` linted as the file `filePath`. */
async function refusedByZone(filePath: string, sources: readonly string[]): Promise<string[]> {
  const code = sources.map((source, i) => `import * as m${i} from '${source}';`).join('\n') + `\nexport const all = [${sources.map((_, i) => `m${i}`).join(', ')}];\n`;
  const [result] = await eslint.lintText(code, { filePath });
  return result!.messages.filter((m) => m.ruleId === 'import-x/no-restricted-paths').map((m) => /"([^"]+)"/.exec(m.message)![1]!);
}

const CASES = [
  {
    folder: 'src/checkpoint',
    file: 'src/checkpoint/a-new-module.ts',
    refused: ['../stores/checkpoint-store', '../activities/contract/contract', '../optional-peer', '../config', '../workflows/agent/types'],
    allowed: ['./errors', './types'],
  },
  {
    folder: 'src/stores',
    file: 'src/stores/a-new-module.ts',
    refused: ['../activities/contract/contract', '../telemetry/traced-store', '../plugin', '../workflows/agent/types', '../key-material', '../config'],
    allowed: ['./checkpoint-store', '../checkpoint/errors', '../optional-peer', '../aes-gcm'],
  },
  {
    folder: 'src/workflows',
    file: 'src/workflows/a-new-module.ts',
    refused: ['../stores/checkpoint-store', '../cli/show', '../console/app', '../dev/dev-server', '../demo/main-job'],
    allowed: ['../activities/contract/contract', '../checkpoint/errors', './agent/types'],
  },
  {
    folder: 'src/workflows/agent',
    file: 'src/workflows/agent/a-new-module.ts',
    refused: ['../../stores/checkpoint-store', '../../cli/show', '../../console/app', '../fenced/call-scope', '../fenced/compensations'],
    allowed: ['./types', '../common/failures', '../../activities/contract/contract', '../../checkpoint/errors'],
  },
  {
    folder: 'src/workflows/fenced',
    file: 'src/workflows/fenced/a-new-module.ts',
    refused: ['../../stores/checkpoint-store', '../../cli/show', '../../dev/dev-server', '../agent/types', '../agent/agent-workflow', '../index'],
    allowed: ['./call-scope', '../common/failures', '../../plugin/contract/call-header', '../../checkpoint/errors'],
  },
  {
    folder: 'src/workflows/common',
    file: 'src/workflows/common/a-new-module.ts',
    refused: ['../agent/types', '../fenced/call-scope', '../index', '../../stores/checkpoint-store'],
    allowed: ['./failures', '../../activities/contract/contract', '../../checkpoint/errors'],
  },
  {
    folder: 'src/plugin/contract',
    file: 'src/plugin/contract/a-new-module.ts',
    refused: ['../fence-interceptor', '../options', '../index', '../../stores/checkpoint-store'],
    allowed: ['./call-header', '../../checkpoint/types'],
  },
  {
    folder: 'src/workflow.ts',
    file: 'src/workflow.ts',
    refused: ['./stores/checkpoint-store', './cli/show', './console/app', './dev/dev-server', './demo/main-job'],
    allowed: ['./workflows/agent/types', './plugin/contract/call-header', './workflows/fenced/compensations'],
  },
  {
    folder: 'src/activities',
    file: 'src/activities/a-new-module.ts',
    refused: ['../cli/show', '../console/app', '../demo/main-job', '../workflows/agent/agent-workflow', '../plugin', '../dev/dev-server', '../testing', '../worker', '../index'],
    allowed: ['../stores/checkpoint-store', '../telemetry/attempt-telemetry', './contract/contract', '../model/types'],
  },
  {
    folder: 'src/activities/contract',
    file: 'src/activities/contract/a-new-module.ts',
    refused: ['../tools/define-tool', '../fence/fenced-tool', '../agent/model-turn', '../index', '../../telemetry', '../../workflows/agent/agent-workflow'],
    allowed: ['./contract', '../../checkpoint/errors'],
  },
  {
    folder: 'src/activities/tools',
    file: 'src/activities/tools/a-new-module.ts',
    refused: ['../fence/fenced-tool', '../agent/model-turn', '../index', '../../plugin/fence-interceptor', '../../testing'],
    allowed: ['./define-tool', '../contract/contract', '../../checkpoint/errors'],
  },
  {
    folder: 'src/activities/fence',
    file: 'src/activities/fence/a-new-module.ts',
    refused: ['../agent/model-turn', '../index'],
    allowed: ['./fenced-tool', '../tools/define-tool', '../contract/contract', '../../stores/checkpoint-store'],
  },
  {
    folder: 'src/activities/agent',
    file: 'src/activities/agent/a-new-module.ts',
    refused: ['../index'],
    allowed: ['./model-turn', '../fence/failures', '../tools/define-tool', '../contract/contract'],
  },
  {
    folder: 'src/telemetry',
    file: 'src/telemetry/a-new-module.ts',
    refused: ['../cli/show', '../activities/contract/contract', '../plugin'],
    allowed: ['./attempt-telemetry', '../stores/checkpoint-store', '../checkpoint/errors'],
  },
  {
    folder: 'src/plugin',
    file: 'src/plugin/a-new-module.ts',
    refused: ['../cli/show', '../demo/main-job', '../workflows/agent/agent-workflow', '../console/app', '../testing', '../worker'],
    allowed: ['./options', './contract/call-header', '../activities', '../activities/fence/fenced-tool', '../stores/checkpoint-store', '../telemetry/attempt-telemetry'],
  },
  {
    folder: 'below the applications (codec, operator, visibility, model, root files)',
    file: 'src/codec/a-new-module.ts',
    refused: ['../console/app', '../cli/show', '../dev/dev-server', '../demo/main-job'],
    allowed: ['../aes-gcm', './payload-codec'],
  },
  {
    folder: 'src/operator',
    file: 'src/operator/a-new-module.ts',
    refused: ['../console/app', '../cli/show'],
    allowed: ['../workflows/agent/messages', '../visibility/namespace-search-attributes'],
  },
  {
    folder: 'src (root files)',
    file: 'src/a-new-module.ts',
    refused: ['./cli/show', './console/app', './dev/dev-server', './demo/main-job'],
    allowed: ['./config', './worker'],
  },
  {
    folder: 'src',
    file: 'src/cli/a-new-module.ts',
    refused: ['../../test/helpers/postgres', '../../bench/store-bench', '../../crash/tcp-proxy', '../../scripts/check-interleavings'],
    allowed: ['../stores/checkpoint-store', './show', '../../examples/demo-tools'],
  },
  {
    folder: 'below the applications: the examples, the repository config and the testing entry',
    file: 'src/model/a-new-module.ts',
    refused: ['../../examples/demo-tools', '../../temporal.config', '../testing/time-skipping', '../../crash/tcp-proxy'],
    allowed: ['./types', '../checkpoint/errors'],
  },
];

describe('layer lint rules by folder', () => {
  jest.setTimeout(60_000);

  it.each(CASES)('$folder: refuses what its zone forbids and allows the rest', async ({ file, refused, allowed }) => {
    expect([...new Set(await refusedByZone(file, [...refused, ...allowed]))].sort()).toEqual([...refused].sort());
  });
});

describe('src/checkpoint is pure', () => {
  jest.setTimeout(60_000);

  /** The rule ids eslint reports for `code` as a new file of src/checkpoint. */
  async function ruleIds(code: string): Promise<string[]> {
    const [result] = await eslint.lintText(code, { filePath: 'src/checkpoint/a-new-module.ts' });
    return result!.messages.map((m) => m.ruleId ?? 'parse error');
  }

  it.each([
    ['a Node builtin other than node:crypto', "import { execSync } from 'node:child_process';\nexport const a = execSync;\n", 'no-restricted-imports'],
    ['the file system', "import { readFileSync } from 'fs';\nexport const a = readFileSync;\n", 'no-restricted-imports'],
    ['Temporal', "import { sleep } from '@temporalio/workflow';\nexport const a = sleep;\n", 'no-restricted-imports'],
    ['require()', "export const a = require('node:fs');\n", 'no-restricted-syntax'],
    ['dynamic import()', "export const a = () => import('node:fs');\n", 'no-restricted-syntax'],
    ['the clock (new Date())', 'export const a = new Date();\n', 'no-restricted-syntax'],
    ['the clock (Date.now)', 'export const a = Date.now();\n', 'no-restricted-properties'],
    ['the clock (performance)', 'export const a = performance.now();\n', 'no-restricted-globals'],
    ['the environment (process.env)', 'export const a = process.env.X;\n', 'no-restricted-globals'],
    ['the environment (globalThis.process)', 'export const a = globalThis.process;\n', 'no-restricted-properties'],
    ['the clock (Date())', 'export const a = Date();\n', 'no-restricted-syntax'],
    ['the clock (globalThis.Date)', 'export const a = new globalThis.Date();\n', 'no-restricted-properties'],
    ['randomness (Math.random)', 'export const a = Math.random();\n', 'no-restricted-properties'],
    ['timers', 'export const a = setTimeout;\n', 'no-restricted-globals'],
    ['I/O (fetch)', "export const a = fetch('http://x');\n", 'no-restricted-globals'],
    ['a package other than its own three', "import Fastify from 'fastify';\nexport const a = Fastify;\n", 'no-restricted-imports'],
    ['a package by a path into node_modules', "import * as c from '../../node_modules/@temporalio/client';\nexport const a = c;\n", 'no-restricted-imports'],
    ['eval', "export const a = eval('1');\n", 'no-eval'],
  ])('refuses %s', async (_what, code, rule) => {
    expect(await ruleIds(code)).toContain(rule);
  });

  it('allows node:crypto and a Date from a value', async () => {
    expect(await ruleIds("import { createHash } from 'node:crypto';\nexport const a = [createHash, new Date(0)];\n")).toEqual([]);
  });
});

describe('every part of src is under a rule', () => {
  const ROOT = join(__dirname, '../..');
  const architecture = readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8');

  it('every folder of src has its row in docs/architecture.md (a new folder is placed in a layer before it lands)', () => {
    const folders = readdirSync(join(ROOT, 'src'), { withFileTypes: true }).filter((d) => d.isDirectory());
    expect(folders.map((d) => d.name).filter((name) => !architecture.includes(`\`src/${name}\``))).toEqual([]);
  });

  it('src holds only .ts and .js files, the ones the folder rules cover', () => {
    const files = readdirSync(join(ROOT, 'src'), { recursive: true, encoding: 'utf8' }).filter((f) => /\.[a-z]+$/.test(f));
    expect(files.filter((f) => !/\.(ts|js)$/.test(f) || /\.d\.ts$/.test(f))).toEqual([]);
  });
});
