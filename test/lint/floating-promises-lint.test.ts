/**
 * The typed lint rule `@typescript-eslint/no-floating-promises` (eslint.config.js) on the
 * package's source: a promise neither awaited, nor given a rejection handler, nor marked `void`
 * fails lint in `src/**`; tests, examples and scripts are not type-checked by lint (it is slow).
 */
import { ESLint } from 'eslint';

// The repository's own config, loaded here (jest cannot run eslint's dynamic import of it).
const eslint = new ESLint({ cwd: process.cwd(), overrideConfigFile: true, overrideConfig: require('../../eslint.config.js') });

/** The lines where eslint reports a floating promise in `code` linted as the file `filePath`. */
async function floating(filePath: string, code: string): Promise<number[]> {
  const [result] = await eslint.lintText(code, { filePath });
  return result!.messages.filter((m) => m.ruleId === '@typescript-eslint/no-floating-promises').map((m) => m.line);
}

const CODE = [
  'async function write(): Promise<number> { return 1; }',
  'export async function handler(): Promise<void> {',
  '  write();', // 3: floating
  '  write().then(() => 2);', // 4: floating (no rejection handler)
  '  await write();',
  '  write().catch(() => 0);',
  '  void write(); // safe: nothing waits for it',
  '}',
  '',
].join('\n');

describe('no-floating-promises on the source', () => {
  jest.setTimeout(120_000);

  it('a promise in src that is neither awaited, caught nor marked void is an error', async () => {
    expect(await floating('src/cli/codec-server.ts', CODE)).toEqual([3, 4]);
  });

  it('tests and examples are not linted with types', async () => {
    expect(await floating('test/lint/sandbox-lint.test.ts', CODE)).toEqual([]);
    expect(await floating('examples/weather/tools.ts', CODE)).toEqual([]);
  });

  it('the modules whose promises are left running on purpose lint clean', async () => {
    const results = await eslint.lintFiles(['src/cli/codec-server.ts', 'src/cli/console.ts', 'src/dev/dev-server.ts', 'src/dev/worker-process.ts', 'src/stores/sqlite-thread.ts']);
    expect(results.flatMap((r) => r.messages.map((m) => `${r.filePath}:${m.line} ${m.ruleId ?? ''} ${m.message}`))).toEqual([]);
  });
});
