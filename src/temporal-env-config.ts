/**
 * Temporal connection settings, configured the Temporal way (docs/protocol.md#worker-plugin): the
 * address, namespace, API key, TLS and gRPC metadata come from `@temporalio/envconfig`, that is the
 * standard `TEMPORAL_*` environment variables over a TOML profile (`TEMPORAL_PROFILE`,
 * `TEMPORAL_CONFIG_FILE`, default `~/.config/temporalio/temporal.toml`), over the `temporal`
 * section of `temporal.config.ts`. Our own settings keep their `TTC_*` names; the task queue keeps
 * `TEMPORAL_TASK_QUEUE` (config.ts). Node-only (reads files); never imported by workflows.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { loadClientConfig, loadClientConfigProfile, toClientOptions, type ClientConfigProfile, type ClientConfigTLS, type ConfigDataSource } from '@temporalio/envconfig';
import type { NativeConnectionOptions } from '@temporalio/worker';
import { CheckpointError } from './checkpoint/errors';

/**
 * TLS in `temporal.config.ts`: `true` for server-only TLS with the system roots, `false` for
 * none, or PEM file paths (mTLS needs both client paths). The same names as the standard
 * variables: `clientCertPath` is `TEMPORAL_TLS_CLIENT_CERT_PATH`, and so on.
 */
export type TlsInput = { clientCertPath?: string; clientKeyPath?: string; serverCaCertPath?: string; serverName?: string } | boolean;

/** The connection part of the `temporal` section of `temporal.config.ts` (or of the overrides). */
export interface TemporalConnectionInput {
  /** @default '127.0.0.1:7233' (env TEMPORAL_ADDRESS, or the TOML profile's `address`) */
  address?: string;
  /** @default 'default' (env TEMPORAL_NAMESPACE, or the TOML profile's `namespace`) */
  namespace?: string;
  /** TLS (env TEMPORAL_TLS, TEMPORAL_TLS_CLIENT_CERT_PATH, TEMPORAL_TLS_CLIENT_KEY_PATH, TEMPORAL_TLS_SERVER_CA_CERT_PATH, TEMPORAL_TLS_SERVER_NAME, or the profile's `[profile.<name>.tls]`). @default off, on with an API key */
  tls?: TlsInput;
  /** TOML profile to load. @default 'default' (env TEMPORAL_PROFILE) */
  profile?: string;
  /** TOML file holding the profiles. @default ~/.config/temporalio/temporal.toml (env TEMPORAL_CONFIG_FILE) */
  configFile?: string;
}

/**
 * The resolved connection settings. `apiKey` comes only from TEMPORAL_API_KEY or a profile's
 * `api_key` (a secret never sits in `temporal.config.ts`); `tls` is in envconfig's shape, null
 * when TLS is off; `profile` names the TOML profile and file that were read, null when none was.
 */
export interface TemporalConnection {
  readonly address: string;
  readonly namespace: string;
  readonly apiKey: string | null;
  readonly tls: ClientConfigTLS | null;
  readonly grpcMeta: Readonly<Record<string, string>>;
  readonly profile: { readonly name: string; readonly file: string } | null;
}

/** Old TLS variable names (before `@temporalio/envconfig`) and the standard names that replace them. */
export const RENAMED_TLS_VARIABLES = {
  TEMPORAL_TLS_CERT_PATH: 'TEMPORAL_TLS_CLIENT_CERT_PATH',
  TEMPORAL_TLS_KEY_PATH: 'TEMPORAL_TLS_CLIENT_KEY_PATH',
  TEMPORAL_TLS_CA_PATH: 'TEMPORAL_TLS_SERVER_CA_CERT_PATH',
} as const;

/** Old `temporal.tls` keys of `temporal.config.ts` and the keys that replace them. */
const RENAMED_TLS_KEYS = { certPath: 'clientCertPath', keyPath: 'clientKeyPath', caPath: 'serverCaCertPath' } as const;

