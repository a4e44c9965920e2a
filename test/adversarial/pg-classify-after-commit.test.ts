/**
 * Adversarial review of `classifyPgError`: an error that can follow a committed write
 * must never be `refused` (STORE_UNAVAILABLE, "nothing was written"): that is fail-open.
 *
 * - PostgreSQL reports a failure inside the commit's critical section (the WAL fsync of
 *   RecordTransactionCommit / XLogFlush) as severity PANIC, SQLSTATE 58030 ("could not fsync
 *   file ..."), sent to the client before the server crashes. The commit record was already
 *   written to the WAL file (write() succeeded, fsync failed), so crash recovery, which reads
 *   the WAL back through the OS page cache, can replay the transaction as committed. Rule 5 of
 *   pg-errors.ts ("any other SQLSTATE: refused") ignores the severity.
 * - PgBouncer sends FATAL 08P01 "unknown pkt" both when a client sent an unknown message
 *   (client.c) and when the *server* answered with one while running the client's statement
 *   (server.c `handle_server_work`: disconnect_server(server, true, "unknown pkt"), which
 *   `unlink_server` passes on to the linked, active client). The second may follow a commit, yet
 *   `POOLER_REFUSALS` lists /^unknown pkt$/.
 */
import { errorResponse } from '../helpers/pg-error-response';
import { classifyPgError } from '../../src/stores/pg-errors';

describe('classifyPgError: errors that may follow a commit are never refusals', () => {
  test('a PANIC during commit (WAL fsync failed) is lost, not refused', async () => {
    const error = await errorResponse({ S: 'PANIC', V: 'PANIC', C: '58030', M: 'could not fsync file "pg_wal/000000010000000000000001": Input/output error' });
    expect(classifyPgError(error).kind).toBe('lost');
  });

  test('a PANIC or FATAL with an internal-error SQLSTATE (the backend dies mid-statement) is lost', async () => {
    for (const severity of ['PANIC', 'FATAL']) {
      const error = await errorResponse({ S: severity, V: severity, C: 'XX000', M: 'cannot abort transaction 1234, it was already committed' });
      expect([severity, classifyPgError(error).kind]).toEqual([severity, 'lost']);
    }
  });

  test('PgBouncer\'s FATAL "unknown pkt" (also sent when the server answered the running statement with an unknown message) is lost', async () => {
    const error = await errorResponse({ S: 'FATAL', C: '08P01', M: 'unknown pkt' });
    expect(classifyPgError(error).kind).toBe('lost');
  });
});
