/**
 * A long-running command (`ttc dev`, `ttc codec-server`, `ttc console`) stops cleanly on SIGTERM
 * even when the signal comes the moment it prints that it is ready (a supervisor or a script that
 * stops it on reading that line): its handlers are installed before the line
 * (src/cli/stop-signals.ts). test/fixtures/signal-on-ready.cjs sends the signal from inside the
 * process at the instant of the write, so the earliest signal is what every run tests.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startDevServer, type DevServer } from '../../src/dev/dev-server';
import { onFreePort } from '../helpers/free-port';
import { ROOT } from '../helpers/cli';

jest.setTimeout(120_000);

const PRELOAD = join(__dirname, '../fixtures/signal-on-ready.cjs');

/** Runs `ttc <args>` with the preload; resolves with its exit code, or the signal that ended it, and its output. */
function runUntilSignalled(args: readonly string[], env: NodeJS.ProcessEnv, marker: string): Promise<{ exit: number | string | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--require', require.resolve('tsx/cjs'), '--require', PRELOAD, join(ROOT, 'src/cli/index.ts'), ...args], {
      cwd: ROOT,
      env: { ...env, NODE_OPTIONS: '', TTC_READY_MARKER: marker },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 90_000);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ exit: code ?? signal, output });
    });
  });
}

describe('long-running commands stop cleanly on a signal sent as they print that they are ready', () => {
  let dir: string;
  let server: DevServer | undefined;
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of ['TTC_PAYLOAD_CODEC_KEY', 'TTC_PAYLOAD_CODEC_KEY_ID', 'TTC_PAYLOAD_CODEC_KEYS', 'TTC_TOOLS', 'TTC_REQUIRE_APPROVAL', 'TTC_TENANTS']) delete env[name];

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-stop-signals-'));
    env.TTC_STORE_URL = `sqlite:${join(dir, 'checkpoints.db')}`;
  });
  afterAll(async () => {
    await server?.stop({ signal: 'SIGKILL' });
    rmSync(dir, { recursive: true, force: true });
  });

  it('ttc codec-server', async () => {
    const result = await onFreePort(
      (port) =>
        runUntilSignalled(
          ['codec-server', '--port', String(port)],
          { ...env, TTC_PAYLOAD_CODEC_KEY: `hex:${randomBytes(32).toString('hex')}`, TTC_PAYLOAD_CODEC_KEY_ID: 'k1' },
          'codec server on',
        ),
      (r) => r.output,
    );
    expect(result).toEqual({ exit: 0, output: expect.stringContaining('codec server on') });
  });

  it('ttc dev', async () => {
    let address = '';
    const result = await onFreePort(
      (port, attempt) => {
        address = `127.0.0.1:${port}`;
        return runUntilSignalled(['dev', '--db', join(dir, `temporal-${attempt}.db`)], { ...env, TEMPORAL_ADDRESS: address }, 'Temporal dev server on');
      },
      (r) => r.output,
    );
    expect(result).toEqual({ exit: 0, output: expect.stringContaining(`Temporal dev server on ${address}`) });
  });

  it('ttc console', async () => {
    server = await startDevServer();
    const result = await runUntilSignalled(
      ['console', '--port', '0'],
      { ...env, TEMPORAL_ADDRESS: server.address, TEMPORAL_NAMESPACE: server.namespace, TTC_CONSOLE_TOKEN: randomBytes(24).toString('hex') },
      'console for namespace',
    );
    expect(result).toEqual({ exit: 0, output: expect.stringContaining('console for namespace') });
  });
});
