/**
 * The installable package: `npm pack` (which builds through `prepack`),
 * then `npm install` of the tarball into a fresh project outside the repository, whose files
 * import the package by name only. Checks what a user depends on: the tarball holds the built
 * entries and nothing else, every entry of the `exports` map loads and nothing else does, the
 * types resolve under both TypeScript resolutions, the workflow-safe entry bundles, and a worker
 * plus workflow from the installed package, with the plugin fencing a plain activity, survive a
 * SIGKILL after the effect on a real dev server.
 *
 * Dependencies come from the npm cache or the registry (`--prefer-offline`). Install scripts are
 * skipped (`--ignore-scripts`: compiling better-sqlite3 takes minutes here), so the consumer uses
 * the PostgreSQL store of the jest global setup.
 */
import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { startDevServer, type DevServer } from '../../src/dev/dev-server';
import { temporalTestServerPath } from '../../src/dev/temporal-binaries';
import { openCheckpointStore } from '../../src/stores/open-checkpoint-store';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres';

const run = promisify(execFile);
const ROOT = resolve(__dirname, '../..');
const TSC = join(ROOT, 'node_modules/typescript/bin/tsc');
const ENTRIES = ['temporal-tool-checkpoint', 'temporal-tool-checkpoint/workflow', 'temporal-tool-checkpoint/plugin', 'temporal-tool-checkpoint/workflow-interceptors', 'temporal-tool-checkpoint/testing'];

jest.setTimeout(600_000);

let dir: string;
let consumer: string;
let tarball: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ttc-pack-'));
  consumer = join(dir, 'consumer');
  await run('npm', ['pack', '--pack-destination', dir], { cwd: ROOT, maxBuffer: 64 << 20 });
  const packed = readdirSync(dir).find((f) => f.endsWith('.tgz'));
  if (packed === undefined) throw new Error(`npm pack wrote no tarball into ${dir}`);
  tarball = join(dir, packed);
  cpSync(join(__dirname, 'consumer'), consumer, { recursive: true });
  writeFileSync(join(consumer, 'package.json'), JSON.stringify({ name: 'consumer', private: true }));
  await run('npm', ['install', '--prefer-offline', '--ignore-scripts', '--no-audit', '--no-fund', tarball, '@temporalio/testing@1.24.0'], { cwd: consumer, maxBuffer: 64 << 20 });
});

