/**
 * Versioned schema migrations of the side stores (docs/protocol.md#side-stores). Each store runs
 * its own list at open time, in order, each step in its own transaction, and records what it
 * applied (PostgreSQL: the `ttc_schema_migrations` table under an advisory lock; SQLite: `PRAGMA
 * user_version` under `BEGIN IMMEDIATE`). Steps are append-only: never edit a released step, add
 * the next version.
 */

/** One step: `version` counts up from 1 without gaps; `sql` may hold several statements. */
export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}

/** The checkpoint table's name in every store. */
export const CHECKPOINT_TABLE = 'ttc_checkpoints';
