/**
 * Configuration (README.md#configuration): `temporal.config.ts` at the project root, every
 * value overridable from the environment, validated once with clear errors naming the key.
 * Human-friendly durations ('10s', '5m') are accepted here only and converted to ms once.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { msToNumber } from '@temporalio/common/lib/time';
import { z } from 'zod/v4';
import { CheckpointError } from './checkpoint/errors';
import { LIMITS } from './checkpoint/bounds';
import { maskUrl } from './stores/mask-url';
import { KEY_ID_PATTERN, readKeyFromEnv, readKeyringFromEnv } from './key-material';
import { parseGrantSigningKey, parseGrantVerificationKeys } from './approval-grant-keys';
import { MAX_GRANT_TTL_MS, type GrantSigningKey, type GrantVerificationKey } from './checkpoint/approval-grant';
import { resolveTemporalConnection, type TemporalConnection, type TemporalConnectionInput } from './temporal-env-config';

export { temporalConnectionOptions, type TlsInput } from './temporal-env-config';

/** With a SQLite store the tool heartbeat timeout must be at least this many times the busy timeout. */
export const HEARTBEAT_TO_BUSY_TIMEOUT_RATIO = 2;
/** Largest `TTC_SQLITE_BUSY_TIMEOUT` (what the SQLite store accepts). */
const MAX_SQLITE_BUSY_TIMEOUT_MS = 600_000;
/** Largest `TTC_STORE_STARTUP_WAIT`: one day. */
const MAX_STORE_STARTUP_WAIT_MS = 86_400_000;

/** A duration: ms as a number, or a string such as '500ms', '10s', '5m', '7d'. */
export type DurationInput = number | string;

