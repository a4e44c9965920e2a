/**
 * Configured the Temporal way against a real dev server: a TOML profile alone points
 * the `ttc` command line and a client at the server and namespace; a profile with an API key
 * and a server CA reaches the server over real TLS (a TLS-terminating proxy in front of the dev
 * server, with a throwaway CA made by `openssl`); an API key turns TLS on for real.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect as netConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer as createTlsServer, type Server as TlsServer } from 'node:tls';
import { NativeConnection } from '@temporalio/worker';
import { isCheckpointError } from '../../src/checkpoint/errors';
import { connectClient } from '../../src/client';
import { resolveConfig, temporalConnectionOptions } from '../../src/config';
import { startDevServer, type DevServer } from '../../src/dev/dev-server';
import { runCli } from '../helpers/cli';
import { installQuietTemporalRuntime } from '../helpers/temporal';

installQuietTemporalRuntime();

const NAMESPACE = 'envconfig-ns';
let server: DevServer;
let proxy: TlsServer;
let proxyAddress: string;
let dir: string;
let toml: string;
/** ALPN protocol of every TLS session the proxy accepted. */
const sessions: (string | false | null)[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ttc-envconfig-it-'));
  makeCertificates(dir);
  server = await startDevServer({ namespace: NAMESPACE });
  proxy = createTlsServer({ key: readFileSync(join(dir, 'server.key')), cert: readFileSync(join(dir, 'server.pem')), ALPNProtocols: ['h2'] }, (socket) => {
    sessions.push(socket.alpnProtocol);
    const upstream = netConnect(server.port, '127.0.0.1');
    socket.pipe(upstream).pipe(socket);
    socket.on('error', () => upstream.destroy());
    upstream.on('error', () => socket.destroy());
  });
  await new Promise<void>((listening) => proxy.listen(0, '127.0.0.1', listening));
  proxyAddress = `127.0.0.1:${(proxy.address() as { port: number }).port}`;
  toml = join(dir, 'temporal.toml');
  writeFileSync(
    toml,
    [
      '[profile.local]',
      `address = "${server.address}"`,
      `namespace = "${NAMESPACE}"`,
      '',
      '[profile.cloudish]',
      `address = "${proxyAddress}"`,
      `namespace = "${NAMESPACE}"`,
      'api_key = "test-api-key"',
      '[profile.cloudish.tls]',
      `server_ca_cert_path = ${JSON.stringify(join(dir, 'ca.pem'))}`,
      'server_name = "localhost"',
      '',
      '[profile.untrusted]',
      `address = "${proxyAddress}"`,
      `namespace = "${NAMESPACE}"`,
      'api_key = "test-api-key"',
    ].join('\n'),
  );
}, 120_000);

afterAll(async () => {
  await new Promise((closed) => proxy?.close(closed));
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** This process's environment without any Temporal connection variable, plus `env`. */
function envWith(env: Record<string, string>): NodeJS.ProcessEnv {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('TEMPORAL_') || k.endsWith('_PATH')));
  return { ...clean, ...env };
}

it('`ttc show` reaches the server and namespace a TOML profile names (nothing else set)', async () => {
  const out = await runCli(['show', 'no-such-run'], envWith({ TEMPORAL_CONFIG_FILE: toml, TEMPORAL_PROFILE: 'local' }));
  // Answered by the server, in the profile's namespace: neither TEMPORAL_UNAVAILABLE nor a namespace error.
  expect(out.stderr).toMatch(/^INVALID_ARGUMENT: no run with workflow id "no-such-run" in namespace envconfig-ns/m);
  expect(out.code).toBe(1);
});

