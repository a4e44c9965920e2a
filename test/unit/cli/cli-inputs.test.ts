/**
 * Bad command-line input gets a typed error that names the problem (docs/protocol.md#bad-input).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { isCheckpointError } from '../../../src/checkpoint/errors';
import { loadTools } from '../../../src/cli/load-tools';
import { durationMs, positiveInteger } from '../../../src/cli/options';
import { withCode } from '../../../src/cli/table';
import { resolveConfig } from '../../../src/config';
import { defineTool } from '../../../src/activities';
import { z } from 'zod';

const run = promisify(execFile);
const CLI = join(__dirname, '../../../src/cli/index.ts');

async function cli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, ['--require', require.resolve('tsx/cjs'), CLI, ...args], { env: { ...process.env, ...env }, timeout: 60_000 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

function expectCode(fn: () => unknown, code: string, message: RegExp): void {
  try {
    fn();
  } catch (error) {
    expect(isCheckpointError(error)).toBe(true);
    expect((error as { code: string }).code).toBe(code);
    expect((error as Error).message).toMatch(message);
    return;
  }
  throw new Error('expected a CheckpointError');
}

describe('command-line inputs', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-cli-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('a tools module that cannot be loaded is INVALID_CONFIG naming the module', async () => {
    await expect(loadTools(join(dir, 'missing.ts'))).rejects.toMatchObject({
      code: 'INVALID_CONFIG',
      message: expect.stringMatching(/missing\.ts cannot be loaded: Cannot find module/),
    });
  });

  it('a TypeScript tools file loads under a TypeScript loader, and without one is INVALID_CONFIG saying to compile it or run under a loader', async () => {
    // In plain Node processes: jest's own module system would load TypeScript either way.
    const root = join(__dirname, '../../..');
    const tools = join(dir, 'typed-tools.ts');
    writeFileSync(
      tools,
      `const { z } = require(${JSON.stringify(join(root, 'node_modules/zod/v4'))});\nconst { defineTool } = require(${JSON.stringify(join(root, 'src/activities/tools/define-tool'))});\n` +
        "export const tools: unknown[] = [defineTool({ name: 'echo', revision: 'v1', input: z.object({ s: z.string() }), async execute() { return { output: null }; } })];\n",
    );
    const loadIn = (unregisterFirst: boolean): string =>
      `const unregister = require('tsx/cjs/api').register();
       const { loadTools } = require(${JSON.stringify(join(root, 'src/cli/load-tools.ts'))});
       ${unregisterFirst ? 'unregister();' : ''}
       loadTools(${JSON.stringify(tools)}).then((t) => console.log('loaded ' + t.map((x) => x.name).join()), (e) => console.log(e.code + ' ' + e.message));`;
    const withLoader = await run(process.execPath, ['-e', loadIn(false)], { cwd: root });
    expect(withLoader.stdout.trim()).toBe('loaded echo');
    const without = await run(process.execPath, ['-e', loadIn(true)], { cwd: root });
    expect(without.stdout.trim()).toMatch(/^INVALID_CONFIG INVALID_CONFIG: --tools .*typed-tools\.ts is TypeScript, which Node does not load by itself: compile it \(tsc\)/);
  });

  it('a tools module exporting an empty array says it exports no tools', async () => {
    writeFileSync(join(dir, 'empty.js'), 'exports.tools = [];');
    await expect(loadTools(join(dir, 'empty.js'))).rejects.toMatchObject({ code: 'INVALID_CONFIG', message: expect.stringMatching(/exports no tools/) });
  });

  it('a tools module exporting a plain object instead of a defineTool result is INVALID_CONFIG naming the tool', async () => {
    writeFileSync(join(dir, 'plain.js'), 'exports.tools = [{ name: "foo" }];');
    await expect(loadTools(join(dir, 'plain.js'))).rejects.toMatchObject({ code: 'INVALID_CONFIG', message: expect.stringMatching(/tool 0 \("foo"\) is not a defineTool/) });
  });

  it('a tool name the model APIs would refuse is INVALID_ARGUMENT', () => {
    expectCode(
      () => defineTool({ name: 'bad name!', revision: 'v1', input: z.object({}), execute: async () => ({ output: null }) }),
      'INVALID_ARGUMENT',
      /tool name "bad name!" must match/,
    );
  });

  it('option values are checked: positive integers and durations', () => {
    expect(positiveInteger('16', '--max-tool-calls')).toBe(16);
    expectCode(() => positiveInteger('0', '--max-tool-calls'), 'INVALID_ARGUMENT', /--max-tool-calls must be a positive integer, got "0"/);
    expect(durationMs('10m', '--deadline')).toBe(600_000);
    expectCode(() => durationMs('soon', '--deadline'), 'INVALID_ARGUMENT', /--deadline must be a positive duration/);
  });

  it('a Temporal address with a port out of range is INVALID_CONFIG naming TEMPORAL_ADDRESS', () => {
    expectCode(() => resolveConfig({}, { TEMPORAL_ADDRESS: 'localhost:99999' }), 'INVALID_CONFIG', /TEMPORAL_ADDRESS must be host:port with a port from 1 to 65535/);
  });

  it('a failure reason is shown once with its code', () => {
    expect(withCode('OUTCOME_UNKNOWN', 'OUTCOME_UNKNOWN: send_email call x')).toBe('OUTCOME_UNKNOWN: send_email call x');
    expect(withCode('UNKNOWN_TOOL', 'no such tool')).toBe('UNKNOWN_TOOL: no such tool');
  });

  it('`start` with a missing or truncated transcript file exits 1 with a typed error naming the file', async () => {
    const missing = await cli(['start', join(dir, 'nope.json')]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^INVALID_ARGUMENT: cannot read transcript file .*nope\.json/m);
    writeFileSync(join(dir, 'cut.json'), '{"version": 1, "id": "x"');
    const cut = await cli(['start', join(dir, 'cut.json')]);
    expect(cut.code).toBe(1);
    expect(cut.stderr).toMatch(/^INVALID_TRANSCRIPT: transcript file .*cut\.json is not valid JSON/m);
    // The run gets the parsed value, so a literal JSON reads changed is refused at the file.
    writeFileSync(join(dir, 'rounded.json'), '{"version": 1, "id": "x", "responses": [{"input": {"amount": 9007199254740993}}]}');
    const rounded = await cli(['start', join(dir, 'rounded.json')]);
    expect(rounded.code).toBe(1);
    expect(rounded.stderr).toMatch(
      /^INVALID_TRANSCRIPT: transcript file .*rounded\.json has number 9007199254740993 at \$\.responses\[0\]\.input\.amount, which JSON reads as 9007199254740992/m,
    );
  });

  it('`show` against an unreachable Temporal server exits 1 with TEMPORAL_UNAVAILABLE naming the address', async () => {
    const out = await cli(['show', 'any'], { TEMPORAL_ADDRESS: '127.0.0.1:1' });
    expect(out.code).toBe(1);
    expect(out.stderr).toMatch(/^TEMPORAL_UNAVAILABLE: cannot reach the Temporal server at 127\.0\.0\.1:1/m);
  });
});