/** What `temporal.config.ts` may set; every field is optional and has a default. */
export interface ConfigInput {
  /**
   * The Temporal server. Connection settings (address, namespace, TLS, profile) are configured the
   * Temporal way, see {@link TemporalConnectionInput}: the standard TEMPORAL_* variables and TOML
   * profiles override what is set here; the API key comes only from TEMPORAL_API_KEY or a profile.
   */
  temporal?: TemporalConnectionInput & {
    /** @default 'agent-tools' (env TEMPORAL_TASK_QUEUE) */
    taskQueue?: string;
  };
  store?: {
    /** @default 'sqlite:.data/checkpoints.db' (env TTC_STORE_URL) */
    url?: string;
    /**
     * SQLite only: how long a writer waits for another process's lock (0 to 10m). better-sqlite3
     * waits synchronously, blocking the worker's event loop and so its heartbeats: with a SQLite
     * store the tool heartbeat timeout must be at least twice this. @default '5s' (env TTC_SQLITE_BUSY_TIMEOUT)
     */
    sqliteBusyTimeout?: DurationInput;
    /**
     * PostgreSQL only: the schema holding the store's tables (it must exist; only trusted roles
     * may have CREATE on it). Every object the store uses is schema-qualified; no statement depends on the search_path.
     * @default 'public' (env TTC_POSTGRES_SCHEMA)
     */
    postgresSchema?: string;
    /**
     * PostgreSQL only: how long `ttc worker` waits at start for a store that cannot be reached yet
     * (refused or timed-out connections, `57P03` starting up), trying again with backoff and
     * logging each try; a configuration error (bad URL, refused login, INVALID_CONFIG) exits at
     * once. 0 tries once. @default '2m' (env TTC_STORE_STARTUP_WAIT)
     */
    startupWait?: DurationInput;
  };
  timeouts?: {
    /** Tool activity start-to-close. @default '60s' (env TTC_TOOL_START_TO_CLOSE_TIMEOUT) */
    toolStartToClose?: DurationInput;
    /** Tool activity heartbeat timeout. @default '10s' (env TTC_TOOL_HEARTBEAT_TIMEOUT) */
    toolHeartbeat?: DurationInput;
    /** Model turn start-to-close. @default '120s' (env TTC_MODEL_START_TO_CLOSE_TIMEOUT) */
    modelStartToClose?: DurationInput;
    /**
     * Worker shutdown grace time on SIGTERM: running tool calls get this long to finish. The worker
     * refuses to start when it is shorter than its longest tool `callDeadlineMs` plus 5 s.
     * @default '45s' (env TTC_SHUTDOWN_GRACE_TIME)
     */
    shutdownGrace?: DurationInput;
  };
  retry?: {
    /** @default '1s' (env TTC_RETRY_INITIAL_INTERVAL) */
    initialInterval?: DurationInput;
    /** @default 2 (env TTC_RETRY_BACKOFF_COEFFICIENT) */
    backoffCoefficient?: number;
    /** @default '30s' (env TTC_RETRY_MAXIMUM_INTERVAL) */
    maximumInterval?: DurationInput;
    /** @default 10 (env TTC_RETRY_MAXIMUM_ATTEMPTS) */
    maximumAttempts?: number;
  };
  worker?: {
    /**
     * A workflow bundle prebuilt with `bundleWorkflowCode` (its `code` written to a file): the worker
     * loads it instead of bundling `src/workflows` at every start (about 2 s of CPU). It must be
     * built from the same workflow code the fleet runs. @default none: bundle at start (env TTC_WORKFLOW_BUNDLE)
     */
    workflowBundle?: string;
  };
  payload?: {
    /** UTF-8 JSON bytes of a stored result. @default 65,536, at most 10 MiB (env TTC_MAX_PAYLOAD_BYTES) */
    maxPayloadBytes?: number;
  };
  retention?: {
    /** Delivered checkpoints older than this may be pruned; at least 1d (the longest an approval grant lives). @default '7d' (env TTC_REPLAY_WINDOW) */
    replayWindow?: DurationInput;
  };
  /**
   * Key sources. Keys themselves are secrets and come only from environment variables; the file
   * names the variables. Rotation: the current key (`…KEY` + `…KEY_ID`) writes, and older keys
   * listed by id in `…KEYS` (`id:key,id:key`) stay readable.
   */
  keys?: {
    /** Name of the environment variable holding the current HMAC seal key (≥ 32 random bytes as `hex:…`, bare hex or `base64:…`; see `src/key-material.ts`). @default 'TTC_HMAC_KEY' */
    hmacKeyEnv?: string;
    /** Id of the current HMAC key, written into every seal. @default 'k1' (env TTC_HMAC_KEY_ID) */
    hmacKeyId?: string;
    /** Name of the environment variable listing older HMAC keys that still verify, `id:key,id:key` (needs the current key too). @default 'TTC_HMAC_KEYS' */
    hmacKeysEnv?: string;
    /** Name of the environment variable holding the current AES-256-GCM key for result payloads (exactly 32 random bytes, formats as for the HMAC key). @default 'TTC_ENCRYPTION_KEY' */
    encryptionKeyEnv?: string;
    /** Id of the current encryption key, written into every envelope. @default 'e1' (env TTC_ENCRYPTION_KEY_ID) */
    encryptionKeyId?: string;
    /** Name of the environment variable listing older encryption keys that still decrypt, `id:key,id:key`. @default 'TTC_ENCRYPTION_KEYS' */
    encryptionKeysEnv?: string;
    /**
     * Name of the environment variable holding the secret idempotency keys are derived with
     * (HMAC-SHA-256, ≥ 32 random bytes, formats as for the HMAC key; see `idempotencyKey`). Unset:
     * unkeyed keys, as before. Set it before first use: it must not change while calls are in flight.
     * @default 'TTC_IDEMPOTENCY_KEY_SECRET'
     */
    idempotencyKeySecretEnv?: string;
    /**
     * Name of the environment variable listing the keys a worker verifies approval grants with,
     * `<key id>:hmac:<secret>` or `<key id>:ed25519:<public key>`, comma-separated (see
     * `src/approval-grant-keys.ts`). Set: signed mode, a `requireApproval` call needs a grant
     * (docs/protocol.md#approval-grants). Unset: unsigned mode. @default 'TTC_APPROVAL_GRANT_KEYS'
     */
    approvalGrantKeysEnv?: string;
    /**
     * Name of the environment variable holding the key `ttc approve` and the console sign grants
     * with, one entry as above (an Ed25519 entry holds the private key). @default 'TTC_APPROVAL_SIGNING_KEY'
     */
    approvalSigningKeyEnv?: string;
  };
  /** What a worker serves, whatever a workflow's input asks for (see {@link Config.pins}). */
  pins?: {
    /** Tenants this worker serves. @default any (env TTC_TENANTS, comma-separated) */
    tenants?: readonly string[];
    /** Tools a run on this worker may offer and call. @default every registered tool (env TTC_TOOLS) */
    tools?: readonly string[];
    /** Tools whose calls run only with a person's approval. @default none (env TTC_REQUIRE_APPROVAL) */
    requireApproval?: readonly string[];
    /** Model adapters `ttc worker` offers (`scripted`, `anthropic`, `openai`). @default the real adapters whose API keys are set (env TTC_MODELS) */
    models?: readonly string[];
  };
}

