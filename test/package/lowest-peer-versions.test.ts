/**
 * The lowest Temporal SDK the peer range admits, next to `@temporalio/ai-sdk` (which pins its
 * Temporal dependencies exactly), with the lowest zod the peer range admits (3.25.76, whose `zod/v4`
 * the package uses): the packed tarball installs without a peer conflict, the
 * project holds one copy of each Temporal package, the types compile (strict), and the plugin
 * from the installed package fences a plain activity across a SIGKILL after the effect on a real
 * dev server. The highest version (this repository's own) is covered by pack.test.ts.
 */
import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { startDevServer, type DevServer } from '../../src/dev/dev-server';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres';
import { runEmailCrashScenario } from './consumer/crash-scenario';
import { packInto } from './packed-tarball';

const run = promisify(execFile);
const ROOT = resolve(__dirname, '../..');
const TSC = join(ROOT, 'node_modules/typescript/bin/tsc');
const PEERS = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { peerDependencies: Record<string, string> }).peerDependencies;
/** The lowest version of the `@temporalio/*` peer range (`^1.23.0` → 1.23.0). */
const LOWEST = /^\^(\d+\.\d+\.\d+)$/.exec(PEERS['@temporalio/worker'] ?? '')?.[1];
/** The lowest zod of the peer range (`^3.25.76 || ^4.0.0`). */
const LOWEST_ZOD = /^\^(\d+\.\d+\.\d+) \|\|/.exec(PEERS.zod ?? '')?.[1];
const SDK = ['activity', 'client', 'common', 'envconfig', 'plugin', 'proto', 'worker', 'workflow'];

jest.setTimeout(600_000);

let dir: string;
let consumer: string;

beforeAll(async () => {
  if (LOWEST_ZOD === undefined) throw new Error(`the zod peer range ${PEERS.zod} is not ^x.y.z || …`);
  if (LOWEST === undefined) throw new Error(`the @temporalio/worker peer range ${PEERS['@temporalio/worker']} is not ^x.y.z`);
  dir = mkdtempSync(join(tmpdir(), 'ttc-lowest-'));
  consumer = join(dir, 'consumer');
  cpSync(join(__dirname, 'consumer'), consumer, { recursive: true, filter: (f) => !f.endsWith('.ts') });
  const packed = await packInto(consumer);
  writeFileSync(join(consumer, 'package.json'), JSON.stringify({ name: 'consumer', private: true }));
  const pg = (JSON.parse(readFileSync(join(ROOT, 'node_modules/pg/package.json'), 'utf8')) as { version: string }).version;
  const specs = [...SDK.map((n) => `@temporalio/${n}@${LOWEST}`), `@temporalio/ai-sdk@${LOWEST}`, `./${packed}`, `pg@${pg}`, `zod@${LOWEST_ZOD}`];
  await run('npm', ['install', '--prefer-offline', '--ignore-scripts', '--no-audit', '--no-fund', ...specs], { cwd: consumer, maxBuffer: 64 << 20 });
});

