/**
 * Adversarial review of the PostgreSQL store: STORE_UNAVAILABLE must mean "nothing of
 * this call was written" (the store's contract, and the fence relies on it: a claiming insert
 * that failed STORE_UNAVAILABLE resets `evidence.claimSent`, fenced-tool.ts `round()`).
 *
 * Scenario, with a real PostgreSQL server and a TCP relay (test/helpers/pg-relay.ts) between the
 * store and the server:
 * 1. the claiming INSERT is sent, and the client's connection is cut (the server side stays
 *    open, so the server finishes the statement): the store sees "Connection terminated
 *    unexpectedly" (lost) and settles by re-reading (`settleInsert`);
 * 2. the re-read finds no row (the lost INSERT is still waiting for a table lock);
 * 3. the lost INSERT commits; the re-sent INSERT then conflicts with it (rowCount 0);
 * 4. `readExisting` (the read of the row it conflicted with) loses its connection.
 * The row this very call inserted is in the database, and the call must not answer
 * STORE_UNAVAILABLE ("nothing was written"): STORE_OUTCOME_UNKNOWN, or the row.
 */
import { Client } from 'pg';
import { createClaimed } from '../../src/checkpoint/compose';
import type { Binding } from '../../src/checkpoint/types';
import { checkpointKey } from '../../src/stores/checkpoint-key';
import { openCheckpointStore } from '../../src/stores/open-checkpoint-store';
import { pgStatements, statementName } from '../../src/stores/pg-statements';
import type { CheckpointStore } from '../../src/stores/checkpoint-store';
import { PgRelay } from '../helpers/pg-relay';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres';

const binding: Binding = { namespace: 'default/acme', callId: 'call-lost-insert', toolName: 'create_ticket', toolRevision: 'v1', inputFingerprint: `sha256:${'a'.repeat(64)}` };

describe('PostgreSQL: a lost claiming insert is never reported as nothing written', () => {
  let db: TestDatabase;
  let relay: PgRelay;
  let store: CheckpointStore | undefined;
  let direct: Client;

  beforeAll(async () => {
    db = await createTestDatabase();
    relay = await PgRelay.to(db.url);
    direct = new Client({ connectionString: db.url });
    direct.on('error', () => undefined);
    await direct.connect();
  });

  afterAll(async () => {
    await store?.close().catch(() => undefined);
    await direct?.end().catch(() => undefined);
    await relay?.stop();
    await db?.drop();
  });

  test('insert lost, re-read empty, re-send conflicts with the lost insert, the read of the conflicting row fails: not STORE_UNAVAILABLE', async () => {
    store = await openCheckpointStore(relay.through(db.url), { poolSize: 2, connectTimeoutMs: 3_000 });
    const sql = pgStatements('public');
    const insertName = Buffer.from(statementName(sql.INSERT));
    const existingName = Buffer.from(statementName(sql.EXISTING));
    const key = checkpointKey(binding);

    // The lost INSERT must stay uncommitted while the store re-reads: a SHARE lock blocks inserts, not reads.
    await direct.query('BEGIN');
    await direct.query('LOCK TABLE public.ttc_checkpoints IN SHARE MODE');

    let inserts = 0;
    let release!: () => void;
    const resend = new Promise<void>((done) => (release = done));
    let resendArrived!: () => void;
    const resendSeen = new Promise<void>((done) => (resendArrived = done));
    relay.inspect = (chunk) => {
      if (chunk.includes(insertName)) {
        inserts += 1;
        if (inserts === 1) return 'cut-after';
        resendArrived();
        return { hold: resend };
      }
      if (chunk.includes(existingName)) return 'kill';
      return 'forward';
    };

    const record = createClaimed(binding, { attemptId: 'attempt-1-lost', at: new Date().toISOString(), deadlineAt: new Date(Date.now() + 60_000).toISOString() });
    const outcome = store.createIfAbsent(record).then(
      (value) => ({ value }),
      (error: unknown) => ({ error: error as { code?: string; message?: string } }),
    );

    // The store re-read (nothing there yet) and re-sent the INSERT, which the relay holds.
    await resendSeen;
    await direct.query('COMMIT');
    // The lost INSERT (its server backend is still running) commits.
    for (let i = 0; i < 100; i += 1) {
      const { rows } = await direct.query('SELECT body FROM public.ttc_checkpoints WHERE key = $1', [key]);
      if (rows.length > 0) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const stored = await direct.query<{ body: string; status: string }>('SELECT body, status FROM public.ttc_checkpoints WHERE key = $1', [key]);
    expect(stored.rows).toHaveLength(1);
    expect(stored.rows[0]!.status).toBe('executing');
    expect(stored.rows[0]!.body).toContain('attempt-1-lost');
    release();

    const result = await outcome;
    // This call's own insert is durable; the store must not say "nothing was written".
    if ('error' in result) {
      expect([result.error.code, result.error.message]).not.toEqual(['STORE_UNAVAILABLE', expect.anything()]);
      expect(result.error.code).toBe('STORE_OUTCOME_UNKNOWN');
    } else {
      expect(result.value.record.execution?.attemptId).toBe('attempt-1-lost');
    }
  }, 30_000);
});