afterAll(() => {
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

describe('npm pack', () => {
  test('the tarball holds the built entries with their types, the CLI, the README and the LICENSE; no tests, no TypeScript sources', async () => {
    const { stdout } = await run('tar', ['-tzf', tarball], { maxBuffer: 64 << 20 });
    const files = stdout.split('\n').filter(Boolean);
    for (const f of ['index.js', 'index.d.ts', 'workflow.js', 'workflow.d.ts', 'plugin/index.js', 'plugin/index.d.ts', 'plugin/workflow-interceptors.js', 'testing/index.js', 'testing/index.d.ts', 'cli/index.js']) {
      expect(files).toContain(`package/dist/src/${f}`);
    }
    expect(files).toContain('package/README.md');
    expect(files).toContain('package/LICENSE');
    expect(files.filter((f) => f.startsWith('package/dist/test') || /\.test\.|(?<!\.d)\.ts$/.test(f))).toEqual([]);
    expect(files.filter((f) => !f.startsWith('package/dist/') && !['package/package.json', 'package/README.md', 'package/LICENSE'].includes(f))).toEqual([]);
  });
});

describe('installed in a fresh project', () => {
  test('every entry of the exports map loads by the package name; a path outside the map is refused', async () => {
    const script = `
      const out = {};
      for (const e of ${JSON.stringify(ENTRIES)}) out[e] = Object.keys(require(e));
      out.version = require('temporal-tool-checkpoint/package.json').version;
      try { require('temporal-tool-checkpoint/dist/src/stores/sqlite-store'); out.deep = 'loaded'; } catch (e) { out.deep = e.code; }
      console.log(JSON.stringify(out));`;
    const { stdout } = await run(process.execPath, ['-e', script], { cwd: consumer });
    const out = JSON.parse(stdout) as Record<string, unknown>;
    expect(out['temporal-tool-checkpoint']).toEqual(expect.arrayContaining(['createToolActivities', 'defineTool', 'openCheckpointStore', 'CheckpointError']));
    expect(out['temporal-tool-checkpoint/workflow']).toEqual(expect.arrayContaining(['agentWorkflow', 'isOutcomeUnknown', 'NOTHING_APPLIED_CODES']));
    expect(out['temporal-tool-checkpoint/testing']).toEqual(expect.arrayContaining(['createTempSqliteStore', 'runCrashAndRetry', 'createTimeSkippingEnv', 'FENCE_POINTS']));
    expect(out['temporal-tool-checkpoint/plugin']).toEqual(expect.arrayContaining(['ToolCheckpointPlugin']));
    expect(out['temporal-tool-checkpoint/workflow-interceptors']).toEqual(['interceptors']);
    expect(out.version).toBe(require('../../package.json').version);
    expect(out.deep).toBe('ERR_PACKAGE_PATH_NOT_EXPORTED');
  });

  test("the Temporal SDK is a peer: the package uses the project's one copy of each @temporalio package; @temporalio/testing is an optional peer", async () => {
    const sdk = ['activity', 'client', 'common', 'envconfig', 'plugin', 'worker', 'workflow', 'testing'].map((n) => `@temporalio/${n}`);
    const script = `
      const path = require('node:path');
      const pkgDir = path.dirname(require.resolve('temporal-tool-checkpoint/package.json'));
      const pkg = require('temporal-tool-checkpoint/package.json');
      const at = (paths) => Object.fromEntries(${JSON.stringify(sdk)}.map((n) => [n, require.resolve(n, { paths })]));
      console.log(JSON.stringify({ fromPackage: at([pkgDir]), fromProject: at([process.cwd()]), nested: require('node:fs').existsSync(path.join(pkgDir, 'node_modules/@temporalio')), peers: pkg.peerDependencies, meta: pkg.peerDependenciesMeta, deps: Object.keys(pkg.dependencies) }));`;
    const { stdout } = await run(process.execPath, ['-e', script], { cwd: consumer });
    const out = JSON.parse(stdout) as { fromPackage: Record<string, string>; fromProject: Record<string, string>; nested: boolean; peers: Record<string, string>; meta: Record<string, unknown>; deps: string[] };
    expect(out.fromPackage).toEqual(out.fromProject);
    expect(out.nested).toBe(false);
    expect(Object.keys(out.peers).sort()).toEqual(sdk.sort());
    expect(Object.values(out.peers)).toEqual(Object.values(out.peers).map(() => '~1.24.0'));
    expect(out.meta).toEqual({ '@temporalio/testing': { optional: true } });
    expect(out.deps.filter((d) => sdk.includes(d))).toEqual([]);
  });

  test('the types of every entry resolve under moduleResolution node10 (typesVersions) and node16 (exports)', async () => {
    const imports = ENTRIES.map((e, i) => `import * as e${i} from '${e}';\nexport const k${i} = Object.keys(e${i});`).join('\n');
    const typed = `${imports}
import { defineTool, type ToolDefinition } from 'temporal-tool-checkpoint';
import type { CrashAndRetryReport } from 'temporal-tool-checkpoint/testing';
import type { ToolCheckpointPluginOptions } from 'temporal-tool-checkpoint/plugin';
export type F = ToolCheckpointPluginOptions['fence'];
import type { AgentWorkflowInput } from 'temporal-tool-checkpoint/workflow';
export const t: ToolDefinition<unknown> | undefined = undefined;
export type R = CrashAndRetryReport['effects'] & number;
export type I = AgentWorkflowInput['tenant'];
export const d = defineTool;
`;
    writeFileSync(join(consumer, 'types.ts'), typed);
    for (const [moduleResolution, module] of [['node10', 'commonjs'], ['node16', 'node16']]) {
      const args = ['--noEmit', '--strict', '--skipLibCheck', '--types', 'node', '--typeRoots', join(ROOT, 'node_modules/@types'), '--module', module!, '--moduleResolution', moduleResolution!, '--target', 'es2022', 'types.ts'];
      await expect(run(process.execPath, [TSC, ...args], { cwd: consumer }).then(() => moduleResolution)).resolves.toBe(moduleResolution);
    }
  });

  test('the ttc command line is installed as a bin and prints its help', async () => {
    const { stdout } = await run(join(consumer, 'node_modules/.bin/ttc'), ['--help'], { cwd: consumer });
    expect(stdout).toMatch(/Usage: ttc/);
  });

  test("the testing entry's example runs in the fresh project with jest, against the installed package", async () => {
    // Install scripts were skipped: give better-sqlite3 the binary this repository built for the same version and Node.
    const version = (p: string): string => (JSON.parse(readFileSync(join(p, 'node_modules/better-sqlite3/package.json'), 'utf8')) as { version: string }).version;
    expect(version(consumer)).toBe(version(ROOT));
    cpSync(join(ROOT, 'node_modules/better-sqlite3/build'), join(consumer, 'node_modules/better-sqlite3/build'), { recursive: true });
    cpSync(join(ROOT, 'examples/testing'), join(consumer, 'example'), { recursive: true, filter: (f) => !f.endsWith('jest.config.js') });
    const config = { rootDir: consumer, roots: ['<rootDir>/example'], testEnvironment: 'node', transform: { '^.+\\.ts$': [require.resolve('ts-jest'), { isolatedModules: true, tsconfig: { module: 'commonjs', target: 'es2022', esModuleInterop: true } }] } };
    const env = { ...process.env, TEMPORAL_TEST_SERVER_PATH: temporalTestServerPath(ROOT) };
    const { stderr } = await run(process.execPath, [join(ROOT, 'node_modules/jest/bin/jest.js'), '--config', JSON.stringify(config), '--ci', '--forceExit'], { cwd: consumer, env, maxBuffer: 64 << 20 });
    expect(stderr).toMatch(/Tests:\s+3 passed, 3 total/);
  });

  describe('on a real dev server', () => {
    let server: DevServer;
    let db: TestDatabase;
    beforeAll(async () => {
      server = await startDevServer();
      db = await createTestDatabase();
    });
    afterAll(async () => {
      await server?.stop({ signal: 'SIGKILL' });
      await db?.drop();
    });

    test('a plain activity fenced by the plugin from the installed package: worker SIGKILLed after the effect, a second worker delivers the looked-up result; one effect', async () => {
      const env = { ...process.env, TEMPORAL_ADDRESS: server.address, STORE_URL: db.url, LEDGER: join(dir, 'ledger.jsonl'), WORKFLOW_ID: `consumer-email-${Date.now()}`, TASK_QUEUE: `consumer-${Date.now()}` };
      const killed = await run(process.execPath, ['run-worker.js', 'start'], { cwd: consumer, env: { ...env, TTC_CRASH_AT: 'after-effect:sendEmail' } }).then(
        () => 'exited',
        (error: { signal?: string }) => error.signal,
      );
      expect(killed).toBe('SIGKILL');
      const clean: NodeJS.ProcessEnv = { ...env };
      delete clean.TTC_CRASH_AT;
      const { stdout } = await run(process.execPath, ['run-worker.js', 'finish'], { cwd: consumer, env: clean, maxBuffer: 64 << 20 });
      const { result } = JSON.parse(stdout.trim().split('\n').at(-1)!) as { result: { email: { messageId: string }; nothingAppliedCodes: number } };
      const ledger = readFileSync(env.LEDGER, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as { messageId: string; idempotencyKey: string | null });
      expect(ledger).toHaveLength(1);
      expect(ledger[0]!.idempotencyKey).toMatch(/^ttc/);
      expect(result.email).toEqual({ messageId: ledger[0]!.messageId });
      expect(result.nothingAppliedCodes).toBeGreaterThan(0);
      const store = await openCheckpointStore(db.url);
      try {
        const records = await store.listByStatus(['ready', 'executing', 'uncertain', 'completed', 'delivering', 'delivered'], { limit: 100 });
        expect(records.map((r) => [r.binding.toolName, r.status, r.result?.payload])).toEqual([['sendEmail', 'delivered', { ok: true, output: result.email, receipt: null }]]);
      } finally {
        await store.close();
      }
    });
  });
});