const ADDRESS_PATTERN = /^[^\s:]+:([1-9]\d{0,3}|[1-5]\d{4}|6[0-4]\d{3}|65[0-4]\d{2}|655[0-2]\d|6553[0-5])$/;
const NAMESPACE_PATTERN = /^[\w.-]{1,255}$/;

/**
 * Resolves the connection settings: each field from `overrides`, else the standard environment
 * variable, else the TOML profile, else `file`, else its default. An API key turns TLS on unless
 * TLS is disabled explicitly (`TEMPORAL_TLS=false`, `disabled = true`), as Temporal Cloud expects.
 * Reads the TOML file; certificate files are only checked to exist (read at connect time).
 *
 * @throws {@link CheckpointError} INVALID_CONFIG naming the key: an old TLS name (naming the
 *   new one), a TEMPORAL_CONFIG_FILE that does not exist or is not TOML, a TEMPORAL_PROFILE the
 *   file lacks, a malformed address / namespace / TEMPORAL_TLS, a client certificate without its
 *   key (or the reverse), or a certificate file that does not exist.
 */
export function resolveTemporalConnection(file: TemporalConnectionInput, env: NodeJS.ProcessEnv, overrides: TemporalConnectionInput = {}): TemporalConnection {
  refuseRenamedTlsNames(env, file.tls, overrides.tls);
  const tlsFlag = env.TEMPORAL_TLS;
  if (tlsFlag !== undefined && tlsFlag !== '' && !['true', 'false', '1', '0'].includes(tlsFlag))
    throw configError('TEMPORAL_TLS', `must be true or false, got ${JSON.stringify(tlsFlag)}`);
  const standardEnv = nonEmpty(env);
  const profileName = overrides.profile ?? standardEnv.TEMPORAL_PROFILE ?? file.profile;
  const configFile = overrides.configFile ?? standardEnv.TEMPORAL_CONFIG_FILE ?? file.configFile;
  const fileKey = overrides.configFile !== undefined || standardEnv.TEMPORAL_CONFIG_FILE === undefined ? 'temporal.configFile' : 'TEMPORAL_CONFIG_FILE';
  if (configFile !== undefined && !existsSync(configFile)) throw configError(fileKey, `must name an existing TOML file, got ${JSON.stringify(configFile)}`);
  let loaded: ClientConfigProfile;
  try {
    loaded = loadClientConfigProfile({ profile: profileName, ...(configFile !== undefined ? { configSource: { path: configFile } } : {}), overrideEnvVars: standardEnv });
  } catch (error) {
    const notFound = error instanceof Error && /^Profile '.*' not found/.test(error.message);
    const key = notFound ? (standardEnv.TEMPORAL_PROFILE !== undefined && overrides.profile === undefined ? 'TEMPORAL_PROFILE' : 'temporal.profile') : fileKey;
    // No cause: the TOML parser's message quotes the offending line, which may hold the API key.
    throw new CheckpointError(
      'INVALID_CONFIG',
      `${key} ${notFound ? `names a profile the TOML file lacks` : 'is not a valid TOML client configuration'}: ${loadErrorSummary(error)}`,
      { field: key },
    );
  }
  const profile = profileInUse(profileName, configFile, standardEnv);
  /** Where a value came from: the variable when set, else the profile's key when a profile was read, else `temporal.config.ts` (`missing`: where to set it, the variable without a profile). */
  const from = (envKey: string, tomlField: string, fileField: string, missing = false): string =>
    standardEnv[envKey] !== undefined ? envKey : profile ? `${tomlField} of TOML profile "${profile.name}" (${profile.file})` : missing ? envKey : `temporal.${fileField}`;
  const address = overrides.address ?? loaded.address ?? file.address ?? '127.0.0.1:7233';
  const namespace = overrides.namespace ?? loaded.namespace ?? file.namespace ?? 'default';
  checkText(
    overrides.address !== undefined ? 'temporal.address' : from('TEMPORAL_ADDRESS', 'address', 'address'),
    address,
    ADDRESS_PATTERN,
    'host:port with a port from 1 to 65535',
  );
  checkText(overrides.namespace !== undefined ? 'temporal.namespace' : from('TEMPORAL_NAMESPACE', 'namespace', 'namespace'), namespace, NAMESPACE_PATTERN, 'a namespace name');
  const apiKey = loaded.apiKey ?? null;
  const tls = overrides.tls !== undefined ? tlsFromInput(overrides.tls) : mergeTls(tlsFromInput(file.tls), loaded.tls);
  const effectiveTls = tls === undefined ? (apiKey !== null ? {} : null) : tls.disabled === true ? null : tls;
  if (effectiveTls !== null) checkTlsFiles(effectiveTls, from);
  return { address, namespace, apiKey, tls: effectiveTls, grpcMeta: loaded.grpcMeta ?? {}, profile };
}

