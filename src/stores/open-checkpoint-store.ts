/**
 * Opens a side store from a URL (docs/protocol.md#side-stores), loading only the driver that URL needs.
 */
import { CheckpointError } from '../checkpoint/errors';
import type { CheckpointStore, CheckpointStoreOptions } from './checkpoint-store';
import { maskUrl, parseStoreUrl } from './mask-url';

export { maskUrl } from './mask-url';

/**
 * Opens the store a URL names, runs its migrations and returns it ready to use.
 *
 * - `sqlite:<path>`: a SQLite file (the embedded default; created when absent, mode 0600, with
 *   any missing directories above it, mode 0700), e.g. `sqlite:./.data/checkpoints.db` or
 *   `sqlite:/var/lib/ttc/checkpoints.db`; a relative path is relative to the working directory.
 * - `sqlite::memory:`: a private in-memory database (tests only: gone on close).
 * - `postgres://…` or `postgresql://…`: a PostgreSQL connection string.
 *
 * @param options seal and encryption keys, `busyTimeoutMs` (SQLite), `poolSize` and
 *   `connectTimeoutMs` (PostgreSQL); see {@link CheckpointStoreOptions}.
 * @returns a {@link CheckpointStore}; close it with `close()`.
 * The driver is an optional peer dependency: `better-sqlite3` for `sqlite:`, `pg` for `postgres://`.
 *
 * @throws {@link CheckpointError} INVALID_CONFIG when the URL's driver package is not installed;
 *   INVALID_ARGUMENT for an unknown scheme or a malformed URL (the
 *   message names the URL with any password masked) or bad options; STORE_UNAVAILABLE when the
 *   database cannot be opened or reached, or its directory cannot be created (the message names
 *   the path; the driver's or file system's error is the `cause`); UNSUPPORTED_SCHEMA
 *   when the database was migrated by newer code.
 * @see docs/protocol.md#side-stores
 */
export async function openCheckpointStore(url: string, options: CheckpointStoreOptions = {}): Promise<CheckpointStore> {
  if (typeof url !== 'string' || url.length === 0) {
    throw new CheckpointError('INVALID_ARGUMENT', 'store URL is required: sqlite:<path>, sqlite::memory: or postgres://…', { field: 'url' });
  }
  const shown = maskUrl(url);
  if (url.startsWith('sqlite:')) {
    const path = url.slice('sqlite:'.length);
    if (path.length === 0 || path.includes('\0') || path.startsWith('//')) {
      throw new CheckpointError('INVALID_ARGUMENT', `store URL ${JSON.stringify(shown)} is not sqlite:<path> or sqlite::memory: (for example sqlite:./.data/checkpoints.db)`, {
        field: 'url',
        url: shown,
      });
    }
    const { SqliteCheckpointStore } = require('./sqlite-store') as typeof import('./sqlite-store');
    return SqliteCheckpointStore.open(path === ':memory:' ? ':memory:' : path, options);
  }
  if (url.startsWith('postgres://') || url.startsWith('postgresql://')) {
    const parsed = parseStoreUrl(url);
    if (parsed === null) {
      // No cause attached: the URL parser's error carries the whole input, password included.
      throw new CheckpointError(
        'INVALID_ARGUMENT',
        `store URL ${JSON.stringify(shown)} is not a valid PostgreSQL connection URL (postgres://user:password@host:5432/database); percent-encode special characters in the password (@ %40, / %2F, ? %3F, # %23, : %3A, % %25)`,
        { field: 'url', url: shown },
      );
    }
    if (parsed.hostname === '' && !parsed.searchParams.has('host')) {
      throw new CheckpointError('INVALID_ARGUMENT', `store URL ${JSON.stringify(shown)} names no host (postgres://user@host:5432/database)`, { field: 'url', url: shown });
    }
    const { PostgresCheckpointStore } = require('./postgres-store') as typeof import('./postgres-store');
    return PostgresCheckpointStore.open(url, shown, options);
  }
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(url)?.[1];
  throw new CheckpointError(
    'INVALID_ARGUMENT',
    `store URL ${JSON.stringify(shown)} has ${scheme === undefined ? 'no scheme' : `unknown scheme "${scheme}"`}; use sqlite:<path>, sqlite::memory: or postgres://…`,
    {
      field: 'url',
      url: shown,
    },
  );
}