afterAll(() => {
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

test('beside @temporalio/ai-sdk at the lowest Temporal version, the project holds one copy of each Temporal package', () => {
  const lock = JSON.parse(readFileSync(join(consumer, 'node_modules/.package-lock.json'), 'utf8')) as { packages: Record<string, { version: string }> };
  const copies = Object.entries(lock.packages)
    .filter(([path]) => /node_modules\/@temporalio\/(activity|client|common|plugin|worker|workflow)$/.test(path))
    .map(([path, { version }]) => `${path.replace(/^.*node_modules\//, '')}@${version}`)
    .sort();
  expect(copies).toEqual(['activity', 'client', 'common', 'plugin', 'worker', 'workflow'].map((n) => `@temporalio/${n}@${LOWEST}`));
  expect(Object.keys(lock.packages)).toContain('node_modules/@temporalio/ai-sdk');
});

test('the types of the adoption entries compile (strict) against the lowest Temporal version and the lowest zod', async () => {
  writeFileSync(
    join(consumer, 'types.ts'),
    `import { Worker } from '@temporalio/worker';
import { defineTool, openCheckpointStore } from 'temporal-tool-checkpoint';
import { ToolCheckpointPlugin, fencedCallContext } from 'temporal-tool-checkpoint/plugin';
import { isOutcomeUnknown } from 'temporal-tool-checkpoint/workflow';
import { z } from 'zod/v4';
export const charge = defineTool({ name: 'charge', revision: 'v1', description: 'charge a card', input: z.object({ orderId: z.string() }), async execute(input) { return { output: { id: input.orderId } }; } });
export async function main(): Promise<void> {
  const store = await openCheckpointStore('sqlite:.data/c.db');
  const plugin = new ToolCheckpointPlugin({ store, fence: { sendEmail: { revision: 'v1' } } });
  await Worker.create({ taskQueue: 'q', workflowsPath: 'w.js', activities: { async sendEmail() { return fencedCallContext()?.idempotencyKey; } }, plugins: [plugin] });
}
export const used = [defineTool, isOutcomeUnknown];
`,
  );
  const args = [
    '--noEmit',
    '--strict',
    '--skipLibCheck',
    '--types',
    'node',
    '--typeRoots',
    join(ROOT, 'node_modules/@types'),
    '--module',
    'node16',
    '--moduleResolution',
    'node16',
    '--target',
    'es2022',
    'types.ts',
  ];
  await expect(run(process.execPath, [TSC, ...args], { cwd: consumer }).then(() => 'compiled')).resolves.toBe('compiled');
});

test('a tool defined with the lowest zod validates its input and offers its JSON schema', async () => {
  const script = `
    const { z } = require('zod/v4');
    const { defineTool } = require('temporal-tool-checkpoint');
    const { toolSpecFromZod } = require('temporal-tool-checkpoint/model');
    const tool = defineTool({ name: 'charge', revision: 'v1', description: 'charge', input: z.object({ orderId: z.string() }), async execute(input) { return { output: input }; } });
    console.log(JSON.stringify({ zod: require('zod/package.json').version, ok: tool.input.safeParse({ orderId: 'o-1' }).success, bad: tool.input.safeParse({ orderId: 1 }).success, spec: toolSpecFromZod(tool.input, 'charge') }));`;
  const { stdout } = await run(process.execPath, ['-e', script], { cwd: consumer });
  const out = JSON.parse(stdout) as { zod: string; ok: boolean; bad: boolean; spec: { inputSchema: unknown } };
  expect(out.zod).toBe(LOWEST_ZOD);
  expect([out.ok, out.bad]).toEqual([true, false]);
  expect(out.spec.inputSchema).toEqual({ type: 'object', properties: { orderId: { type: 'string' } }, required: ['orderId'], additionalProperties: false });
});

test("with zod 3.25.76, a zod 3 schema (its 'zod' import) is refused naming the zod/v4 import, and ttc worker builds its tools and models", async () => {
  const script = `
    const { z } = require('zod');
    const { defineTool } = require('temporal-tool-checkpoint');
    try { defineTool({ name: 'charge', revision: 'v1', input: z.object({ orderId: z.string() }), async execute() { return { output: null }; } }); console.log('accepted'); }
    catch (e) { console.log(e.code + ' ' + e.message); }`;
  const { stdout } = await run(process.execPath, ['-e', script], { cwd: consumer });
  expect(stdout.trim()).toMatch(/^INVALID_ARGUMENT .*import \{ z \} from 'zod\/v4'/);
  // The shipped demo tools and the scripted model are built under zod 3.25.76; the worker then stops at the store, whose driver
  // this project does not have (built after the tools and models: a schema that breaks them would fail first).
  const env: NodeJS.ProcessEnv = { ...process.env, TEMPORAL_ADDRESS: '127.0.0.1:9', TTC_PROVIDER_URL: 'http://127.0.0.1:9', TTC_STORE_URL: 'sqlite::memory:' };
  const worker = await run(process.execPath, [join(consumer, 'node_modules/temporal-tool-checkpoint/dist/src/cli/index.js'), 'worker', '--models', 'scripted'], {
    cwd: consumer,
    env,
  }).then(
    () => 'started',
    (error: { stderr?: string }) => error.stderr ?? '',
  );
  expect(worker).toMatch(/^INVALID_CONFIG: the SQLite store needs better-sqlite3/);
});

test('without @temporalio/testing (an optional peer) the testing entry loads, and what needs it fails with INVALID_CONFIG naming the install line', async () => {
  const script = `
    const testing = require('temporal-tool-checkpoint/testing');
    Promise.all([testing.runCrashAndRetry({}), testing.createTimeSkippingEnv()].map((p) => p.then(() => 'ran', (e) => e.code + ' ' + e.message)))
      .then((r) => console.log(JSON.stringify({ exports: Object.keys(testing).length, r })));`;
  const { stdout } = await run(process.execPath, ['-e', script], { cwd: consumer });
  const out = JSON.parse(stdout) as { exports: number; r: string[] };
  expect(out.exports).toBeGreaterThan(0);
  expect(out.r).toEqual([expect.stringMatching(/^INVALID_CONFIG .*npm install @temporalio\/testing/), expect.stringMatching(/^INVALID_CONFIG .*npm install @temporalio\/testing/)]);
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

  test('at the lowest Temporal version, a plain activity fenced by the plugin survives a SIGKILL after the effect: one effect, its result delivered', async () => {
    const { firstWorker, result, ledger } = await runEmailCrashScenario(consumer, dir, server.address, db.url);
    expect(firstWorker).toBe('SIGKILL');
    expect(ledger).toHaveLength(1);
    expect(result.email).toEqual({ messageId: ledger[0]!.messageId });
  });
});
