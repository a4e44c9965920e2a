/**
 * What a `pg` driver error says about the statement it answers: was the statement
 * refused, so nothing was written, or was the connection lost after it was handed over, so a
 * write's outcome is unknown and must be settled by re-reading?
 *
 * Rules, in order:
 * 1. A socket failure (`ECONNRESET`, `EPIPE`, ..., or without an errno "Connection terminated
 *    unexpectedly", "Query read timeout") → **lost**. The client was already broken or closed
 *    when the statement was queued ("... is not queryable"): it was never sent → **refused**; so
 *    is any other error without a SQLSTATE (a value the driver could not serialize, ...).
 * 2. PgBouncer's and PostgreSQL's prepared-statement errors `42P05` (duplicate prepared
 *    statement) and `26000` (prepared statement does not exist) → **refused**: the statement
 *    was rejected at Parse/Bind, before anything executed (the shape a transaction-mode pooler
 *    produces for named statements: the store then turns to unnamed ones).
 * 3. `08P01` (protocol violation, the SQLSTATE PgBouncer uses for all its own errors):
 *    - severity ERROR (not FATAL/PANIC): the statement was rejected → **refused**;
 *    - FATAL with a PgBouncer reason that means the statement never reached a PostgreSQL server
 *      (`query_wait_timeout`, `server login has been failing`, `client_login_timeout`, `no more
 *      connections allowed`, `unsupported startup parameter`, `pooler is shutting down`,
 *      PgBouncer 1.21+'s `prepared statement did not exist` / `name is already in use`, ...: see
 *      {@link POOLER_REFUSALS}) → **refused**;
 *    - any other FATAL 08P01, notably `server conn crashed?` (the pooler's server connection
 *      died while the statement ran), `query_timeout` (the pooler killed a running statement)
 *      and `unknown pkt` (also sent when the *server* answered the running statement with a
 *      message PgBouncer does not know, server.c `handle_server_work`, passed on to the active
 *      client by `unlink_server`): the statement may have committed → **lost** (settled by
 *      re-reading, never assumed).
 * 4. Other SQLSTATE class 08 (connection exception) and the server's own termination codes
 *    `57P01` / `57P02` / `57P03` → **lost**.
 * 5. Any other SQLSTATE:
 *    - severity ERROR: the server rejected the statement or rolled its transaction back (an
 *      error after the commit record is written is promoted to PANIC: it is in a critical
 *      section) → **refused**;
 *    - any other severity, i.e. FATAL or PANIC (or one that cannot be read: a translated
 *      severity under a non-English `lc_messages`, or none): the backend ends, possibly after the
 *      commit record reached the WAL (PANIC 58030 "could not fsync" in the commit's WAL flush,
 *      which crash recovery can replay as committed; FATAL/PANIC XX000) → **lost**, unless the
 *      SQLSTATE is one a server sends only before any statement of the session ran
 *      ({@link NEVER_SENT_FATAL}: authentication, unknown database, no connection slots) →
 *      **refused**.
 *
 * Sources: PgBouncer `src/proto.c` `send_pooler_error` (SQLSTATE 08P01 by default), `src/janitor.c`
 * and `src/objects.c` (the disconnect reasons), read at tags 1.18.0 and 1.25; PostgreSQL
 * Appendix A (error codes).
 */

/** How a driver error left the statement it answers. */
export interface PgFailure {
  /** `refused`: nothing of the statement was written; `lost`: its outcome is unknown. */
  readonly kind: 'refused' | 'lost';
  /** The SQLSTATE, or the Node errno (`ECONNRESET`), or null. */
  readonly code: string | null;
  /**
   * Set when the error is a connection pooler's (PgBouncer's own 08P01 errors) or the
   * prepared-statement errors a transaction-mode pooler causes (42P05, 26000): a sentence for
   * the operator naming the problem.
   */
  readonly pooler: string | null;
}

