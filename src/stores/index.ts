/**
 * `temporal-tool-checkpoint/stores`: the side stores behind one interface. Most code needs only
 * `openCheckpointStore(url)` from the package root; this entry holds the store classes, their
 * settings and the payload encryption, for code that builds or tunes a store directly. The
 * drivers are optional peers: `better-sqlite3` for SQLite, `pg` for PostgreSQL.
 */
export { openCheckpointStore, maskUrl } from './open-checkpoint-store';
export type {
  CheckpointStore,
  CheckpointStoreOptions,
  ConversationEntry,
  CreateOptions,
  CreateResult,
  ListOptions,
  PruneOptions,
  ListQuarantinedOptions,
  QuarantinedRow,
} from './checkpoint-store';
export { SqliteCheckpointStore, DEFAULT_SQLITE_BUSY_TIMEOUT_MS, type SqliteStoreSettings, type SqliteStoreStats } from './sqlite-store';
export { PostgresCheckpointStore, DEFAULT_POSTGRES_POOL_SIZE, DEFAULT_POSTGRES_CONNECT_TIMEOUT_MS } from './postgres-store';
export { ENCRYPTION_KEY_BYTES, PAYLOAD_ENCRYPTION_ALGORITHM, isEncryptedPayload } from './payload-cipher';
export type { EncryptedPayload, PayloadEncryptionOptions } from './payload-cipher';
