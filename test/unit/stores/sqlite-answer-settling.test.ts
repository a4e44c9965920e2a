/**
 * The SQLite store settles the answers of one batch a few per event-loop turn
 * (`ANSWERS_PER_TURN`, src/stores/turn-queue.ts): the continuations of 16 concurrent calls
 * answered by one group commit do not all run in one turn, so timers, heartbeats and other
 * activities get the loop between them. And answers already received stand when the worker thread
 * stops before they were all settled: a committed write is reported stored, not unknown.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CheckpointError } from '../../../src/checkpoint/errors';
import { SqliteThread } from '../../../src/stores/sqlite-thread';
import { ANSWERS_PER_TURN } from '../../../src/stores/turn-queue';
import { SQLITE_MIGRATIONS } from '../../../src/stores/migrations/sqlite';
import { busy, mostPerCount, timerBeats, turnCounter } from '../../helpers/event-loop-turns';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'ttc-sqlite-settle-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const open = (name: string): Promise<SqliteThread> =>
  SqliteThread.open({ path: join(dir, name), busyTimeoutMs: 5_000, migrations: SQLITE_MIGRATIONS.map(({ version, sql }) => ({ version, sql })) });

test(`the answers of one batch settle at most ${ANSWERS_PER_TURN} per turn of the event loop`, async () => {
  const thread = await open('turns.db');
  try {
    const turns = turnCounter();
    // Twelve reads sent in one turn travel as one batch and come back in one answer.
    const seen = await Promise.all(Array.from({ length: 12 }, (_, i) => thread.request<null>({ op: 'get', key: `ck1-absent-${i}` }).then(() => turns.now())));
    turns.stop();
    const perTurn = new Map<number, number>();
    for (const turn of seen) perTurn.set(turn, (perTurn.get(turn) ?? 0) + 1);
    expect(Math.max(...perTurn.values())).toBeLessThanOrEqual(ANSWERS_PER_TURN);
    expect(perTurn.size).toBeGreaterThanOrEqual(12 / ANSWERS_PER_TURN);
  } finally {
    await thread.close();
  }
});

test(`the answers of one batch: at most ${ANSWERS_PER_TURN} continuations run between two firings of a 1 ms timer`, async () => {
  const thread = await open('heartbeat.db');
  try {
    const timer = timerBeats();
    // Sixteen reads sent in one turn come back in one answer; each continuation holds the loop past the timer's due time.
    const seen = await Promise.all(
      Array.from({ length: 16 }, (_, i) =>
        thread.request<null>({ op: 'get', key: `ck1-beat-${i}` }).then(() => {
          busy(3);
          return timer.beats();
        }),
      ),
    );
    timer.stop();
    expect(mostPerCount(seen)).toBeLessThanOrEqual(ANSWERS_PER_TURN);
  } finally {
    await thread.close();
  }
});

test('the store keeps answering under fake timers: it does not wait on a setImmediate a test may fake', async () => {
  const thread = await open('fake-timers.db');
  jest.useFakeTimers({ doNotFake: ['setTimeout', 'clearTimeout', 'nextTick', 'queueMicrotask'] });
  try {
    const found = await Promise.all(Array.from({ length: 2 * ANSWERS_PER_TURN + 1 }, (_, i) => thread.request<null>({ op: 'get', key: `ck1-fake-${i}` })));
    expect(found).toEqual(found.map(() => null));
  } finally {
    jest.useRealTimers();
    await thread.close();
  }
});

test('answers received before the worker thread stopped settle with their values, not as unknown', async () => {
  const thread = await open('died.db');
  const stopped = thread as unknown as { died(error: Error): void };
  const settled: Array<'value' | string> = [];
  const requests = Array.from({ length: 12 }, (_, i) =>
    thread.request<null>({ op: 'get', key: `ck1-absent-${i}` }).then(
      () => {
        settled.push('value');
        // The first settled answer simulates the thread's exit event arriving between two settling turns.
        if (settled.length === 1) stopped.died(new Error('exited with code 1'));
      },
      (error: unknown) => settled.push(error instanceof CheckpointError ? error.code : String(error)),
    ),
  );
  await Promise.all(requests);
  expect(settled).toEqual(Array.from({ length: 12 }, () => 'value'));
  // Later calls fail as the store being unavailable.
  await expect(thread.request({ op: 'get', key: 'ck1-after' })).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
  await thread.close().catch(() => undefined);
});
