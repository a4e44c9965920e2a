/**
 * The SQLite store's errors (docs/protocol.md#side-stores): what an executor's {@link WireError}
 * means for a caller, as a {@link CheckpointError} that names the database file.
 */
import { CheckpointError } from '../checkpoint/errors';
import type { WireDriverError, WireError } from './sqlite-protocol';

/** Where a store's errors come from: its file and busy timeout (ms), for the messages. */
export interface SqliteErrorContext {
  readonly path: string;
  readonly busyTimeoutMs: number;
}

/**
 * The {@link CheckpointError} of a failed request: STORE_UNAVAILABLE (nothing written, the
 * driver error as `cause`, `details.driverCode`), STORE_OUTCOME_UNKNOWN (a write whose commit
 * could not be settled) or UNSUPPORTED_SCHEMA (the file was migrated by newer code).
 */
export function storeError(context: SqliteErrorContext, error: WireError): CheckpointError {
  switch (error.kind) {
    case 'unavailable':
      return unavailable(context, error.what, error.driver, error.note);
    case 'unknown': {
      const cause = error.driver === undefined ? undefined : driverError(error.driver);
      return new CheckpointError(
        'STORE_OUTCOME_UNKNOWN',
        `SQLite database ${context.path}: ${error.message}; the write may or may not be stored (read the record again before deciding)`,
        { path: context.path, ...(error.driver === undefined ? {} : { driverCode: codeOf(error.driver) }), ...(error.key === undefined ? {} : { key: error.key }) },
        cause === undefined ? undefined : { cause },
      );
    }
    case 'schema':
      return new CheckpointError('UNSUPPORTED_SCHEMA', `SQLite database schema version ${error.actual} is newer than this code knows (${error.supported}); upgrade the code`, {
        field: 'user_version',
        actual: error.actual,
        supported: String(error.supported),
      });
  }
}

/**
 * STORE_UNAVAILABLE: the database could not `what` (open, read, write); nothing was written.
 * A SQLITE_BUSY error says the lock was still held after the busy timeout.
 */
export function unavailable(context: SqliteErrorContext, what: string, driver: WireDriverError, note?: string): CheckpointError {
  const code = codeOf(driver);
  const hint = code.startsWith('SQLITE_BUSY') ? ` (still locked after busyTimeoutMs=${context.busyTimeoutMs})` : '';
  const why = note === undefined ? '' : ` (${note})`;
  return new CheckpointError(
    'STORE_UNAVAILABLE',
    `SQLite database ${context.path} failed to ${what}: ${code} ${driver.message}${hint}${why}; nothing was written, nothing may be claimed or executed`,
    { path: context.path, driverCode: code },
    { cause: driverError(driver) },
  );
}

/** STORE_UNAVAILABLE for a call on a closed store (`details.reason` = `closed`). */
export function closedError(path: string): CheckpointError {
  return new CheckpointError('STORE_UNAVAILABLE', `SQLite store ${path} is closed`, { path, reason: 'closed' });
}

/** The driver error again, as an `Error` with its `name` and `code` (what crossed the thread). */
export function driverError(driver: WireDriverError): Error {
  const error = new Error(driver.message);
  error.name = driver.name;
  if (driver.code !== undefined) (error as Error & { code?: string }).code = driver.code;
  return error;
}

/** The driver's code (`SQLITE_BUSY`, …), or the error's name for the driver's own argument checks. */
function codeOf(driver: WireDriverError): string {
  return driver.code ?? driver.name;
}

let bindingLoads = false;

/**
 * Throws unless better-sqlite3's native binding loads in this process (it is built per Node ABI;
 * checked once per process by opening and closing an in-memory database).
 *
 * @throws {@link CheckpointError} INVALID_CONFIG naming `npm rebuild better-sqlite3` when the binding does not load (the
 *   loader's error as `cause`); any other error of the driver as thrown.
 */
export function assertSqliteBindingLoads(): void {
  if (bindingLoads) return;
  try {
    const Database = require('better-sqlite3') as new (path: string) => { close(): void };
    new Database(':memory:').close();
    bindingLoads = true;
  } catch (err) {
    // Only a binding that does not load is a configuration fault; anything else is the driver's own failure.
    const loadFailure = err instanceof Error && ((err as NodeJS.ErrnoException).code === 'ERR_DLOPEN_FAILED' || /bindings file|NODE_MODULE_VERSION|\.node\b/.test(err.message));
    if (!loadFailure) throw err;
    const reason = err.message.split('\n')[0];
    throw new CheckpointError(
      'INVALID_CONFIG',
      `the SQLite store needs better-sqlite3's native binding, which does not load in Node ${process.version} (${reason}): run \`npm rebuild better-sqlite3\` in your project`,
      { field: 'dependencies', packages: ['better-sqlite3'] },
      { cause: err },
    );
  }
}