/**
 * The options for `NativeConnection.connect` (worker) and `Connection.connect` (client): address,
 * API key, TLS (certificate files read now) and gRPC metadata, through envconfig's `toClientOptions`.
 *
 * @throws {@link CheckpointError} INVALID_CONFIG when a certificate file cannot be read.
 * @returns `{ address, apiKey?, tls, metadata? }`; `tls` is false when TLS is off.
 */
export function temporalConnectionOptions(connection: TemporalConnection): NativeConnectionOptions {
  const { address, namespace, apiKey, tls, grpcMeta } = connection;
  try {
    const { connectionOptions } = toClientOptions({
      address,
      namespace,
      ...(apiKey !== null ? { apiKey } : {}),
      tls: tls ?? { disabled: true },
      ...(Object.keys(grpcMeta).length > 0 ? { grpcMeta: { ...grpcMeta } } : {}),
    });
    return Object.fromEntries(Object.entries(connectionOptions).filter(([, v]) => v !== undefined)) as NativeConnectionOptions;
  } catch (error) {
    throw new CheckpointError(
      'INVALID_CONFIG',
      `temporal.tls: a TLS certificate or key file cannot be read: ${error instanceof Error ? error.message : String(error)}`,
      { field: 'temporal.tls' },
      { cause: error },
    );
  }
}

function refuseRenamedTlsNames(env: NodeJS.ProcessEnv, ...inputs: (TlsInput | undefined)[]): void {
  for (const [old, renamed] of Object.entries(RENAMED_TLS_VARIABLES)) {
    if (env[old] !== undefined && env[old] !== '') {
      throw new CheckpointError(
        'INVALID_CONFIG',
        `${old} is no longer read: use ${renamed} (the standard Temporal name; see @temporalio/envconfig). The TLS variables are now TEMPORAL_TLS, TEMPORAL_TLS_CLIENT_CERT_PATH, TEMPORAL_TLS_CLIENT_KEY_PATH, TEMPORAL_TLS_SERVER_CA_CERT_PATH and TEMPORAL_TLS_SERVER_NAME`,
        { field: old, replacement: renamed },
      );
    }
  }
  for (const input of inputs) {
    if (typeof input !== 'object') continue;
    for (const [old, renamed] of Object.entries(RENAMED_TLS_KEYS)) {
      if (old in input)
        throw new CheckpointError('INVALID_CONFIG', `temporal.tls.${old} is no longer read: use temporal.tls.${renamed}`, {
          field: `temporal.tls.${old}`,
          replacement: `temporal.tls.${renamed}`,
        });
    }
  }
}

/** The environment without empty values (an empty variable counts as unset, as elsewhere in config.ts); `TEMPORAL_GRPC_META_*` keep theirs (empty removes a header). */
function nonEmpty(env: NodeJS.ProcessEnv): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined && (e[1] !== '' || e[0].startsWith('TEMPORAL_GRPC_META_'))));
}

/** The profile and file envconfig read, or null when it read none (no file, or no "default" profile in it): then only the environment applied. */
function profileInUse(name: string | undefined, configFile: string | undefined, env: Record<string, string>): TemporalConnection['profile'] {
  const path = configFile ?? defaultConfigFile(env);
  if (path === undefined || !existsSync(path)) return null;
  const profileName = name ?? 'default';
  return profileName in loadClientConfig({ configSource: { path }, overrideEnvVars: env }).profiles ? { name: profileName, file: resolve(path) } : null;
}

