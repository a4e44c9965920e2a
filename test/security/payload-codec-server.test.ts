/**
 * Codec server: Temporal's codec server protocol (POST /encode and /decode with `{ payloads: [{
 * metadata: { k: base64 }, data: base64 }] }`) over the payload codec, for the Temporal UI and
 * `temporal --codec-endpoint`. Loopback by default, CORS only for configured origins, X-Namespace
 * required and checked, JSON only, bounded; `ttc codec-server` refuses to start without a key.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { createPayloadCodec } from '../../src/codec/payload-codec';
import { parseCorsOrigin, startCodecServer, type RunningCodecServer } from '../../src/codec/codec-server';
import { payloadsToJson } from '../../src/codec/json-payloads';
import { onFreePort } from '../helpers/free-port';
import { isCheckpointError } from '../../src/checkpoint/errors';

jest.setTimeout(60_000);

const ROOT = join(__dirname, '../..');
const UI = 'http://localhost:8233';
const key = randomBytes(32);
const codec = createPayloadCodec({ keyId: 'srv-1', key });
const SECRET = { receipt: 'rcpt_codec_server_secret_77' };

let server: RunningCodecServer;
beforeAll(async () => {
  server = await startCodecServer({ codec, port: 0, corsOrigins: [UI], namespace: 'ns-a', maxBodyBytes: 64 * 1024 });
});
afterAll(async () => server?.close());

async function post(path: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; headers: Headers; body: any }> {
  // Every request names its namespace (the server requires X-Namespace), unless a test says otherwise.
  const response = await fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'X-Namespace': 'ns-a', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text === '' ? null : JSON.parse(text) };
}

const fromJson = (p: { metadata: Record<string, string>; data: string }): Payload => ({
  metadata: Object.fromEntries(Object.entries(p.metadata).map(([k, v]) => [k, Buffer.from(v, 'base64')])),
  data: Buffer.from(p.data, 'base64'),
});

describe('the codec server', () => {
  it('listens on 127.0.0.1 and decodes what the codec encoded (POST /decode), and encodes for the UI (POST /encode)', async () => {
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const encrypted = await codec.encode([defaultPayloadConverter.toPayload(SECRET)]);
    const decoded = await post('/decode', payloadsToJson(encrypted), { 'X-Namespace': 'ns-a' });
    expect(decoded.status).toBe(200);
    expect(Buffer.from(decoded.body.payloads[0].metadata.encoding, 'base64').toString()).toBe('json/plain');
    expect(defaultPayloadConverter.fromPayload(fromJson(decoded.body.payloads[0]))).toEqual(SECRET);

    const encoded = await post('/encode', payloadsToJson([defaultPayloadConverter.toPayload(SECRET)]));
    expect(encoded.status).toBe(200);
    expect(JSON.stringify(encoded.body)).not.toContain(Buffer.from(JSON.stringify(SECRET)).toString('base64').slice(0, 20));
    expect(Buffer.from(encoded.body.payloads[0].metadata['encryption-key-id'], 'base64').toString()).toBe('srv-1');
    // The server encodes for the namespace the request names: the payload is bound to ns-a.
    expect(defaultPayloadConverter.fromPayload((await codec.forNamespace('ns-a').decode([fromJson(encoded.body.payloads[0])]))[0]!)).toEqual(SECRET);
  });

  it('answers the CORS preflight of the configured UI origin only, and refuses other origins and namespaces (403)', async () => {
    const preflight = await fetch(`${server.url}/decode`, {
      method: 'OPTIONS',
      headers: { Origin: UI, 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'content-type,x-namespace' },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe(UI);
    expect(preflight.headers.get('access-control-allow-headers')?.toLowerCase()).toContain('x-namespace');
    const fromUi = await post('/decode', { payloads: [] }, { Origin: UI, 'X-Namespace': 'ns-a' });
    expect([fromUi.status, fromUi.headers.get('access-control-allow-origin'), fromUi.body]).toEqual([200, UI, { payloads: [] }]);

    const evilPreflight = await fetch(`${server.url}/decode`, { method: 'OPTIONS', headers: { Origin: 'http://evil.example' } });
    expect([evilPreflight.status, evilPreflight.headers.get('access-control-allow-origin')]).toEqual([403, null]);
    const encrypted = payloadsToJson(await codec.encode([defaultPayloadConverter.toPayload(SECRET)]));
    const evil = await post('/decode', encrypted, { Origin: 'http://evil.example' });
    expect(evil.status).toBe(403);
    expect(JSON.stringify(evil.body)).not.toContain('rcpt_');
    const otherNamespace = await post('/decode', encrypted, { 'X-Namespace': 'ns-b' });
    expect(otherNamespace.status).toBe(403);
    expect(JSON.stringify(otherNamespace.body)).not.toContain('rcpt_');
  });

  it('refuses bodies that are not JSON payloads (415, 400 naming the path), oversized bodies (413), other paths and methods', async () => {
    const plain = await fetch(`${server.url}/decode`, { method: 'POST', headers: { 'Content-Type': 'text/plain', 'X-Namespace': 'ns-a' }, body: '{"payloads":[]}' });
    expect(plain.status).toBe(415);
    expect((await post('/decode', '{not json')).status).toBe(400);
    const badData = await post('/decode', { payloads: [{ metadata: {}, data: 'not base64!' }] });
    expect([badData.status, badData.body.code]).toEqual([400, 'INVALID_ARGUMENT']);
    expect(badData.body.error).toContain('payloads.0.data');
    expect((await post('/decode', { items: [] })).status).toBe(400);
    expect((await post('/decode', { payloads: [{ data: 'A'.repeat(70 * 1024) }] })).status).toBe(413);
    expect((await post('/keys', { payloads: [] })).status).toBe(404);
    expect((await fetch(`${server.url}/decode`)).status).toBe(405);
  });

  it('a payload that does not decrypt is a 400 DECRYPTION_FAILED naming the key id, never the key', async () => {
    const other = createPayloadCodec({ keyId: 'elsewhere', key: randomBytes(32) });
    const unknown = await post('/decode', payloadsToJson(await other.encode([defaultPayloadConverter.toPayload(SECRET)])));
    expect([unknown.status, unknown.body.code]).toEqual([400, 'DECRYPTION_FAILED']);
    expect(unknown.body.error).toContain('"elsewhere"');
    const [good] = await codec.encode([defaultPayloadConverter.toPayload(SECRET)]);
    const data = Buffer.from(good!.data!);
    data[20] = data[20]! ^ 0xff;
    const tampered = await post('/decode', payloadsToJson([{ ...good, data }]));
    expect([tampered.status, tampered.body.code]).toEqual([400, 'DECRYPTION_FAILED']);
    for (const body of [unknown.body, tampered.body]) for (const form of ['hex', 'base64'] as const) expect(JSON.stringify(body)).not.toContain(key.toString(form));
  });

  it('--cors-origin takes an origin only', () => {
    expect(parseCorsOrigin('http://localhost:8233/')).toBe(UI);
    for (const bad of ['localhost:8233', 'http://localhost:8233/ui', 'ftp://x', 'http://u:p@host', '*']) {
      let refused = false;
      try {
        parseCorsOrigin(bad);
      } catch (error) {
        refused = isCheckpointError(error, 'INVALID_ARGUMENT');
      }
      expect([bad, refused]).toEqual([bad, true]);
    }
  });

  it('`ttc codec-server` refuses to start without TTC_PAYLOAD_CODEC_KEY, and with one serves /decode on 127.0.0.1:--port', async () => {
    const env: NodeJS.ProcessEnv = { ...process.env };
    for (const name of ['TTC_PAYLOAD_CODEC_KEY', 'TTC_PAYLOAD_CODEC_KEY_ID', 'TTC_PAYLOAD_CODEC_KEYS']) delete env[name];
    const refused = await runCli(['codec-server'], env, () => null);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('INVALID_CONFIG: TTC_PAYLOAD_CODEC_KEY is not set');

    const encrypted = payloadsToJson(await codec.encode([defaultPayloadConverter.toPayload(SECRET)]));
    let decoded: any = null;
    const served = await onFreePort(
      (port) =>
        runCli(
          ['codec-server', '--port', String(port)],
          { ...env, TEMPORAL_NAMESPACE: 'ns-cli', TTC_PAYLOAD_CODEC_KEY: `hex:${key.toString('hex')}`, TTC_PAYLOAD_CODEC_KEY_ID: 'srv-1' },
          (stdout) => {
            if (!stdout.includes(`codec server on http://127.0.0.1:${port}`)) return null;
            return (async () => {
              const response = await fetch(`http://127.0.0.1:${port}/decode`, {
                method: 'POST',
                headers: { 'Content-Type': 'application/json', 'X-Namespace': 'ns-cli' },
                body: JSON.stringify(encrypted),
              });
              decoded = await response.json();
            })();
          },
        ),
      (r) => r.stderr,
    );
    expect(served.stdout).toContain('key ids srv-1');
    expect(served.code).toBe(0);
    expect(defaultPayloadConverter.fromPayload(fromJson(decoded.payloads[0]))).toEqual(SECRET);
  });
});

/** Runs the CLI; once `whenReady(stdout)` returns a promise (the server is up), awaits it and SIGTERMs the process. */
function runCli(args: string[], env: NodeJS.ProcessEnv, whenReady: (stdout: string) => Promise<void> | null): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(join(ROOT, 'node_modules/.bin/tsx'), ['src/cli/index.ts', ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let started = false;
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const work = started ? null : whenReady(stdout);
      if (work === null) return;
      started = true;
      void work.catch(reject).finally(() => child.kill('SIGTERM'));
    });
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}
