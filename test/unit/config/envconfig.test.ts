/**
 * Connection settings configured the Temporal way: `@temporalio/envconfig`'s standard
 * TEMPORAL_* variables and TOML profiles, an API key turning TLS on, and the old TLS names refused.
 * Every case passes its own environment (no HOME), so no user's ~/.config/temporalio file is read.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isCheckpointError } from '../../../src/checkpoint/errors';
import { resolveConfig, temporalConnectionOptions } from '../../../src/config';

let dir: string;
let toml: string;
let pem: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'ttc-envconfig-'));
  pem = join(dir, 'ca.pem');
  writeFileSync(pem, '-----BEGIN CERTIFICATE-----\nnot checked here\n-----END CERTIFICATE-----\n');
  toml = join(dir, 'temporal.toml');
  writeFileSync(
    toml,
    [
      '[profile.default]',
      'address = "default.example:7233"',
      '',
      '[profile.staging]',
      'address = "staging.example:7233"',
      'namespace = "staging-ns"',
      '',
      '[profile.cloud]',
      'address = "acct.tmprl.cloud:7233"',
      'namespace = "ns.acct"',
      'api_key = "from-profile"',
      '',
      '[profile.mtls]',
      'address = "mtls.example:7233"',
      '[profile.mtls.tls]',
      `server_ca_cert_path = ${JSON.stringify(pem)}`,
      'server_name = "temporal.internal"',
    ].join('\n'),
  );
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The INVALID_CONFIG error `fn` throws (fails the test when it throws nothing or something else). */
function configError(fn: () => unknown): { message: string; details: Record<string, unknown> } {
  try {
    fn();
  } catch (error) {
    expect(isCheckpointError(error, 'INVALID_CONFIG')).toBe(true);
    return error as { message: string; details: Record<string, unknown> };
  }
  throw new Error('expected INVALID_CONFIG');
}

describe('TOML profiles (TEMPORAL_CONFIG_FILE, TEMPORAL_PROFILE)', () => {
  it('TEMPORAL_PROFILE selects the profile: its address and namespace, and the config names it', () => {
    const { temporal } = resolveConfig({}, { TEMPORAL_CONFIG_FILE: toml, TEMPORAL_PROFILE: 'staging' });
    expect(temporal).toMatchObject({ address: 'staging.example:7233', namespace: 'staging-ns', apiKey: null, tls: null, profile: { name: 'staging', file: toml } });
  });

  it('without TEMPORAL_PROFILE the "default" profile applies; unset fields keep temporal.config.ts values', () => {
    const { temporal } = resolveConfig({ temporal: { address: 'file.example:7233', namespace: 'from-file', taskQueue: 'q' } }, { TEMPORAL_CONFIG_FILE: toml });
    expect(temporal).toMatchObject({ address: 'default.example:7233', namespace: 'from-file', taskQueue: 'q', profile: { name: 'default' } });
  });

  it('temporal.config.ts may name the profile; TEMPORAL_PROFILE wins over it', () => {
    expect(resolveConfig({ temporal: { profile: 'staging', configFile: toml } }, {}).temporal.address).toBe('staging.example:7233');
    expect(resolveConfig({ temporal: { profile: 'staging', configFile: toml } }, { TEMPORAL_PROFILE: 'cloud' }).temporal.address).toBe('acct.tmprl.cloud:7233');
  });

  it('TEMPORAL_ADDRESS and TEMPORAL_NAMESPACE override the profile', () => {
    const { temporal } = resolveConfig({}, { TEMPORAL_CONFIG_FILE: toml, TEMPORAL_PROFILE: 'staging', TEMPORAL_ADDRESS: 'env.example:7000', TEMPORAL_NAMESPACE: 'env-ns' });
    expect(temporal).toMatchObject({ address: 'env.example:7000', namespace: 'env-ns' });
  });

  it('a file without a "default" profile, and no TEMPORAL_PROFILE: no profile is in use, temporal.config.ts applies', () => {
    const noDefault = join(dir, 'no-default.toml');
    writeFileSync(noDefault, '[profile.other]\naddress = "other.example:7233"\n');
    expect(resolveConfig({ temporal: { address: 'file.example:7233' } }, { TEMPORAL_CONFIG_FILE: noDefault }).temporal).toMatchObject({
      address: 'file.example:7233',
      profile: null,
    });
  });

  it('a profile the file lacks is INVALID_CONFIG naming TEMPORAL_PROFILE', () => {
    const error = configError(() => resolveConfig({}, { TEMPORAL_CONFIG_FILE: toml, TEMPORAL_PROFILE: 'prod' }));
    expect(error.details).toEqual({ field: 'TEMPORAL_PROFILE' });
    expect(error.message).toMatch(/Profile 'prod' not found/);
  });

  it('a TEMPORAL_CONFIG_FILE that does not exist is INVALID_CONFIG naming it', () => {
    expect(configError(() => resolveConfig({}, { TEMPORAL_CONFIG_FILE: join(dir, 'missing.toml') })).details).toEqual({ field: 'TEMPORAL_CONFIG_FILE' });
  });

  it('a malformed address in a profile is INVALID_CONFIG naming the profile and file', () => {
    const bad = join(dir, 'bad.toml');
    writeFileSync(bad, '[profile.default]\naddress = "no-port"\n');
    const error = configError(() => resolveConfig({}, { TEMPORAL_CONFIG_FILE: bad }));
    expect(error.message).toContain(`address of TOML profile "default" (${bad}) must be host:port`);
  });

  it('with no file, no profile and no variables, the defaults apply', () => {
    expect(resolveConfig({}, {}).temporal).toEqual({
      address: '127.0.0.1:7233',
      namespace: 'default',
      taskQueue: 'agent-tools',
      apiKey: null,
      tls: null,
      grpcMeta: {},
      profile: null,
    });
  });
});

