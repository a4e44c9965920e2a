/**
 * `TurnQueue` (src/stores/turn-queue.ts): a store's answers settle at most `ANSWERS_PER_TURN` per
 * event-loop turn, in the order they arrived, each exactly once; a stopped store settles what it
 * received at once (`flush`); a callback that throws stalls none behind it. Generated: bursts of
 * answers arriving in different turns, callbacks that push more.
 */
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import fc from 'fast-check';
import { ANSWERS_PER_TURN, TurnQueue } from '../../../src/stores/turn-queue';
import { turnCounter } from '../../helpers/event-loop-turns';

const run = promisify(execFile);
const ROOT = resolve(__dirname, '../../..');

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

test('bursts of answers settle in arrival order, each once, at most ANSWERS_PER_TURN per turn', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.record({ answers: fc.nat(3 * ANSWERS_PER_TURN), waitTurns: fc.nat(3), pushesMore: fc.boolean() }), { minLength: 1, maxLength: 6 }),
      async (bursts) => {
        const queue = new TurnQueue();
        const turns = turnCounter();
        const settled: Array<{ id: number; turn: number }> = [];
        let expected = 0;
        let nextId = 0;
        const pushedByCallback = new Set<number>();
        const done: Promise<void>[] = [];
        for (const burst of bursts) {
          for (let i = 0; i < burst.answers; i += 1) {
            const id = nextId++;
            expected += 1;
            done.push(
              new Promise<void>((resolve) =>
                queue.push(() => {
                  settled.push({ id, turn: turns.now() });
                  resolve();
                }),
              ),
            );
          }
          if (burst.pushesMore) {
            // A callback that pushes again: the pushed one settles after everything queued before it.
            const id = nextId++;
            const inner = nextId++;
            pushedByCallback.add(inner);
            expected += 2;
            done.push(
              new Promise<void>((resolve) =>
                queue.push(() => {
                  settled.push({ id, turn: turns.now() });
                  queue.push(() => {
                    settled.push({ id: inner, turn: turns.now() });
                    resolve();
                  });
                }),
              ),
            );
          }
          for (let t = 0; t < burst.waitTurns; t += 1) await nextTurn();
        }
        await Promise.all(done);
        turns.stop();
        expect(settled).toHaveLength(expected);
        const perTurn = new Map<number, number>();
        for (const { turn } of settled) perTurn.set(turn, (perTurn.get(turn) ?? 0) + 1);
        expect(Math.max(0, ...perTurn.values())).toBeLessThanOrEqual(ANSWERS_PER_TURN);
        expect(new Set(settled.map((s) => s.id)).size).toBe(expected);
        // Arrival order, except answers pushed by a callback: those settle after what was queued before them.
        const arrived = settled.map((s) => s.id).filter((id) => !pushedByCallback.has(id));
        expect(arrived).toEqual([...arrived].sort((a, b) => a - b));
      },
    ),
    { numRuns: 200 },
  );
});

test('answers pushed in one turn settle in that order', async () => {
  const queue = new TurnQueue();
  const order: number[] = [];
  await Promise.all(Array.from({ length: 5 * ANSWERS_PER_TURN + 1 }, (_, i) => new Promise<void>((resolve) => queue.push(() => resolve(void order.push(i))))));
  expect(order).toEqual(Array.from({ length: 5 * ANSWERS_PER_TURN + 1 }, (_, i) => i));
});

test('a callback that flushes, then pushes: each callback runs once, in order', async () => {
  const queue = new TurnQueue();
  const ran: string[] = [];
  queue.push(() => {
    ran.push('a');
    queue.flush();
    queue.push(() => ran.push('c'));
  });
  queue.push(() => ran.push('b'));
  for (let t = 0; t < 5; t += 1) await nextTurn();
  expect(ran).toEqual(['a', 'b', 'c']);
});

test('flush settles everything queued at once, in order', () => {
  const queue = new TurnQueue();
  const order: number[] = [];
  for (let i = 0; i < 3 * ANSWERS_PER_TURN; i += 1) queue.push(() => order.push(i));
  expect(order).toEqual([]);
  queue.flush();
  expect(order).toEqual(Array.from({ length: 3 * ANSWERS_PER_TURN }, (_, i) => i));
});

test('a callback that throws in its turn does not stall the ones queued behind it (the throw stays uncaught)', async () => {
  // In a child process: jest would take the uncaught exception for the test's own failure.
  const script = `
    const { TurnQueue, ANSWERS_PER_TURN } = require('./src/stores/turn-queue');
    const queue = new TurnQueue();
    const order = [];
    const thrown = [];
    process.on('uncaughtException', (error) => thrown.push(error.message));
    for (let i = 0; i < 2 * ANSWERS_PER_TURN; i += 1)
      queue.push(() => {
        order.push(i);
        if (i === 1) throw new Error('boom');
      });
    setTimeout(() => console.log(JSON.stringify({ order, thrown })), 200);
  `;
  const { stdout } = await run(process.execPath, ['-r', 'tsx/cjs', '-e', script], { cwd: ROOT, timeout: 30_000 });
  expect(JSON.parse(stdout)).toEqual({ order: Array.from({ length: 2 * ANSWERS_PER_TURN }, (_, i) => i), thrown: ['boom'] });
});

test('flush stopped by a throwing callback leaves the rest to run in a later turn', async () => {
  const queue = new TurnQueue();
  const order: number[] = [];
  for (let i = 0; i < 6; i += 1)
    queue.push(() => {
      order.push(i);
      if (i === 2) throw new Error('boom');
    });
  expect(() => queue.flush()).toThrow('boom');
  expect(order).toEqual([0, 1, 2]);
  await new Promise((resolve) => setImmediate(resolve));
  await new Promise((resolve) => setImmediate(resolve));
  expect(order).toEqual([0, 1, 2, 3, 4, 5]);
});
