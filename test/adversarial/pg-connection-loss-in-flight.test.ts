/**
 * Adversarial review of the PostgreSQL store: a connection lost while a statement is in
 * flight is the "lost" case the store settles by re-reading (`settleInsert`, `settleCas`). The
 * `pg` Client emits 'error' when its connection ends unexpectedly (client.js `_handleErrorEvent`),
 * and pg-pool removes its own 'error' listener from a client while it is checked out
 * (pg-pool `_acquireClient`): unless the store listens on the client it checked out, the event
 * is unhandled and the whole worker process dies instead of settling the write.
 *
 * Run in a child process (jest turns an uncaught exception into a test failure of its own): the
 * store writes through a TCP relay that resets the connection while the INSERT is in flight;
 * the child must survive, print how the call ended, and exit 0.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres';

const REPO = join(__dirname, '..', '..');

const CHILD = `
const { connect, createServer } = require('node:net');
const { openCheckpointStore } = require(${JSON.stringify(join(REPO, 'src/stores/open-checkpoint-store'))});
const { createCheckpoint } = require(${JSON.stringify(join(REPO, 'src/checkpoint/record'))});
(async () => {
  const u = new URL(process.env.TTC_DB_URL);
  const sockets = [];
  let armed = false;
  const relay = createServer((client) => {
    const upstream = connect(Number(u.port || 5432), u.hostname);
    sockets.push(client, upstream);
    client.on('error', () => {}); upstream.on('error', () => {});
    upstream.on('data', (d) => client.write(d));
    upstream.on('close', () => client.destroy());
    client.on('close', () => upstream.destroy());
    client.on('data', (d) => {
      upstream.write(d);
      // The INSERT went out: reset the connection before its answer comes back.
      if (armed && d.includes(Buffer.from('INSERT'))) { armed = false; client.resetAndDestroy(); }
    });
  });
  await new Promise((done) => relay.listen(0, '127.0.0.1', done));
  const via = new URL(u.toString()); via.hostname = '127.0.0.1'; via.port = String(relay.address().port);
  const store = await openCheckpointStore(via.toString(), { poolSize: 1, connectTimeoutMs: 3000 });
  armed = true;
  const record = createCheckpoint({ namespace: 'n', callId: 'c-crash', toolName: 't', toolRevision: '1', inputFingerprint: 'sha256:' + 'b'.repeat(64) }, { createdAt: new Date().toISOString() });
  try {
    const r = await store.createIfAbsent(record);
    console.log('SETTLED created=' + r.created);
  } catch (e) {
    console.log('SETTLED error=' + e.code);
  }
  await store.close();
  for (const s of sockets) s.destroy();
  relay.close();
})();
`;

describe('PostgreSQL: a connection lost mid-statement does not kill the process', () => {
  let db: TestDatabase;
  let dir: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    dir = mkdtempSync(join(tmpdir(), 'ttc-pg-connection-loss-'));
  });

  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await db?.drop();
  });

  test('the lost INSERT is settled (a record, or STORE_OUTCOME_UNKNOWN), and the process lives on', () => {
    const script = join(dir, 'child.js');
    writeFileSync(script, CHILD);
    const child = spawnSync(process.execPath, ['-r', 'tsx/cjs', script], {
      cwd: REPO,
      env: { ...process.env, TTC_DB_URL: db.url, NODE_PATH: join(REPO, 'node_modules') },
      encoding: 'utf8',
      timeout: 60_000,
    });
    const report = `exit ${child.status} ${child.signal ?? ''}\nstdout: ${child.stdout}\nstderr: ${child.stderr
      .split('\n')
      .filter((l) => !/^\s+at /.test(l))
      .slice(-12)
      .join('\n')}`;
    expect([child.status, child.stdout.match(/SETTLED (created=(true|false)|error=STORE_OUTCOME_UNKNOWN)/)?.[0] ?? report]).toEqual([0, expect.stringMatching(/^SETTLED /)]);
  }, 90_000);
});
