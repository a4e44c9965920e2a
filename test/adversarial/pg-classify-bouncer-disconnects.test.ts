/**
 * Adversarial review of `classifyPgError`, guards that hold: the reasons PgBouncer's
 * `disconnect_server()` gives when it drops a server connection while a client's statement runs
 * on it are handed to that client by `unlink_server()` (PgBouncer src/objects.c) as FATAL 08P01:
 * the statement may have committed, so each must stay `lost` (settled by re-reading), never
 * `refused` (STORE_UNAVAILABLE, fail-open). Checked to fail: adding any of these reasons to
 * POOLER_REFUSALS at run time turns the test red.
 */
import { errorResponse } from '../helpers/pg-error-response';
import { classifyPgError } from '../../src/stores/pg-errors';

describe('classifyPgError: server-side disconnect reasons PgBouncer passes to an active client', () => {
  test('are lost', async () => {
    // unlink_server() hands these disconnect_server() reasons to the client whose statement was running.
    for (const reason of [
      'server conn crashed?',
      'query timeout',
      'database removed',
      'admin forced disconnect',
      'server lifetime over',
      'idle transaction timeout',
      'out of memory',
      'database configuration changed',
    ]) {
      const error = await errorResponse({ S: 'FATAL', C: '08P01', M: reason });
      expect([reason, classifyPgError(error).kind]).toEqual([reason, 'lost']);
    }
  });
});
