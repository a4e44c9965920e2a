/**
 * The layer rules by folder (eslint.config.js, `import-x/no-restricted-paths` zones;
 * docs/architecture.md#folders): what each layer folder may import of ours. Each case lints an
 * import as a new file of the folder, so the rule is shown to hold for the folder, not for a list
 * of files.
 */
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
    refused: ['../activities/contract/contract', '../telemetry/traced-store', '../plugin', '../workflows/agent/types', '../key-material'],
    allowed: ['./checkpoint-store', '../checkpoint/errors', '../optional-peer', '../aes-gcm', '../config'],
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
    refused: ['../cli/show', '../console/app', '../demo/main-job'],
    allowed: ['../stores/checkpoint-store', '../telemetry/attempt-telemetry', './contract/contract'],
  },
  {
    folder: 'src/activities/contract',
    file: 'src/activities/contract/a-new-module.ts',
    refused: ['../tools/define-tool', '../fence/fenced-tool', '../agent/model-turn', '../index'],
    allowed: ['./contract', '../../checkpoint/errors'],
  },
  {
    folder: 'src/activities/tools',
    file: 'src/activities/tools/a-new-module.ts',
    refused: ['../fence/fenced-tool', '../agent/model-turn', '../index'],
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
    folder: 'src',
    file: 'src/cli/a-new-module.ts',
    refused: ['../../test/helpers/postgres', '../../bench/store-bench'],
    allowed: ['../stores/checkpoint-store', './show'],
  },
];

describe('layer lint rules by folder', () => {
  jest.setTimeout(60_000);

  it.each(CASES)('$folder: refuses what its zone forbids and allows the rest', async ({ file, refused, allowed }) => {
    expect((await refusedByZone(file, [...refused, ...allowed])).sort()).toEqual([...refused].sort());
  });
});