describe('an API key turns TLS on (Temporal Cloud)', () => {
  it('TEMPORAL_API_KEY: the connection options carry the key and TLS with the system roots', () => {
    const { temporal } = resolveConfig({}, { TEMPORAL_ADDRESS: 'acct.tmprl.cloud:7233', TEMPORAL_API_KEY: 'secret-key' });
    expect(temporal.tls).toEqual({});
    const options = temporalConnectionOptions(temporal);
    expect(options).toMatchObject({ address: 'acct.tmprl.cloud:7233', apiKey: 'secret-key' });
    expect(options.tls).toEqual({ serverNameOverride: undefined, serverRootCACertificate: undefined, clientCertPair: undefined });
  });

  it("a profile's api_key turns TLS on too; TEMPORAL_API_KEY overrides it", () => {
    const options = temporalConnectionOptions(resolveConfig({}, { TEMPORAL_CONFIG_FILE: toml, TEMPORAL_PROFILE: 'cloud', TEMPORAL_API_KEY: 'from-env' }).temporal);
    expect(options.apiKey).toBe('from-env');
    expect(typeof options.tls).toBe('object');
  });

  it('TEMPORAL_TLS=false keeps TLS off even with an API key', () => {
    const options = temporalConnectionOptions(resolveConfig({}, { TEMPORAL_API_KEY: 'k', TEMPORAL_TLS: 'false' }).temporal);
    expect(options).toMatchObject({ apiKey: 'k', tls: false });
  });

  it('TEMPORAL_GRPC_META_* headers reach the connection metadata', () => {
    expect(temporalConnectionOptions(resolveConfig({}, { TEMPORAL_GRPC_META_X_TENANT: 'acme' }).temporal).metadata).toEqual({ 'x-tenant': 'acme' });
  });

  it('without an API key or TLS settings the connection is plaintext and carries no key', () => {
    const options = temporalConnectionOptions(resolveConfig({}, {}).temporal);
    expect(options).toEqual({ address: '127.0.0.1:7233', tls: false });
  });
});

describe('TLS from the standard names', () => {
  it("a profile's server CA and server name reach the connection options (the file read)", () => {
    const options = temporalConnectionOptions(resolveConfig({}, { TEMPORAL_CONFIG_FILE: toml, TEMPORAL_PROFILE: 'mtls' }).temporal);
    expect(options.tls).toMatchObject({ serverNameOverride: 'temporal.internal' });
    expect(Buffer.from((options.tls as { serverRootCACertificate: Uint8Array }).serverRootCACertificate).toString()).toContain('not checked here');
  });

  it('TEMPORAL_TLS_CLIENT_CERT_PATH without TEMPORAL_TLS_CLIENT_KEY_PATH is INVALID_CONFIG naming the missing one', () => {
    expect(configError(() => resolveConfig({}, { TEMPORAL_TLS_CLIENT_CERT_PATH: pem })).details).toEqual({ field: 'TEMPORAL_TLS_CLIENT_KEY_PATH' });
  });

  it('a TEMPORAL_TLS_SERVER_CA_CERT_PATH that does not exist is INVALID_CONFIG naming it', () => {
    expect(configError(() => resolveConfig({}, { TEMPORAL_TLS_SERVER_CA_CERT_PATH: join(dir, 'nope.pem') })).details).toEqual({ field: 'TEMPORAL_TLS_SERVER_CA_CERT_PATH' });
  });

  it('TEMPORAL_TLS must be true or false', () => {
    expect(configError(() => resolveConfig({}, { TEMPORAL_TLS: 'yes' })).details).toEqual({ field: 'TEMPORAL_TLS' });
  });
});

describe('the old TLS names are refused, naming the new ones', () => {
  it.each([
    ['TEMPORAL_TLS_CERT_PATH', 'TEMPORAL_TLS_CLIENT_CERT_PATH'],
    ['TEMPORAL_TLS_KEY_PATH', 'TEMPORAL_TLS_CLIENT_KEY_PATH'],
    ['TEMPORAL_TLS_CA_PATH', 'TEMPORAL_TLS_SERVER_CA_CERT_PATH'],
  ])('%s: INVALID_CONFIG, use %s', (old, renamed) => {
    const error = configError(() => resolveConfig({}, { [old]: pem }));
    expect(error.details).toEqual({ field: old, replacement: renamed });
    expect(error.message).toContain(`${old} is no longer read: use ${renamed}`);
  });

  it('the old temporal.config.ts tls keys are refused too', () => {
    const error = configError(() => resolveConfig({ temporal: { tls: { certPath: pem } as never } }, {}));
    expect(error.details).toEqual({ field: 'temporal.tls.certPath', replacement: 'temporal.tls.clientCertPath' });
  });
});