/** The validated configuration; every duration in ms. */
export interface Config {
  /** Connection settings from `@temporalio/envconfig` (see {@link TemporalConnection}; connect with `temporalConnectionOptions`), and the task queue. */
  readonly temporal: TemporalConnection & { readonly taskQueue: string };
  /** `sqliteBusyTimeoutMs` applies to a `sqlite:` store only, `postgresSchema` and `startupWaitMs` (the worker's wait for the store at start) to a PostgreSQL store only. */
  readonly store: { readonly url: string; readonly sqliteBusyTimeoutMs: number; readonly postgresSchema: string; readonly startupWaitMs: number };
  readonly timeouts: { readonly toolStartToCloseMs: number; readonly toolHeartbeatMs: number; readonly modelStartToCloseMs: number; readonly shutdownGraceMs: number };
  readonly retry: { readonly initialIntervalMs: number; readonly backoffCoefficient: number; readonly maximumIntervalMs: number; readonly maximumAttempts: number };
  /** `workflowBundlePath`: a prebuilt workflow bundle file, or null to bundle at start. */
  readonly worker: { readonly workflowBundlePath: string | null };
  readonly payload: { readonly maxPayloadBytes: number };
  readonly retention: { readonly replayWindowMs: number };
  /**
   * Key material read from the environment variables the config names; null (or empty) when
   * unset. The current keys write; `hmacKeys` / `encryptionKeys` are older keys by id that
   * still read (rotation).
   */
  readonly keys: {
    readonly hmacKey: Buffer | null;
    readonly hmacKeyId: string;
    readonly hmacKeys: Readonly<Record<string, Buffer>>;
    readonly encryptionKey: Buffer | null;
    readonly encryptionKeyId: string;
    readonly encryptionKeys: Readonly<Record<string, Buffer>>;
    /** Secret for keyed idempotency keys, or null: unkeyed keys. */
    readonly idempotencyKeySecret: Buffer | null;
    /** Keys workers verify approval grants with, or null: unsigned mode. */
    readonly approvalGrantKeys: readonly GrantVerificationKey[] | null;
    /** Key the approve paths sign grants with, or null: approvals carry no grant. */
    readonly approvalSigningKey: GrantSigningKey | null;
  };
  /**
   * Worker pins: the tenant, tools, approval policy and model of a run come from its workflow
   * input, so whoever can start a workflow chooses them; a pinned worker's activities refuse input
   * outside its pins (`NOT_PINNED`, `APPROVAL_REQUIRED`). Null: not pinned. `requireApproval`: tool
   * names whose calls `runFencedTool` refuses without an approved intent digest. `models`: the
   * adapter names `ttc worker` offers (null: the real adapters whose API keys are set).
   */
  readonly pins: {
    readonly tenants: readonly string[] | null;
    readonly tools: readonly string[] | null;
    readonly requireApproval: readonly string[];
    readonly models: readonly string[] | null;
  };
}

/** Identity helper that gives `temporal.config.ts` type checking. */
export function defineConfig(config: ConfigInput): ConfigInput {
  return config;
}

