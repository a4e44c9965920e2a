/**
 * `classifyPgError`: refused (nothing written) or lost (outcome unknown), on the error
 * objects the `pg` driver really produces: ErrorResponse messages as PostgreSQL and PgBouncer
 * send them (PgBouncer: severity, SQLSTATE 08P01 and the reason text only, as its
 * `send_pooler_error` writes them), parsed by `pg-protocol` (the parser `pg` uses), and the
 * driver's own socket errors. `test/conformance/pgbouncer.test.ts` classifies errors a real
 * PgBouncer returned.
 */
import { errorResponse } from '../../helpers/pg-error-response';
import { classifyPgError, NEVER_SENT_FATAL, POOLER_REFUSALS } from '../../../src/stores/pg-errors';

/** What PgBouncer sends for a pooler error (proto.c `send_pooler_error`). */
const pooler = (message: string, severity = 'FATAL') => errorResponse({ S: severity, C: '08P01', M: message });

describe('classifyPgError', () => {
  test('PgBouncer reasons after which the statement never reached a server are refusals naming the pooler', async () => {
    for (const reason of [
      'query_wait_timeout',
      'server login has been failing, try again later (server_login_retry)',
      'server login has been failing, cached error: connect failed (server_login_retry)',
      'client_login_timeout (server down)',
      'unsupported startup parameter: options',
      'no more connections allowed (max_client_conn)',
      'pooler is shutting down',
      'prepared statement did not exist',
      'prepared statement name is already in use',
      'database "app" is disabled',
    ]) {
      const failure = classifyPgError(await pooler(reason));
      expect([reason, failure.kind]).toEqual([reason, 'refused']);
      expect(failure.code).toBe('08P01');
      expect(failure.pooler).toContain(reason);
    }
  });

  test('a startup parameter PgBouncer refuses (an options parameter in the URL) names the fix', async () => {
    for (const reason of ['unsupported startup parameter: options', 'unsupported startup parameter in options: search_path']) {
      expect(classifyPgError(await pooler(reason)).pooler).toMatch(/remove it from the URL.*ignore_startup_parameters/);
    }
  });

  test('PgBouncer reasons after which the statement may have run are lost (settled by re-reading), still naming the pooler', async () => {
    for (const reason of ['server conn crashed?', 'query_timeout', 'server connection closed', 'something a newer PgBouncer says']) {
      const failure = classifyPgError(await pooler(reason));
      expect([reason, failure.kind]).toEqual([reason, 'lost']);
      expect(failure.pooler).toContain(reason);
    }
    expect(POOLER_REFUSALS.some((r) => r.test('server conn crashed?'))).toBe(false);
  });

  test('an ERROR-level 08P01 (the server or the pooler rejected this statement; the connection stays) is a refusal', async () => {
    const error = await errorResponse({ S: 'ERROR', V: 'ERROR', C: '08P01', M: 'bind message supplies 6 parameters, but prepared statement "ttc_cas" requires 7' });
    expect(classifyPgError(error)).toMatchObject({ kind: 'refused', code: '08P01' });
  });

  test('42P05 and 26000 from PostgreSQL are refusals naming a transaction-mode pooler', async () => {
    for (const [code, message] of [
      ['42P05', 'prepared statement "ttc_insert" already exists'],
      ['26000', 'prepared statement "ttc_insert" does not exist'],
    ] as const) {
      const failure = classifyPgError(await errorResponse({ S: 'ERROR', V: 'ERROR', C: code, M: message }));
      expect(failure).toMatchObject({ kind: 'refused', code });
      expect(failure.pooler).toContain('transaction-mode connection pooler');
      expect(failure.pooler).toContain(message);
    }
  });

  test('the server ending the session mid-statement (57P01, 57P02, 57P03, other class 08) is lost; its other errors are refusals without a pooler', async () => {
    for (const code of ['57P01', '57P02', '57P03', '08006', '08003']) {
      expect(classifyPgError(await errorResponse({ S: 'FATAL', V: 'FATAL', C: code, M: 'terminating connection' }))).toMatchObject({ kind: 'lost', code, pooler: null });
    }
    for (const code of ['23505', '40001', '40P01', '57014', '25P02', '42883']) {
      expect(classifyPgError(await errorResponse({ S: 'ERROR', V: 'ERROR', C: code, M: 'refused' }))).toEqual({ kind: 'refused', code, pooler: null });
    }
  });

  test('rule 5 reads the severity: a FATAL or PANIC (which may follow a commit the WAL holds) is lost unless its SQLSTATE is sent only at session start', async () => {
    for (const [severity, code] of [
      ['PANIC', '58030'],
      ['PANIC', 'XX000'],
      ['FATAL', 'XX000'],
      ['FATAL', '53200'],
      ['FATAL', '25P03'],
      ['PANIK', '58030'], // a translated severity (lc_messages) cannot be read as ERROR
    ] as const) {
      const failure = classifyPgError(await errorResponse({ S: severity, C: code, M: 'backend ends' }));
      expect([severity, code, failure]).toEqual([severity, code, { kind: 'lost', code, pooler: null }]);
    }
    for (const code of NEVER_SENT_FATAL) {
      expect(classifyPgError(await errorResponse({ S: 'FATAL', V: 'FATAL', C: code, M: 'session not started' }))).toEqual({ kind: 'refused', code, pooler: null });
    }
    for (const code of ['58030', 'XX000']) {
      expect(classifyPgError(await errorResponse({ S: 'ERROR', V: 'ERROR', C: code, M: 'rolled back' }))).toEqual({ kind: 'refused', code, pooler: null });
    }
  });

  test('PgBouncer\'s FATAL "unknown pkt" is lost (it also follows a server\'s garbage answer to a running statement)', async () => {
    expect(POOLER_REFUSALS.some((r) => r.test('unknown pkt'))).toBe(false);
    expect(classifyPgError(await pooler('unknown pkt'))).toMatchObject({ kind: 'lost', code: '08P01' });
  });

  test('socket failures are lost; a client that was already broken or closed never sent the statement', () => {
    const errno = (code: string) => Object.assign(new Error(`connect ${code}`), { code });
    for (const code of ['ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ECONNREFUSED']) expect(classifyPgError(errno(code))).toEqual({ kind: 'lost', code, pooler: null });
    expect(classifyPgError(new Error('Connection terminated unexpectedly')).kind).toBe('lost');
    expect(classifyPgError(new Error('Query read timeout')).kind).toBe('lost');
    expect(classifyPgError(new Error('Client has encountered a connection error and is not queryable')).kind).toBe('refused');
    expect(classifyPgError(new Error('Client was closed and is not queryable')).kind).toBe('refused');
    expect(classifyPgError(new TypeError('Do not know how to serialize a BigInt')).kind).toBe('refused');
  });
});