it('a client connected through a profile starts and finds a workflow in the profile namespace', async () => {
  const config = resolveConfig({}, envWith({ TEMPORAL_CONFIG_FILE: toml, TEMPORAL_PROFILE: 'local' }));
  const { client, close } = await connectClient(config, { payloadCodec: null });
  try {
    const handle = await client.workflow.start('noWorkerWorkflow', { taskQueue: 'envconfig-nobody', workflowId: `envconfig-${Date.now()}` });
    const described = await handle.describe();
    expect(described.status.name).toBe('RUNNING');
    const { namespaceInfo } = await client.workflowService.describeNamespace({ namespace: NAMESPACE });
    expect(namespaceInfo?.name).toBe(NAMESPACE);
    await handle.terminate('test done');
  } finally {
    await close();
  }
});

it('a profile with an API key and a server CA reaches the server over TLS, client and worker connection alike', async () => {
  const config = resolveConfig({}, envWith({ TEMPORAL_CONFIG_FILE: toml, TEMPORAL_PROFILE: 'cloudish' }));
  expect(config.temporal.apiKey).toBe('test-api-key');
  const before = sessions.length;
  const { client, close } = await connectClient(config, { payloadCodec: null });
  try {
    const { namespaceInfo } = await client.workflowService.describeNamespace({ namespace: NAMESPACE });
    expect(namespaceInfo?.name).toBe(NAMESPACE);
  } finally {
    await close();
  }
  const native = await NativeConnection.connect(temporalConnectionOptions(config.temporal));
  try {
    const { namespaceInfo } = await native.workflowService.describeNamespace({ namespace: NAMESPACE });
    expect(namespaceInfo?.name).toBe(NAMESPACE);
  } finally {
    await native.close();
  }
  expect(sessions.slice(before).length).toBeGreaterThanOrEqual(2);
  expect(sessions.slice(before).every((alpn) => alpn === 'h2')).toBe(true);
});

it('TLS is really verified: the same proxy without the profile CA is refused (TEMPORAL_UNAVAILABLE)', async () => {
  const config = resolveConfig({}, envWith({ TEMPORAL_CONFIG_FILE: toml, TEMPORAL_PROFILE: 'untrusted' }));
  const error = await connectClient(config, { payloadCodec: null }).then(
    async ({ client, close }) => {
      await client.workflowService.describeNamespace({ namespace: NAMESPACE }).finally(close);
      return null;
    },
    (e: unknown) => e,
  );
  expect(isCheckpointError(error, 'TEMPORAL_UNAVAILABLE')).toBe(true);
  expect((error as Error).message).toContain(`(TEMPORAL_ADDRESS or TOML profile "untrusted" in ${toml}; TLS on)`);
});

it('TEMPORAL_API_KEY turns TLS on: the plaintext dev server cannot be reached with it', async () => {
  const plain = resolveConfig({}, envWith({ TEMPORAL_ADDRESS: server.address, TEMPORAL_NAMESPACE: NAMESPACE }));
  const { close } = await connectClient(plain, { payloadCodec: null });
  await close();
  const withKey = resolveConfig({}, envWith({ TEMPORAL_ADDRESS: server.address, TEMPORAL_NAMESPACE: NAMESPACE, TEMPORAL_API_KEY: 'k' }));
  const error = await connectClient(withKey, { payloadCodec: null }).then(
    async ({ close: closeIt }) => {
      await closeIt();
      return null;
    },
    (e: unknown) => e,
  );
  expect(isCheckpointError(error, 'TEMPORAL_UNAVAILABLE')).toBe(true);
  expect((error as Error).message).toContain(`cannot reach the Temporal server at ${server.address} (TEMPORAL_ADDRESS; TLS on)`);
});

/** A throwaway CA (`ca.pem`) and a server certificate for localhost / 127.0.0.1 it signed (`server.pem`, `server.key`). */
function makeCertificates(into: string): void {
  const ssl = (...args: string[]): void => {
    execFileSync('openssl', args, { cwd: into, stdio: 'ignore' });
  };
  writeFileSync(join(into, 'ext.cnf'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n');
  ssl('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '1', '-subj', '/CN=ttc-test-ca');
  ssl('req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=localhost');
  ssl('x509', '-req', '-in', 'server.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server.pem', '-days', '1', '-extfile', 'ext.cnf');
}
