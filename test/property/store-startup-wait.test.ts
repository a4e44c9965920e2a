/**
 * The worker's wait for its store at start (`openStoreWhenReady`), over every sequence of open
 * failures: a store that is starting up (refused or timed-out connections, 57P03, a lost
 * connection) is tried again with backoff, each wait logged and bounded by the total wait; a
 * configuration error (refused login, unknown database, INVALID_CONFIG, untrusted owners,
 * UNSUPPORTED_SCHEMA, INVALID_ARGUMENT) ends it at once. The clock and the sleeps are injected.
 */
import fc from 'fast-check';
import { CheckpointError, isCheckpointError } from '../../src/checkpoint/errors';
import type { CheckpointStore } from '../../src/stores/checkpoint-store';
import { isStoreStartingUp, openStoreWhenReady } from '../../src/stores/store-startup';

const STARTING_UP = [
  { driverCode: '57P03', message: 'the database system is starting up' },
  { driverCode: '57P01', message: 'terminating connection due to administrator command' },
  { driverCode: 'ECONNREFUSED', message: 'connect ECONNREFUSED 127.0.0.1:5432' },
  { driverCode: 'ETIMEDOUT', message: 'connect ETIMEDOUT' },
  { driverCode: 'EAI_AGAIN', message: 'getaddrinfo EAI_AGAIN db' },
  { driverCode: '08006', message: 'connection failure' },
  { driverCode: '53300', message: 'sorry, too many clients already' },
  { driverCode: null, message: 'timeout exceeded when trying to connect' },
  { driverCode: null, message: 'Connection terminated due to connection timeout' },
];

const CONFIGURATION: readonly (() => CheckpointError)[] = [
  () => unavailable('28P01', 'password authentication failed for user "ttc"'),
  () => unavailable('28000', 'no pg_hba.conf entry for host'),
  () => unavailable('3D000', 'database "ttc" does not exist'),
  () => unavailable('42501', 'permission denied for schema ttc'),
  () => unavailable('ENOTFOUND', 'getaddrinfo ENOTFOUND no-such-host'),
  () => new CheckpointError('INVALID_CONFIG', 'PostgreSQL postgres://db/ttc: schema "ttc" does not exist', { field: 'postgresSchema' }),
  () => new CheckpointError('INVALID_CONFIG', 'table "ttc_checkpoints" is owned by role "mallory"', { field: 'postgresSchema', owner: 'mallory' }),
  () => new CheckpointError('INVALID_ARGUMENT', 'store URL "postgres://" names no host', { field: 'url' }),
  () => new CheckpointError('UNSUPPORTED_SCHEMA', 'database schema version 9 is newer than this code knows', {}),
];

function unavailable(driverCode: string | null, message: string): CheckpointError {
  return new CheckpointError('STORE_UNAVAILABLE', `PostgreSQL postgres://db/ttc failed to connect: ${driverCode ?? ''} ${message}; nothing was written`, {
    where: 'postgres://db/ttc',
    driverCode,
  });
}

const STORE = { close: async () => undefined } as unknown as CheckpointStore;

describe('waiting for the store at worker start', () => {
  it('opens the store once it answers, trying again with growing, capped, logged waits; gives up only past the total wait', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ failure: fc.constantFrom(...STARTING_UP), tookMs: fc.integer({ min: 0, max: 6_000 }) }), { maxLength: 25 }),
        fc.integer({ min: 0, max: 120_000 }),
        fc.integer({ min: 1, max: 2_000 }),
        fc.integer({ min: 1, max: 20_000 }),
        async (failures, maxWaitMs, initialIntervalMs, maximumIntervalMs) => {
          let clock = 0;
          let opens = 0;
          const sleeps: number[] = [];
          const logged: string[] = [];
          const open = async (): Promise<CheckpointStore> => {
            const next = failures[opens];
            opens += 1;
            if (next === undefined) return STORE;
            clock += next.tookMs;
            throw unavailable(next.failure.driverCode, next.failure.message);
          };
          let outcome: CheckpointStore | unknown;
          try {
            outcome = await openStoreWhenReady(open, 'postgres://db/ttc', {
              maxWaitMs,
              initialIntervalMs,
              maximumIntervalMs,
              now: () => clock,
              sleep: async (ms) => {
                sleeps.push(ms);
                clock += ms;
              },
              log: (message) => logged.push(message),
            });
          } catch (error) {
            outcome = error;
          }
          // Every wait is logged (naming the try and the reason), stays within the cap and doubles until it.
          expect(logged).toHaveLength(sleeps.length);
          logged.forEach((line, i) => expect(line).toContain(`(try ${i + 1}, `));
          sleeps.forEach((ms, i) => expect(ms).toBe(Math.min(maximumIntervalMs, initialIntervalMs * 2 ** i)));
          // The total wait never passes the bound.
          expect(sleeps.reduce((sum, ms) => sum + ms, 0)).toBeLessThanOrEqual(maxWaitMs);
          if (outcome === STORE) {
            expect(opens).toBe(failures.length + 1);
          } else {
            // Given up: only when one more wait would have passed the bound, with the last reason.
            expect(isCheckpointError(outcome, 'STORE_UNAVAILABLE')).toBe(true);
            expect(opens).toBeLessThanOrEqual(failures.length);
            const last = failures[opens - 1]!;
            expect((outcome as Error).message).toContain(last.failure.message);
            const nextWait = Math.min(maximumIntervalMs, initialIntervalMs * 2 ** sleeps.length);
            expect(clock + nextWait).toBeGreaterThan(maxWaitMs);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('ends at once on a configuration error, whatever starting-up failures came before it', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.constantFrom(...STARTING_UP), { maxLength: 6 }), fc.constantFrom(...CONFIGURATION), async (before, configuration) => {
        const refused = configuration();
        let opens = 0;
        const open = async (): Promise<CheckpointStore> => {
          opens += 1;
          const next = before[opens - 1];
          if (next !== undefined) throw unavailable(next.driverCode, next.message);
          if (opens === before.length + 1) throw refused;
          return STORE;
        };
        let sleeps = 0;
        await expect(openStoreWhenReady(open, 'postgres://db/ttc', { maxWaitMs: 86_400_000, now: () => 0, sleep: async () => void (sleeps += 1) })).rejects.toBe(refused);
        expect(opens).toBe(before.length + 1);
        expect(sleeps).toBe(before.length);
      }),
      { numRuns: 200 },
    );
    for (const make of CONFIGURATION) expect(isStoreStartingUp(make())).toBe(false);
    for (const { driverCode, message } of STARTING_UP) expect(isStoreStartingUp(unavailable(driverCode, message))).toBe(true);
  });
});