/**
 * Loads `temporal.config.ts` (or `.js`) from `rootDir` when present, applies environment
 * overrides and validates everything.
 *
 * @param options.rootDir @default process.cwd()
 * @param options.env @default process.env
 * @param options.overrides applied last (tests, command-line flags).
 * @throws {@link CheckpointError} INVALID_CONFIG naming the key (file path or environment variable).
 */
export function loadConfig(options: { rootDir?: string; env?: NodeJS.ProcessEnv; overrides?: ConfigInput } = {}): Config {
  const rootDir = options.rootDir ?? process.cwd();
  const env = options.env ?? process.env;
  const file = ['temporal.config.ts', 'temporal.config.js'].map((f) => resolve(rootDir, f)).find((f) => existsSync(f));

  const fromFile: ConfigInput = file === undefined ? {} : ((require(file) as { default?: ConfigInput }).default ?? {});
  return resolveConfig(fromFile, env, options.overrides ?? {});
}

/**
 * Merges file values, environment overrides and explicit overrides, then validates.
 *
 * @throws {@link CheckpointError} INVALID_CONFIG naming the key.
 */
export function resolveConfig(file: ConfigInput, env: NodeJS.ProcessEnv, overrides: ConfigInput = {}): Config {
  const pick = <T>(envKey: string, fromOverrides: T | undefined, fromFile: T | undefined, fallback: T): { key: string; value: T | string } => {
    if (fromOverrides !== undefined) return { key: envKey, value: fromOverrides };
    const e = env[envKey];
    if (e !== undefined && e !== '') return { key: envKey, value: e };
    return { key: envKey, value: fromFile ?? fallback };
  };
  const o = overrides;
  const f = file;
  const connection = resolveTemporalConnection(f.temporal ?? {}, env, o.temporal ?? {});
  const keysEnv = { ...f.keys, ...o.keys };
  const hmacKeyEnv = keysEnv.hmacKeyEnv ?? 'TTC_HMAC_KEY';
  const hmacKeysEnv = keysEnv.hmacKeysEnv ?? 'TTC_HMAC_KEYS';
  const encryptionKeyEnv = keysEnv.encryptionKeyEnv ?? 'TTC_ENCRYPTION_KEY';
  const encryptionKeysEnv = keysEnv.encryptionKeysEnv ?? 'TTC_ENCRYPTION_KEYS';
  const storeUrl = storeUrlFrom(pick('TTC_STORE_URL', o.store?.url, f.store?.url, 'sqlite:.data/checkpoints.db'));
  const sqliteBusyTimeoutMs = Math.ceil(
    duration(pick('TTC_SQLITE_BUSY_TIMEOUT', o.store?.sqliteBusyTimeout, f.store?.sqliteBusyTimeout, '5s'), { allowZero: true, max: MAX_SQLITE_BUSY_TIMEOUT_MS }),
  );
  const toolHeartbeatMs = duration(pick('TTC_TOOL_HEARTBEAT_TIMEOUT', o.timeouts?.toolHeartbeat, f.timeouts?.toolHeartbeat, '10s'));
  if (storeUrl.startsWith('sqlite:') && toolHeartbeatMs < HEARTBEAT_TO_BUSY_TIMEOUT_RATIO * sqliteBusyTimeoutMs) {
    // Before the store moved to its own thread a lock wait blocked the event loop, heartbeats
    // included; the store now waits on its own thread. Kept as a conservative bound.
    throw new CheckpointError(
      'INVALID_CONFIG',
      `TTC_TOOL_HEARTBEAT_TIMEOUT (${toolHeartbeatMs} ms) must be at least ${HEARTBEAT_TO_BUSY_TIMEOUT_RATIO} × TTC_SQLITE_BUSY_TIMEOUT (${sqliteBusyTimeoutMs} ms) = ${HEARTBEAT_TO_BUSY_TIMEOUT_RATIO * sqliteBusyTimeoutMs} ms with a SQLite store: a write may wait the whole busy timeout for another process's lock; raise the heartbeat timeout or lower the busy timeout`,
      { field: 'TTC_TOOL_HEARTBEAT_TIMEOUT', toolHeartbeatMs, sqliteBusyTimeoutMs, related: 'TTC_SQLITE_BUSY_TIMEOUT' },
    );
  }
  const hmacKey = readKeyFromEnv(env, hmacKeyEnv, { minBytes: 32 });
  const hmacKeyId = keyId(pick('TTC_HMAC_KEY_ID', o.keys?.hmacKeyId, f.keys?.hmacKeyId, 'k1'));
  const hmacKeys = readKeyringFromEnv(env, hmacKeysEnv, { minBytes: 32 }, hmacKey === null ? null : { id: hmacKeyId, key: hmacKey, variable: hmacKeyEnv });
  if (hmacKey === null && Object.keys(hmacKeys).length > 0) {
    throw configError(hmacKeysEnv, `lists older HMAC keys but ${hmacKeyEnv} (the current key) is not set: a store must be able to seal what it writes`);
  }
  const encryptionKey = readKeyFromEnv(env, encryptionKeyEnv, { bytes: 32 });
  const encryptionKeyId = keyId(pick('TTC_ENCRYPTION_KEY_ID', o.keys?.encryptionKeyId, f.keys?.encryptionKeyId, 'e1'));
  const encryptionKeys = readKeyringFromEnv(
    env,
    encryptionKeysEnv,
    { bytes: 32 },
    encryptionKey === null ? null : { id: encryptionKeyId, key: encryptionKey, variable: encryptionKeyEnv },
  );
  const idempotencyKeySecret = readKeyFromEnv(env, keysEnv.idempotencyKeySecretEnv ?? 'TTC_IDEMPOTENCY_KEY_SECRET', { minBytes: 32 });
  const grantKeysEnv = keysEnv.approvalGrantKeysEnv ?? 'TTC_APPROVAL_GRANT_KEYS';
  const signingKeyEnv = keysEnv.approvalSigningKeyEnv ?? 'TTC_APPROVAL_SIGNING_KEY';
  const approvalGrantKeys = env[grantKeysEnv] ? parseGrantVerificationKeys(grantKeysEnv, env[grantKeysEnv]) : null;
  const approvalSigningKey = env[signingKeyEnv] ? parseGrantSigningKey(signingKeyEnv, env[signingKeyEnv]) : null;
  return {
    temporal: {
      ...connection,
      taskQueue: text(pick('TEMPORAL_TASK_QUEUE', o.temporal?.taskQueue, f.temporal?.taskQueue, 'agent-tools'), /^\S{1,255}$/, 'a task queue name'),
    },
    store: {
      url: storeUrl,
      sqliteBusyTimeoutMs,
      postgresSchema: text(
        pick('TTC_POSTGRES_SCHEMA', o.store?.postgresSchema, f.store?.postgresSchema, 'public'),
        /^[a-z_][a-z0-9_]{0,62}$/,
        'a lower-case SQL identifier (schema name)',
      ),
      startupWaitMs: duration(pick('TTC_STORE_STARTUP_WAIT', o.store?.startupWait, f.store?.startupWait, '2m'), { allowZero: true, max: MAX_STORE_STARTUP_WAIT_MS }),
    },
    timeouts: {
      toolStartToCloseMs: duration(pick('TTC_TOOL_START_TO_CLOSE_TIMEOUT', o.timeouts?.toolStartToClose, f.timeouts?.toolStartToClose, '60s')),
      toolHeartbeatMs,
      modelStartToCloseMs: duration(pick('TTC_MODEL_START_TO_CLOSE_TIMEOUT', o.timeouts?.modelStartToClose, f.timeouts?.modelStartToClose, '120s')),
      shutdownGraceMs: duration(pick('TTC_SHUTDOWN_GRACE_TIME', o.timeouts?.shutdownGrace, f.timeouts?.shutdownGrace, '45s')),
    },
    retry: {
      initialIntervalMs: duration(pick('TTC_RETRY_INITIAL_INTERVAL', o.retry?.initialInterval, f.retry?.initialInterval, '1s')),
      backoffCoefficient: num(pick('TTC_RETRY_BACKOFF_COEFFICIENT', o.retry?.backoffCoefficient, f.retry?.backoffCoefficient, 2), 1, 100, false),
      maximumIntervalMs: duration(pick('TTC_RETRY_MAXIMUM_INTERVAL', o.retry?.maximumInterval, f.retry?.maximumInterval, '30s')),
      maximumAttempts: num(pick('TTC_RETRY_MAXIMUM_ATTEMPTS', o.retry?.maximumAttempts, f.retry?.maximumAttempts, 10), 0, 1_000, true),
    },
    worker: { workflowBundlePath: optionalPath(pick('TTC_WORKFLOW_BUNDLE', o.worker?.workflowBundle, f.worker?.workflowBundle, '')) },
    payload: {
      maxPayloadBytes: num(
        pick('TTC_MAX_PAYLOAD_BYTES', o.payload?.maxPayloadBytes, f.payload?.maxPayloadBytes, LIMITS.defaultMaxPayloadBytes),
        1,
        LIMITS.hardMaxPayloadBytes,
        true,
      ),
    },
    retention: {
      replayWindowMs: duration(pick('TTC_REPLAY_WINDOW', o.retention?.replayWindow, f.retention?.replayWindow, '7d'), {
        min: { ms: MAX_GRANT_TTL_MS, why: 'the longest an approval grant lives: a call pruned sooner could run again under a grant still valid' },
      }),
    },
    keys: { hmacKey, hmacKeyId, hmacKeys, encryptionKey, encryptionKeyId, encryptionKeys, idempotencyKeySecret, approvalGrantKeys, approvalSigningKey },
    pins: resolvePins(f.pins ?? {}, env, o.pins ?? {}),
  };
}

