import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { DevServerStartError, startDevServer } from '../../src/dev/dev-server';
import {
  TemporalBinaryNotFoundError,
  findProjectRoot,
  temporalCliPath,
  temporalTestServerPath,
} from '../../src/dev/temporal-binaries';

describe('temporal binary resolution', () => {
  const saved = { cli: process.env.TEMPORAL_CLI_PATH, ts: process.env.TEMPORAL_TEST_SERVER_PATH };
  afterEach(() => {
    for (const [k, v] of [
      ['TEMPORAL_CLI_PATH', saved.cli],
      ['TEMPORAL_TEST_SERVER_PATH', saved.ts],
    ] as const) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });

  it('finds the project root and the .tools binaries', () => {
    delete process.env.TEMPORAL_CLI_PATH;
    delete process.env.TEMPORAL_TEST_SERVER_PATH;
    const root = findProjectRoot();
    expect(fs.existsSync(path.join(root, 'package.json'))).toBe(true);
    expect(temporalCliPath()).toBe(path.join(root, '.tools', 'bin', 'temporal'));
    expect(temporalTestServerPath()).toBe(path.join(root, '.tools', 'bin', 'temporal-test-server'));
  });

  it('prefers the environment variables', () => {
    const cli = temporalCliPath();
    process.env.TEMPORAL_TEST_SERVER_PATH = cli; // any executable will do for resolution
    expect(temporalTestServerPath()).toBe(cli);
  });

  it('rejects an environment variable that is not an executable file', () => {
    process.env.TEMPORAL_CLI_PATH = path.join(os.tmpdir(), 'no-such-temporal-binary');
    expect(() => temporalCliPath()).toThrow(TemporalBinaryNotFoundError);
    expect(() => temporalCliPath()).toThrow(/TEMPORAL_CLI_PATH/);
  });

  it('tells the user to run setup:temporal when nothing is installed', () => {
    delete process.env.TEMPORAL_CLI_PATH;
    const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'ttc-empty-'));
    try {
      expect(() => temporalCliPath(empty)).toThrow(/npm run setup:temporal/);
    } finally {
      fs.rmSync(empty, { recursive: true, force: true });
    }
  });
});

describe('startDevServer failures', () => {
  it('reports an early exit with the server output (port taken)', async () => {
    const sockets = new Set<net.Socket>();
    const blocker = net.createServer((sock) => {
      sockets.add(sock);
      sock.on('close', () => sockets.delete(sock));
    });
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', () => r()));
    const port = (blocker.address() as net.AddressInfo).port;
    try {
      const t0 = Date.now();
      const err: unknown = await startDevServer({ port, readyTimeoutMs: 30_000 }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(DevServerStartError);
      expect((err as Error).message).toMatch(/exited early[\s\S]*address already in use/);
      expect(Date.now() - t0).toBeLessThan(10_000);
    } finally {
      for (const sock of sockets) sock.destroy();
      await new Promise<void>((r) => blocker.close(() => r()));
    }
  });
});
