/**
 * `ttc prune --conversations-older-than`: spawned as a user runs it against a real
 * SQLite store file: without the flag conversation logs are kept, with it the logs whose newest
 * entry is older go; a duration or an ISO time; anything else is refused naming the option.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { cutoff } from '../../../src/cli/prune';
import { isCheckpointError } from '../../../src/checkpoint/errors';
import { openCheckpointStore } from '../../../src/stores/open-checkpoint-store';
import { runCli } from '../../helpers/cli';

jest.setTimeout(60_000);

describe('cutoff', () => {
  const NOW = Date.parse('2026-03-10T12:00:00.000Z');
  test('a duration counts back from now; an ISO time is taken as is', () => {
    expect(cutoff('30d', NOW)).toBe('2026-02-08T12:00:00.000Z');
    expect(cutoff('12h', NOW)).toBe('2026-03-10T00:00:00.000Z');
    expect(cutoff('2026-01-31T00:00:00Z', NOW)).toBe('2026-01-31T00:00:00.000Z');
  });

  test('anything else is INVALID_ARGUMENT naming the option', () => {
    for (const bad of ['yesterday', '-5d', '2026-02-30T00:00:00Z', '']) {
      let error: unknown;
      try {
        cutoff(bad, NOW);
      } catch (e) {
        error = e;
      }
      expect(isCheckpointError(error, 'INVALID_ARGUMENT') && error.details.field).toBe('--conversations-older-than');
    }
  });
});

describe('ttc prune', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-prune-cli-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test('keeps conversation logs without the flag; with it deletes the logs whose newest entry is older', async () => {
    const file = join(dir, 'checkpoints.db');
    const store = await openCheckpointStore(`sqlite:${file}`);
    await store.putConversationEntries('old-log', [{ key: 'm/000000000', value: 'a' }]);
    await store.putConversationEntries('new-log', [{ key: 'm/000000000', value: 'b' }]);
    await store.close();
    const db = new Database(file);
    db.prepare("UPDATE ttc_conversation_entries SET created_at = '2020-01-01T00:00:00.000Z' WHERE log_id = 'old-log'").run();
    const count = (): number => (db.prepare('SELECT count(*) AS n FROM ttc_conversation_entries').get() as { n: number }).n;
    const env = { PATH: process.env.PATH, HOME: process.env.HOME, TTC_STORE_URL: `sqlite:${file}` };

    const without = await runCli(['prune'], env);
    expect(without).toMatchObject({ code: 0 });
    expect(count()).toBe(2);

    const withFlag = await runCli(['prune', '--conversations-older-than', '30d'], env);
    expect(withFlag.stderr).toBe('');
    expect(withFlag).toMatchObject({ code: 0 });
    expect(withFlag.stdout).toMatch(/pruned 1 delivered checkpoint\(s\) .* and conversation log\(s\) last written before /);
    expect(count()).toBe(1);

    const bad = await runCli(['prune', '--conversations-older-than', 'soon'], env);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('--conversations-older-than');
    db.close();
  });
});