function text({ key, value }: { key: string; value: unknown }, pattern: RegExp, expected: string): string {
  const parsed = z.string().regex(pattern).safeParse(value);
  if (!parsed.success) throw configError(key, `must be ${expected}, got ${JSON.stringify(value)}`);
  return parsed.data;
}

/** Malformed key ids up to this length are quoted in errors; a longer one may be a key pasted into the wrong variable (a 32-byte key is at least 43 characters). */
const SHOWN_KEY_ID_LENGTH = 32;

/**
 * A key id (`TTC_HMAC_KEY_ID`, `TTC_ENCRYPTION_KEY_ID`): 1 to 128 letters, digits, `_`, `.` or `-`.
 *
 * @throws {@link CheckpointError} INVALID_CONFIG naming the variable; the value is quoted only
 *   when it is short and holds no `:` (never a key in its `hex:` / `base64:` form).
 */
function keyId({ key, value }: { key: string; value: unknown }): string {
  if (typeof value === 'string' && KEY_ID_PATTERN.test(value)) return value;
  const shown =
    typeof value === 'string' && value.length <= SHOWN_KEY_ID_LENGTH && !value.includes(':')
      ? `, got ${JSON.stringify(value)}`
      : ' (the value is not shown: it may be a key set in the wrong variable)';
  throw configError(key, `must be a key id (1 to 128 letters, digits, "_", "." or "-")${shown}`);
}

