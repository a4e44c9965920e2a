/**
 * Adversarial review of the SQLite store on a worker thread with group commit: a caller
 * is told "written" only for a durable write, and a record is old or new, never torn.
 *
 * 1. close() while writes of one event-loop turn are pending (not yet sent to the thread): each
 *    write either resolves and is in the file afterwards, or fails STORE_UNAVAILABLE and is not.
 * 2. SIGKILL of a process in the middle of group commits (several processes on one file): every
 *    write the killed process was told succeeded is in the file, the file passes integrity_check,
 *    and every row decodes (no torn record).
 * How they fail: test 1 when close() drops or fails a write that is then found in the file (or
 * reports ok for one that is not); test 2 when a write acknowledged before its COMMIT returned is
 * missing after the kill, or a row is quarantined. (Not verified against a mutated executor: a
 * process kill keeps the OS page cache, so an answer sent after COMMIT but before fsync would
 * still pass; power loss is out of reach here.)
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { createClaimed } from '../../src/checkpoint/compose';
import type { Binding } from '../../src/checkpoint/types';
import { openCheckpointStore } from '../../src/stores/open-checkpoint-store';

const REPO = join(__dirname, '..', '..');
const binding = (callId: string): Binding => ({ namespace: 'default/acme', callId, toolName: 'create_ticket', toolRevision: 'v1', inputFingerprint: `sha256:${'c'.repeat(64)}` });
const claimed = (callId: string) =>
  createClaimed(binding(callId), { attemptId: `attempt-1-${callId}`, at: new Date().toISOString(), deadlineAt: new Date(Date.now() + 60_000).toISOString() });

describe('SQLite: close() during pending writes, SIGKILL mid-group-commit', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-sqlite-close-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  test('close() in the same turn as 40 writes: each resolved write is durable, each failed one is STORE_UNAVAILABLE and absent', async () => {
    const file = join(dir, 'close.db');
    const store = await openCheckpointStore(`sqlite:${file}`);
    const ids = Array.from({ length: 40 }, (_, i) => `close-${i}`);
    const writes = ids.map((id) =>
      store.createIfAbsent(claimed(id)).then(
        () => 'ok',
        (e: { code?: string }) => e.code ?? 'raw',
      ),
    );
    const closing = store.close();
    const late = await store.createIfAbsent(claimed('after-close')).then(
      () => 'ok',
      (e: { code?: string }) => e.code ?? 'raw',
    );
    const answers = await Promise.all(writes);
    await closing;
    expect(late).toBe('STORE_UNAVAILABLE');
    const db = new Database(file, { readonly: true });
    try {
      const stored = new Set((db.prepare('SELECT call_id FROM ttc_checkpoints').all() as Array<{ call_id: string }>).map((r) => r.call_id));
      ids.forEach((id, i) => {
        expect([id, answers[i], stored.has(id)]).toEqual([id, answers[i], answers[i] === 'ok']);
        expect(['ok', 'STORE_UNAVAILABLE']).toContain(answers[i]);
      });
      expect(stored.has('after-close')).toBe(false);
    } finally {
      db.close();
    }
  });

  test('SIGKILL of two writer processes mid-group-commit: every acknowledged write is in the file, no row is torn', async () => {
    const file = join(dir, 'kill.db');
    // Create the schema first so both children start writing at once.
    await (await openCheckpointStore(`sqlite:${file}`)).close();
    const script = join(dir, 'writer.js');
    writeFileSync(
      script,
      `
const { openCheckpointStore } = require(${JSON.stringify(join(REPO, 'src/stores/open-checkpoint-store'))});
const { createClaimed, completeAndDeliver } = require(${JSON.stringify(join(REPO, 'src/checkpoint/compose'))});
(async () => {
  const store = await openCheckpointStore('sqlite:' + process.argv[2]);
  const tag = process.argv[3];
  let n = 0;
  const lane = async (lane) => {
    for (;;) {
      const id = tag + '-' + lane + '-' + (n++);
      const b = { namespace: 'default/acme', callId: id, toolName: 'create_ticket', toolRevision: 'v1', inputFingerprint: 'sha256:' + 'c'.repeat(64) };
      const at = new Date().toISOString();
      const { record } = await store.createIfAbsent(createClaimed(b, { attemptId: 'attempt-1-' + id, at, deadlineAt: at }));
      process.stdout.write('C ' + id + '\\n');
      const done = completeAndDeliver(record, { attemptId: 'attempt-1-' + id, deliveryId: 'd-' + id, at, result: { ok: true, output: { pad: 'x'.repeat(2000) } } });
      if (await store.compareAndSwap(done.expectedRevision, done.next, record)) process.stdout.write('D ' + id + '\\n');
    }
  };
  process.stdout.write('READY\\n');
  await Promise.all(Array.from({ length: 16 }, (_, i) => lane(i)));
})();
`,
    );
    const children = ['p1', 'p2'].map((tag) => {
      const child = spawn(process.execPath, ['-r', 'tsx/cjs', script, file, tag], {
        cwd: REPO,
        env: { ...process.env, NODE_PATH: join(REPO, 'node_modules') },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      const exited = new Promise<void>((done) => child.once('exit', () => done()));
      return { child, output: () => out, exited };
    });
    // Let them reach steady group commits, then kill both at once mid-flight.
    const started = Date.now();
    while (children.some((c) => (c.output().match(/^D /gm) ?? []).length < 200) && Date.now() - started < 30_000) await new Promise((r) => setTimeout(r, 50));
    for (const c of children) c.child.kill('SIGKILL');
    await Promise.all(children.map((c) => c.exited));

    const acknowledged = new Map<string, 'executing' | 'delivered'>();
    for (const c of children) {
      for (const line of c.output().split('\n')) {
        const [kind, id] = line.split(' ');
        if (kind === 'C' && id !== undefined && !acknowledged.has(id)) acknowledged.set(id, 'executing');
        if (kind === 'D' && id !== undefined) acknowledged.set(id, 'delivered');
      }
    }
    expect(acknowledged.size).toBeGreaterThan(400);

    const db = new Database(file);
    try {
      expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
    } finally {
      db.close();
    }
    const store = await openCheckpointStore(`sqlite:${file}`);
    try {
      const missing: string[] = [];
      for (const [id, status] of acknowledged) {
        const record = await store.get(binding(id));
        if (record === null) missing.push(id);
        else if (status === 'delivered' && record.status !== 'delivered') missing.push(`${id} (${record.status})`);
      }
      expect(missing).toEqual([]);
      // Every row decodes (a torn or partial row would be quarantined).
      expect(await store.listQuarantined({ limit: 10_000 })).toEqual([]);
      const all = await store.listByStatus(['executing', 'delivered'], { limit: 10_000 });
      expect(all.every((r) => (r.status === 'executing' && r.revision === 1) || (r.status === 'delivered' && r.revision === 4))).toBe(true);
    } finally {
      await store.close();
    }
  }, 90_000);
});
