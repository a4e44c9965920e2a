/**
 * How the worker and the command line open the checkpoint store from the configuration. Its own
 * module (not src/worker.ts) so that commands which only open the store do not load the Temporal
 * worker runtime.
 */
import type { Config } from './config';
import type { CheckpointStoreOptions } from './stores/checkpoint-store';

/**
 * Store options from the configuration: the current HMAC seal key and older ones by id, the
 * current payload encryption key and older ones by id (rotation: the current keys write, every
 * configured key reads), and the SQLite busy timeout (ms) or the PostgreSQL schema.
 */
export function storeOptions(config: Config): CheckpointStoreOptions {
  const { keys } = config;
  return {
    ...(keys.hmacKey ? { hmacKey: keys.hmacKey, keyId: keys.hmacKeyId } : {}),
    ...(keys.hmacKey && Object.keys(keys.hmacKeys).length > 0 ? { hmacKeys: keys.hmacKeys } : {}),
    ...(keys.encryptionKey ? { encryptionKey: keys.encryptionKey, encryptionKeyId: keys.encryptionKeyId } : {}),
    ...(Object.keys(keys.encryptionKeys).length > 0 ? { encryptionKeys: keys.encryptionKeys } : {}),
    ...(config.store.url.startsWith('sqlite:') ? { busyTimeoutMs: config.store.sqliteBusyTimeoutMs } : { postgresSchema: config.store.postgresSchema }),
  };
}