/** Node socket errnos: after a statement was written, its outcome is unknown. */
const SOCKET_ERRNOS = new Set(['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'ECONNABORTED']);

/**
 * PgBouncer disconnect reasons (FATAL, SQLSTATE 08P01) after which the client's statement had
 * not been sent to any PostgreSQL server: the pooler refused it.
 */
export const POOLER_REFUSALS: readonly RegExp[] = [
  /^query_wait_timeout\b/,
  /^client_login_timeout\b/,
  /^server login has been failing\b/,
  /^server login failed\b/,
  /^unsupported startup parameter\b/,
  /^unsupported options startup parameter\b/,
  /^no more connections allowed\b/,
  /^client connections exceeded\b/,
  /^no such (database|user)\b/,
  /^database ".*" is disabled$/,
  /^login rejected$/,
  /^pooler is shutting down$/,
  /^server shutting down$/,
  /^bouncer (config error|resources exhaustion)$/,
  /^pause failed$/,
  /^prepared statement (did not exist|name is already in use)$/,
  /^broken (Parse|Bind|Describe|Close) packet$/,
  /^PQexec disallowed$/,
  // Not `unknown pkt`: PgBouncer also sends it when the server answered the client's running
  // statement with an unknown message (server.c), possibly after a commit (rule 3).
];

/**
 * SQLSTATEs a PostgreSQL server reports with severity FATAL only while starting a session, before
 * any statement of it ran (rule 5): `28000` invalid authorization, `28P01` invalid password,
 * `3D000` database does not exist, `53300` too many connections. Every other FATAL or PANIC
 * SQLSTATE may follow a commit and is `lost`. (PostgreSQL Appendix A; `src/backend/utils/init/postinit.c`
 * and `src/backend/libpq/auth.c` raise these during connection start-up.)
 */
export const NEVER_SENT_FATAL: ReadonlySet<string> = new Set(['28000', '28P01', '3D000', '53300']);

/**
 * Classifies a driver error that answered a statement (see the module comment for the rules):
 * `refused` only when nothing of the statement can have been written; whenever it may have
 * committed, `lost`. Pure; never throws.
 */
export function classifyPgError(error: unknown): PgFailure {
  const code = errorCode(error);
  const message =
    error instanceof Error ? error.message : typeof (error as { message?: unknown } | null)?.message === 'string' ? (error as { message: string }).message : String(error);
  const severity = typeof (error as { severity?: unknown } | null)?.severity === 'string' ? (error as { severity: string }).severity : null;
  if (code !== null && SOCKET_ERRNOS.has(code)) return { kind: 'lost', code, pooler: null };
  if (code === null || !/^[0-9A-Z]{5}$/.test(code)) {
    if (/is not queryable/i.test(message)) return { kind: 'refused', code, pooler: null };
    if (/Connection terminated|Query read timeout|connection timeout|write after end/i.test(message) || code?.startsWith('ERR_STREAM') === true)
      return { kind: 'lost', code, pooler: null };
    return { kind: 'refused', code, pooler: null };
  }
  if (code === '42P05' || code === '26000') {
    return {
      kind: 'refused',
      code,
      pooler: `prepared statement error (${code}: ${message}): a transaction-mode connection pooler (PgBouncer, RDS Proxy, ...) ran this connection's statements on another server connection`,
    };
  }
  if (code === '08P01') {
    const fatal = severity === 'FATAL' || severity === 'PANIC';
    const pooler = /^unsupported (startup parameter|options startup parameter)/.test(message)
      ? `connection pooler refused a startup parameter of the connection string (08P01: ${message}): remove it from the URL (the store sends none of its own), or list it in PgBouncer's ignore_startup_parameters (which drops it) or track_extra_parameters`
      : `connection pooler or protocol error (08P01: ${message})`;
    if (!fatal) return { kind: 'refused', code, pooler };
    if (POOLER_REFUSALS.some((reason) => reason.test(message))) return { kind: 'refused', code, pooler };
    return { kind: 'lost', code, pooler };
  }
  if (code.startsWith('08') || code === '57P01' || code === '57P02' || code === '57P03') return { kind: 'lost', code, pooler: null };
  if (severity === 'ERROR' || NEVER_SENT_FATAL.has(code)) return { kind: 'refused', code, pooler: null };
  return { kind: 'lost', code, pooler: null };
}

/** The SQLSTATE or errno of a driver error, or null. */
export function errorCode(error: unknown): string | null {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : null;
}