/** envconfig's default file on Linux and macOS-like homes: `$XDG_CONFIG_HOME` or `~/.config`, then `temporalio/temporal.toml`. */
function defaultConfigFile(env: Record<string, string>): string | undefined {
  if (process.platform === 'win32') return env.APPDATA ? resolve(env.APPDATA, 'temporalio', 'temporal.toml') : undefined;
  if (process.platform === 'darwin') return env.HOME ? resolve(env.HOME, 'Library', 'Application Support', 'temporalio', 'temporal.toml') : undefined;
  const dir = env.XDG_CONFIG_HOME ?? (env.HOME ? resolve(env.HOME, '.config') : undefined);
  return dir ? resolve(dir, 'temporalio', 'temporal.toml') : undefined;
}

function tlsFromInput(input: TlsInput | undefined): ClientConfigTLS | undefined {
  if (input === undefined) return undefined;
  if (typeof input === 'boolean') return input ? {} : { disabled: true };
  const path = (p: string | undefined): ConfigDataSource | undefined => (p === undefined ? undefined : { path: p });
  return strip({ serverName: input.serverName, clientCert: path(input.clientCertPath), clientKey: path(input.clientKeyPath), serverCACert: path(input.serverCaCertPath) });
}

/** Field by field, the profile and environment over the file (as envconfig merges the environment over a profile). */
function mergeTls(base: ClientConfigTLS | undefined, over: ClientConfigTLS | undefined): ClientConfigTLS | undefined {
  return base === undefined && over === undefined ? undefined : { ...base, ...over };
}

function checkTlsFiles(tls: ClientConfigTLS, from: (envKey: string, tomlField: string, fileField: string, missing?: boolean) => string): void {
  const cert = ['TEMPORAL_TLS_CLIENT_CERT_PATH', 'tls.client_cert_path', 'tls.clientCertPath'] as const;
  const key = ['TEMPORAL_TLS_CLIENT_KEY_PATH', 'tls.client_key_path', 'tls.clientKeyPath'] as const;
  if ((tls.clientCert === undefined) !== (tls.clientKey === undefined)) {
    const [envKey, tomlField, fileField] = tls.clientCert === undefined ? cert : key;
    throw configError(
      from(envKey, tomlField, fileField, true),
      'is missing: a client certificate and its key (TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH) must be set together',
    );
  }
  const files: [ConfigDataSource | undefined, string][] = [
    [tls.clientCert, from(...cert)],
    [tls.clientKey, from(...key)],
    [tls.serverCACert, from('TEMPORAL_TLS_SERVER_CA_CERT_PATH', 'tls.server_ca_cert_path', 'tls.serverCaCertPath')],
  ];
  for (const [source, field] of files) {
    if (source !== undefined && 'path' in source && !existsSync(source.path)) throw configError(field, `must name an existing PEM file, got ${JSON.stringify(source.path)}`);
  }
}

/** The first line of an envconfig load error and, for a TOML syntax error, its line and column: never the quoted source line (it may hold `api_key`). */
function loadErrorSummary(error: unknown): string {
  const first = (error instanceof Error ? error.message : String(error)).split('\n')[0]!.trim();
  const at = error as { line?: unknown; column?: unknown };
  return typeof at.line === 'number' && typeof at.column === 'number' ? `${first} (line ${at.line}, column ${at.column})` : first;
}

function checkText(key: string, value: unknown, pattern: RegExp, expected: string): void {
  if (typeof value !== 'string' || !pattern.test(value)) throw configError(key, `must be ${expected}, got ${JSON.stringify(value)}`);
}

function strip<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

function configError(key: string, message: string): CheckpointError {
  return new CheckpointError('INVALID_CONFIG', `${key} ${message}`, { field: key });
}