/** The store URL; a malformed one is shown masked (see `maskUrl`), never with its password. */
function storeUrlFrom({ key, value }: { key: string; value: unknown }): string {
  if (typeof value === 'string' && /^(sqlite:|postgres(ql)?:\/\/)\S+$/.test(value)) return value;
  throw configError(key, `must be sqlite:<path> or postgres://…, got ${typeof value === 'string' ? JSON.stringify(maskUrl(value)) : typeof value}`);
}

function optionalPath({ key, value }: { key: string; value: unknown }): string | null {
  if (value === '') return null;
  if (typeof value !== 'string' || !existsSync(value)) throw configError(key, `must name an existing file, got ${JSON.stringify(value)}`);
  return resolve(value);
}

function num({ key, value }: { key: string; value: unknown }, min: number, max: number, integer: boolean): number {
  const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  let schema = z.number().min(min).max(max);
  if (integer) schema = schema.int();
  const parsed = schema.safeParse(n);
  if (!parsed.success) throw configError(key, `must be ${integer ? 'an integer' : 'a number'} from ${min} to ${max}, got ${JSON.stringify(value)}`);
  return parsed.data;
}

function duration({ key, value }: { key: string; value: unknown }, bounds: { allowZero?: boolean; max?: number; min?: { ms: number; why: string } } = {}): number {
  let ms: number;
  try {
    ms = typeof value === 'number' ? value : /^\d+$/.test(String(value)) ? Number(value) : msToNumber(value as never);
  } catch {
    ms = Number.NaN;
  }
  if (!Number.isFinite(ms) || ms < 0 || (ms === 0 && !bounds.allowZero)) {
    throw configError(key, `must be a ${bounds.allowZero ? 'non-negative' : 'positive'} duration such as 500ms, 10s or 5m, got ${JSON.stringify(value)}`);
  }
  if (bounds.max !== undefined && ms > bounds.max) throw configError(key, `must be at most ${bounds.max} ms, got ${JSON.stringify(value)} (${ms} ms)`);
  if (bounds.min !== undefined && ms < bounds.min.ms) throw configError(key, `must be at least ${bounds.min.ms} ms (${bounds.min.why}), got ${JSON.stringify(value)} (${ms} ms)`);
  return ms;
}

