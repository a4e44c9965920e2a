/**
 * PostgreSQL schema migrations, applied by `PostgresCheckpointStore` (see `./migration.ts`).
 * `body` is `text`, never `jsonb`: the stored form must stay byte-exact so duplicate keys,
 * tampering and truncation are detected, not normalized away.
 */
import type { Migration } from './migration';

/** Ordered steps; the last version is the schema this code writes. */
export const POSTGRES_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'create ttc_checkpoints',
    sql: `
      CREATE TABLE ttc_checkpoints (
        key        text        NOT NULL PRIMARY KEY,
        namespace  text        NOT NULL,
        call_id    text        NOT NULL,
        tool_name  text        NOT NULL,
        status     text        NOT NULL,
        revision   bigint      NOT NULL,
        updated_at timestamptz NOT NULL,
        body       text        NOT NULL
      );
      CREATE INDEX ttc_checkpoints_status_updated_at ON ttc_checkpoints (status, updated_at);
      -- One checkpoint per (namespace, call id): a second binding for the same call is never a new row;
      -- createIfAbsent returns the holder, and decide reports BINDING_CONFLICT.
      CREATE UNIQUE INDEX ttc_checkpoints_call ON ttc_checkpoints (namespace, call_id);
    `,
  },
  {
    version: 2,
    name: 'create ttc_conversation_entries',
    // Claim check: the run chain's conversation and large tool outputs, insert-only.
    sql: `
      CREATE TABLE ttc_conversation_entries (
        log_id     text        NOT NULL,
        entry_key  text        NOT NULL,
        body       text        NOT NULL,
        bytes      bigint      NOT NULL,
        created_at timestamptz NOT NULL,
        PRIMARY KEY (log_id, entry_key)
      );
    `,
  },
  {
    version: 3,
    name: 'add ttc_checkpoints.dedupe_key',
    // The dedupe key of a call that may answer for others (docs/protocol.md#dedupe-keys): at most one
    // row per key; rows without one (NULL) are not indexed.
    sql: `
      ALTER TABLE ttc_checkpoints ADD COLUMN dedupe_key text;
      CREATE UNIQUE INDEX ttc_checkpoints_dedupe_key ON ttc_checkpoints (dedupe_key) WHERE dedupe_key IS NOT NULL;
    `,
  },
  {
    version: 4,
    name: 'add ttc_checkpoints.dedupe_until',
    // When a row's dedupe key stops holding (a business key's window end, docs/protocol.md#business-keys):
    // a later insert takes the key over, and prune keeps the row until then. NULL: held while the row exists.
    sql: `
      ALTER TABLE ttc_checkpoints ADD COLUMN dedupe_until timestamptz;
    `,
  },
];