function configError(key: string, message: string): CheckpointError {
  return new CheckpointError('INVALID_CONFIG', `${key} ${message}`, { field: key });
}

// ---- worker pins ---------------------------------------------------------

const TOOL_NAME_PATTERN = /^[a-zA-Z0-9_-]{1,64}$/;
const TENANT_PATTERN = /^[^\s,\u0000-\u001f\u007f-\u009f]{1,256}$/;

/**
 * The pins section: each list from the overrides, else its environment variable (comma-separated,
 * whitespace around names ignored), else the file. An empty list, a malformed name or a name
 * listed twice is INVALID_CONFIG naming the variable; `requireApproval` must lie within `tools`
 * when both are set.
 */
function resolvePins(file: NonNullable<ConfigInput['pins']>, env: NodeJS.ProcessEnv, overrides: NonNullable<ConfigInput['pins']>): Config['pins'] {
  const list = (key: string, fromOverrides: readonly string[] | undefined, fromFile: readonly string[] | undefined, pattern: RegExp, what: string): readonly string[] | null => {
    const raw = env[key];
    const names = fromOverrides ?? (raw !== undefined && raw.trim() !== '' ? raw.split(',').map((n) => n.trim()) : fromFile);
    if (names === undefined) return null;
    if (!Array.isArray(names) || names.length === 0) throw configError(key, `must list at least one ${what} (comma-separated), got ${JSON.stringify(names)}`);
    names.forEach((name: unknown, i) => {
      if (typeof name !== 'string' || !pattern.test(name)) throw configError(key, `entry ${i + 1} must be ${what}, got ${JSON.stringify(name)}`);
      if (names.indexOf(name) !== i) throw configError(key, `lists ${JSON.stringify(name)} twice`);
    });
    return Object.freeze([...names]);
  };
  const tools = list('TTC_TOOLS', overrides.tools, file.tools, TOOL_NAME_PATTERN, 'a tool name');
  const requireApproval = list('TTC_REQUIRE_APPROVAL', overrides.requireApproval, file.requireApproval, TOOL_NAME_PATTERN, 'a tool name') ?? [];
  const outside = tools === null ? [] : requireApproval.filter((name) => !tools.includes(name));
  if (outside.length > 0) throw configError('TTC_REQUIRE_APPROVAL', `names ${outside.join(', ')}, which TTC_TOOLS does not pin`);
  return {
    tenants: list('TTC_TENANTS', overrides.tenants, file.tenants, TENANT_PATTERN, 'a tenant (no whitespace, commas or control characters, at most 256 characters)'),
    tools,
    requireApproval,
    models: list('TTC_MODELS', overrides.models, file.models, /^[\w.-]{1,64}$/, 'a model adapter name'),
  };
}
