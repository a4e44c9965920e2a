/**
 * The one conformance suite every side store passes (docs/protocol.md#side-stores), against a real
 * database: create/get/compare-and-swap semantics, bindings, racing claimers in separate processes,
 * a writer killed mid-transaction, quarantine of damaged rows, prune, encryption at rest and
 * failing closed while the database is unavailable. Called once per store by `sqlite.test.ts` and
 * `postgres.test.ts`.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import canonicalize from 'canonicalize';
import { fingerprintInput } from '../../src/checkpoint/digest';
import { CHECKPOINT_ERROR_CODES, isCheckpointError, type CheckpointErrorCode } from '../../src/checkpoint/errors';
import { completeAndDeliver, createClaimed } from '../../src/checkpoint/compose';
import { createCheckpoint } from '../../src/checkpoint/record';
import { decideCheckpoint } from '../../src/checkpoint/decide';
import { claimDelivery, claimExecution, completeDelivery, completeExecution, markExecutionUncertain } from '../../src/checkpoint/transitions';
import type { Binding, CheckpointRecord, Status } from '../../src/checkpoint/types';
import { checkpointKey } from '../../src/stores/checkpoint-key';
import type { CheckpointStore, CheckpointStoreOptions } from '../../src/stores/checkpoint-store';
import { describeGroupWrites, type GroupRaceResult } from './group-writes-conformance';
import type { SerializedOptions } from './store-worker';

/** A row as the database holds it, read and written around the store. */
export interface RawRow {
  readonly key: string;
  readonly status: string;
  readonly revision: number;
  readonly updatedAt: string;
  readonly body: string;
}

/** Direct access to the table, for damaging rows the way disks, bugs and attackers do. */
export interface RawAccess {
  row(key: string): Promise<RawRow | null>;
  /** Overwrites columns of one row, bypassing the store. */
  update(key: string, columns: Partial<Pick<RawRow, 'body' | 'status'>>): Promise<void>;
  count(): Promise<number>;
  /** The database's own consistency check: 'ok' when the file/table and its indexes are sound. */
  integrity(): Promise<string>;
  /** The stored body of a conversation entry, or null. */
  entryBody(logId: string, key: string): Promise<string | null>;
  /** Overwrites columns of one conversation entry, bypassing the store (`createdAt` ISO-8601 UTC). */
  updateEntry(logId: string, key: string, columns: { readonly body?: string; readonly createdAt?: string }): Promise<void>;
  /** How many conversation entries the table holds. */
  entryCount(): Promise<number>;
}

/** A fresh, empty database of one store kind. */
export interface StoreTarget {
  /** The URL `openCheckpointStore` takes; worker processes open it too. */
  readonly url: string;
  /** Opens a store here; every store opened is closed by `dispose`. */
  open(options?: CheckpointStoreOptions): Promise<CheckpointStore>;
  readonly raw: RawAccess;
  dispose(): Promise<void>;
}

/** A store whose database can be made unreachable (`begin`) and reachable again (`end`). */
export interface Outage {
  readonly store: CheckpointStore;
  begin(): Promise<void>;
  end(): Promise<void>;
  dispose(): Promise<void>;
}

/** How the suite gets databases of one store kind. */
export interface ConformanceFactory {
  fresh(): Promise<StoreTarget>;
  outage(): Promise<Outage>;
}

const T0 = Date.parse('2030-01-01T00:00:00.000Z');
/** An ISO-8601 UTC time `seconds` after the suite's epoch. */
const at = (seconds: number): string => new Date(T0 + seconds * 1000).toISOString();
const HMAC = { hmacKey: Buffer.alloc(32, 7), keyId: 'seal-1' } as const;
const WORKER = join(__dirname, 'store-worker.ts');
const REPO = join(__dirname, '..', '..');

/** A valid binding, unique per call of the suite unless `callId` is given. */
export function makeBinding(callId: string = randomBytes(6).toString('hex'), overrides: Partial<Binding> = {}): Binding {
  return { namespace: 'tenant-a', callId, toolName: 'create_ticket', toolRevision: '1', inputFingerprint: fingerprintInput({ callId }), ...overrides };
}

/** Creates a record and drives it to `status` through the store, with every transition `seconds` after the epoch. */
export async function driveTo(store: CheckpointStore, binding: Binding, status: Status, seconds = 0, payload: unknown = { ok: true }): Promise<CheckpointRecord> {
  let record = (await store.createIfAbsent(createCheckpoint(binding, { createdAt: at(seconds) }))).record;
  type Step = (r: CheckpointRecord) => ReturnType<typeof claimExecution>;
  const steps: Record<Status, Step[]> = {
    ready: [],
    executing: [(r) => claimExecution(r, { attemptId: 'a1', at: at(seconds) })],
    uncertain: [(r) => claimExecution(r, { attemptId: 'a1', at: at(seconds) }), (r) => markExecutionUncertain(r, { attemptId: 'a1', at: at(seconds), reason: 'timeout' })],
    completed: [(r) => claimExecution(r, { attemptId: 'a1', at: at(seconds) }), (r) => completeExecution(r, { attemptId: 'a1', at: at(seconds), result: payload })],
    delivering: [
      (r) => claimExecution(r, { attemptId: 'a1', at: at(seconds) }),
      (r) => completeExecution(r, { attemptId: 'a1', at: at(seconds), result: payload }),
      (r) => claimDelivery(r, { deliveryId: 'd1', at: at(seconds) }),
    ],
    delivered: [
      (r) => claimExecution(r, { attemptId: 'a1', at: at(seconds) }),
      (r) => completeExecution(r, { attemptId: 'a1', at: at(seconds), result: payload }),
      (r) => claimDelivery(r, { deliveryId: 'd1', at: at(seconds) }),
      (r) => completeDelivery(r, { deliveryId: 'd1', at: at(seconds) }),
    ],
  };
  for (const transition of steps[status]) {
    const t = transition(record);
    if (!(await store.compareAndSwap(t.expectedRevision, t.next))) throw new Error(`CAS to ${t.next.status} failed`);
    record = t.next;
  }
  return record;
}

/** Awaits `promise`, expecting a CheckpointError of `code`; returns it for more assertions. */
export async function expectCode(promise: Promise<unknown>, code: CheckpointErrorCode): Promise<{ code: string; message: string; details: Record<string, unknown> }> {
  let caught: unknown;
  try {
    await promise;
  } catch (error) {
    caught = error;
  }
  if (!isCheckpointError(caught)) throw new Error(`expected CheckpointError ${code}, got ${caught instanceof Error ? caught.stack : String(caught)}`);
  expect(caught.code).toBe(code);
  return caught as unknown as { code: string; message: string; details: Record<string, unknown> };
}

/**
 * Registers the conformance suite for one store.
 *
 * @param name the store's name in test titles.
 * @param factory fresh databases and outages of that store kind.
 */
export function describeStoreConformance(name: string, factory: ConformanceFactory): void {
  describe(`${name} store conformance (docs/protocol.md#side-stores)`, () => {
    let target: StoreTarget;
    let store: CheckpointStore;

    beforeEach(async () => {
      target = await factory.fresh();
      store = await target.open();
    });

    afterEach(async () => {
      await target.dispose();
    });

    describe('create, get and compare-and-swap', () => {
      test('get of an absent binding is null', async () => {
        expect(await store.get(makeBinding())).toBeNull();
      });

      test('createIfAbsent inserts once and then returns the stored record, never overwriting it', async () => {
        const binding = makeBinding();
        const fresh = createCheckpoint(binding, { createdAt: at(0) });
        expect(await store.createIfAbsent(fresh)).toEqual({ created: true, record: fresh });
        const claim = claimExecution(fresh, { attemptId: 'a1', at: at(1) });
        expect(await store.compareAndSwap(0, claim.next)).toBe(true);

        const again = await store.createIfAbsent(createCheckpoint(binding, { createdAt: at(2) }));

        expect(again).toEqual({ created: false, record: claim.next });
        expect(await store.get(binding)).toEqual(claim.next);
      });

      test('getByCall finds the record holding (namespace, callId) whatever its tool, revision or fingerprint; null for another call', async () => {
        const binding = makeBinding();
        const claimed = await driveTo(store, binding, 'executing', 0);

        expect(await store.getByCall(binding.namespace, binding.callId)).toEqual(claimed);
        expect(await store.getByCall(binding.namespace, `${binding.callId}-other`)).toBeNull();
        expect(await store.getByCall(`${binding.namespace}-other`, binding.callId)).toBeNull();
        await expectCode(store.getByCall('', binding.callId), 'INVALID_ARGUMENT');
      });

      test('a compare-and-swap from the stored revision replaces the record and returns true', async () => {
        const binding = makeBinding();
        const fresh = (await store.createIfAbsent(createCheckpoint(binding, { createdAt: at(0) }))).record;
        const claim = claimExecution(fresh, { attemptId: 'a1', at: at(1) });
        expect(await store.compareAndSwap(claim.expectedRevision, claim.next)).toBe(true);
        const done = completeExecution(claim.next, { attemptId: 'a1', at: at(2), result: { ticket: 'T-1', tags: ['x', 'ü'] } });
        expect(await store.compareAndSwap(done.expectedRevision, done.next)).toBe(true);

        const stored = await store.get(binding);

        expect(stored).toEqual(done.next);
        expect(stored?.revision).toBe(2);
        expect(Object.isFrozen(stored)).toBe(true);
      });

      test('a stale revision is refused: false, and the stored record is unchanged', async () => {
        const binding = makeBinding();
        const fresh = (await store.createIfAbsent(createCheckpoint(binding, { createdAt: at(0) }))).record;
        const first = claimExecution(fresh, { attemptId: 'a1', at: at(1) });
        const second = claimExecution(fresh, { attemptId: 'a2', at: at(1) });
        expect(await store.compareAndSwap(0, first.next)).toBe(true);
        const before = await target.raw.row(checkpointKey(binding));

        expect(await store.compareAndSwap(0, second.next)).toBe(false);

        expect(await store.get(binding)).toEqual(first.next);
        expect(await target.raw.row(checkpointKey(binding))).toEqual(before);
      });

      test('a compare-and-swap on a record that moved on is false and changes nothing', async () => {
        const binding = makeBinding();
        const completed = await driveTo(store, binding, 'completed', 10);
        const stale = claimExecution(createCheckpoint(binding, { createdAt: at(10) }), { attemptId: 'late', at: at(11) });
        const before = await target.raw.row(checkpointKey(binding));

        expect(await store.compareAndSwap(0, stale.next)).toBe(false);
        const executing = claimExecution(createCheckpoint(binding, { createdAt: at(10) }), { attemptId: 'a1', at: at(10) }).next;
        const lateResult = completeExecution(executing, { attemptId: 'a1', at: at(12), result: { other: true } });
        expect(await store.compareAndSwap(1, lateResult.next)).toBe(false);
        expect(await store.get(binding)).toEqual(completed);

        expect(await target.raw.row(checkpointKey(binding))).toEqual(before);
      });

      test('a compare-and-swap on an absent record is false and creates nothing', async () => {
        const binding = makeBinding();
        const claim = claimExecution(createCheckpoint(binding, { createdAt: at(0) }), { attemptId: 'a1', at: at(1) });

        expect(await store.compareAndSwap(0, claim.next)).toBe(false);

        expect(await store.get(binding)).toBeNull();
        expect(await target.raw.count()).toBe(0);
      });

      test('composed writes (docs/protocol.md#cost): a claimed record inserted at revision 1, its result and delivery in one compare-and-swap to revision 4; the same write from a stale read changes nothing', async () => {
        const binding = makeBinding();
        const claimed = createClaimed(binding, { attemptId: 'a1', at: at(0), deadlineAt: at(30) });
        expect(await store.createIfAbsent(claimed)).toEqual({ created: true, record: claimed });
        expect((await store.createIfAbsent(createClaimed(binding, { attemptId: 'a2', at: at(1) }))).record).toEqual(claimed);

        const done = completeAndDeliver(claimed, { attemptId: 'a1', deliveryId: 'd1', at: at(2), result: { ok: true } });
        expect(done.next).toMatchObject({
          status: 'delivered',
          revision: 4,
          createdAt: at(0),
          execution: { claimedAt: at(0), finishedAt: at(2) },
          delivery: { claimedAt: at(2), deliveredAt: at(2) },
        });
        const mark = markExecutionUncertain(claimed, { attemptId: 'a1', at: at(1), reason: 'lost' });
        expect(await store.compareAndSwap(mark.expectedRevision, mark.next, claimed)).toBe(true);

        expect(await store.compareAndSwap(done.expectedRevision, done.next, claimed)).toBe(false);
        expect(await store.get(binding)).toEqual(mark.next);
        const again = completeAndDeliver(mark.next, { attemptId: 'a1', deliveryId: 'd1', at: at(3), result: { ok: true } });
        expect(await store.compareAndSwap(again.expectedRevision, again.next, mark.next)).toBe(true);
        expect(await store.get(binding)).toEqual(again.next);
        expect(again.next.revision).toBe(5);
      });

      test('next.revision must be above expectedRevision: INVALID_ARGUMENT, nothing written', async () => {
        const binding = makeBinding();
        const fresh = (await store.createIfAbsent(createCheckpoint(binding, { createdAt: at(0) }))).record;
        const claim = claimExecution(fresh, { attemptId: 'a1', at: at(1) });

        const error = await expectCode(store.compareAndSwap(1, claim.next), 'INVALID_ARGUMENT');

        expect(error.details.field).toBe('next.revision');
        expect(await store.get(binding)).toEqual(fresh);
      });

      test('an invalid record is refused before it reaches the database: INVALID_CHECKPOINT', async () => {
        const binding = makeBinding();
        const fresh = createCheckpoint(binding, { createdAt: at(0) });

        await expectCode(store.createIfAbsent({ ...fresh, status: 'completed' }), 'INVALID_CHECKPOINT');

        expect(await target.raw.count()).toBe(0);
      });
    });

    describe('compare-and-swap from the record it was computed from (expected): the body must still be that record', () => {
      const corruptions: ReadonlyArray<{ readonly name: string; damage(row: RawRow, other: RawRow): string }> = [
        { name: 'bytes of the body replaced', damage: (r) => r.body.slice(0, 40) + '#garbage#' + r.body.slice(49) },
        { name: 'the body truncated', damage: (r) => r.body.slice(0, Math.floor(r.body.length / 2)) },
        // A well-formed body at the same revision that is not the one the attempt read (a restore, a bug, an attacker without the seal key).
        { name: 'another well-formed body at the same revision', damage: (r) => edit(r.body, (v) => ((v.execution as Record<string, unknown>).attemptId = 'someone-else')) },
      ];

      test.each(corruptions)('$name after the read, revision column intact: false, the row is not changed', async ({ damage }) => {
        const binding = makeBinding();
        await driveTo(store, binding, 'executing', 0);
        const read = (await store.get(binding))!;
        const key = checkpointKey(binding);
        const original = (await target.raw.row(key))!;
        await target.raw.update(key, { body: damage(original, original) });
        const damaged = (await target.raw.row(key))!;
        expect(damaged.revision).toBe(read.revision);
        const done = completeExecution(read, { attemptId: 'a1', at: at(1), result: { ok: true } });

        expect(await store.compareAndSwap(done.expectedRevision, done.next, read)).toBe(false);

        expect(await target.raw.row(key)).toEqual(damaged);
      });

      test('a body damaged after the read, then read again: get quarantines it and the earlier read still cannot overwrite it', async () => {
        const binding = makeBinding();
        const read = await driveTo(store, binding, 'executing', 0);
        const key = checkpointKey(binding);
        await target.raw.update(key, { body: 'not json at all' });
        const damaged = (await target.raw.row(key))!;

        await expectCode(store.get(binding), 'INVALID_CHECKPOINT');
        const uncertain = markExecutionUncertain(read, { attemptId: 'a1', at: at(1), reason: 'timeout' });
        expect(await store.compareAndSwap(uncertain.expectedRevision, uncertain.next, read)).toBe(false);

        expect(await target.raw.row(key)).toEqual(damaged);
      });

      test('records from get, getByCall, createIfAbsent, listByStatus and a won compare-and-swap are all accepted as expected', async () => {
        for (const options of [{}, { ...HMAC, encryptionKey: Buffer.alloc(32, 3), encryptionKeyId: 'enc-3' }]) {
          const s = await target.open(options);
          const binding = makeBinding();
          const created = (await s.createIfAbsent(createCheckpoint(binding, { createdAt: at(0) }))).record;
          const claim = claimExecution(created, { attemptId: 'a1', at: at(1) });
          expect(await s.compareAndSwap(claim.expectedRevision, claim.next, created)).toBe(true);
          const done = completeExecution(claim.next, { attemptId: 'a1', at: at(2), result: { secret: 'x' } });
          expect(await s.compareAndSwap(done.expectedRevision, done.next, claim.next)).toBe(true);
          const fromGet = (await s.get(binding))!;
          const delivering = claimDelivery(fromGet, { deliveryId: 'd1', at: at(3) });
          expect(await s.compareAndSwap(delivering.expectedRevision, delivering.next, fromGet)).toBe(true);
          const fromCall = (await s.getByCall(binding.namespace, binding.callId))!;
          const delivered = completeDelivery(fromCall, { deliveryId: 'd1', at: at(4) });
          expect(await s.compareAndSwap(delivered.expectedRevision, delivered.next, fromCall)).toBe(true);
          const again = await s.createIfAbsent(createCheckpoint(binding, { createdAt: at(5) }));
          expect(again.created).toBe(false);
          expect(again.record).toEqual(delivered.next);

          const other = makeBinding();
          await driveTo(s, other, 'executing', 0);
          const [listed] = (await s.listByStatus(['executing'])).filter((r) => r.binding.callId === other.callId);
          const uncertain = markExecutionUncertain(listed!, { attemptId: 'a1', at: at(6), reason: 'timeout' });
          expect(await s.compareAndSwap(uncertain.expectedRevision, uncertain.next, listed)).toBe(true);
          expect(await s.get(other)).toEqual(uncertain.next);
        }
      });

      test('two attempts that read the same record: exactly one compare-and-swap wins', async () => {
        const binding = makeBinding();
        await driveTo(store, binding, 'ready', 0);
        const [first, second] = await Promise.all([store.get(binding), store.get(binding)]);
        const a = claimExecution(first!, { attemptId: 'a', at: at(1) });
        const b = claimExecution(second!, { attemptId: 'b', at: at(1) });

        const outcomes = await Promise.all([store.compareAndSwap(0, a.next, first!), store.compareAndSwap(0, b.next, second!)]);

        expect(outcomes.sort()).toEqual([false, true]);
      });

      test('an expected record this store did not return or write is INVALID_ARGUMENT (never a silent revision-only CAS); nothing written', async () => {
        const binding = makeBinding();
        const created = (await store.createIfAbsent(createCheckpoint(binding, { createdAt: at(0) }))).record;
        const claim = claimExecution(created, { attemptId: 'a1', at: at(0) });
        expect(await store.compareAndSwap(0, claim.next, created)).toBe(true);
        const stored = claim.next;
        const key = checkpointKey(binding);
        const before = (await target.raw.row(key))!;
        const rebuilt = claimExecution(createCheckpoint(binding, { createdAt: at(0) }), { attemptId: 'a1', at: at(0) }).next;
        const fromOtherStore = (await (await target.open()).get(binding))!;
        const uncertain = markExecutionUncertain(stored, { attemptId: 'a1', at: at(1), reason: 'timeout' });

        for (const expected of [rebuilt, fromOtherStore, { ...stored }]) {
          const error = await expectCode(store.compareAndSwap(uncertain.expectedRevision, uncertain.next, expected), 'INVALID_ARGUMENT');
          expect(error.details.field).toBe('expected');
        }
        expect((await expectCode(store.compareAndSwap(1, uncertain.next, created), 'INVALID_ARGUMENT')).details.field).toBe('expected.revision');
        const elsewhere = await driveTo(store, makeBinding(), 'executing', 0);
        expect((await expectCode(store.compareAndSwap(1, uncertain.next, elsewhere), 'INVALID_ARGUMENT')).details.field).toBe('expected.binding');

        expect(await target.raw.row(key)).toEqual(before);
      });
    });

    describe('the key is the full binding', () => {
      test.each(['namespace', 'callId'] as const)('a binding for another call (different %s) gets its own row', async (field) => {
        const base = makeBinding('call-1');
        const other: Binding = { ...base, [field]: `${base[field]}-other` };
        const claimed = await driveTo(store, base, 'executing');

        const created = await store.createIfAbsent(createCheckpoint(other, { createdAt: at(0) }));

        expect(checkpointKey(other)).not.toBe(checkpointKey(base));
        expect(created.created).toBe(true);
        expect(created.record.binding).toEqual(other);
        expect(await store.get(base)).toEqual(claimed);
        expect((await store.get(other))?.status).toBe('ready');
        expect(await target.raw.count()).toBe(2);
      });

      test.each(['toolName', 'toolRevision', 'inputFingerprint'] as const)(
        'the same call with a different %s never shares a row: createIfAbsent returns the holder and decide reports BINDING_CONFLICT',
        async (field) => {
          const base = makeBinding('call-1');
          const other: Binding = { ...base, [field]: field === 'inputFingerprint' ? fingerprintInput({ other: true }) : `${base[field]}-other` };
          const claimed = await driveTo(store, base, 'executing');

          const created = await store.createIfAbsent(createCheckpoint(other, { createdAt: at(0) }));

          expect(checkpointKey(other)).not.toBe(checkpointKey(base));
          expect(created).toEqual({ created: false, record: claimed });
          expect(() => decideCheckpoint(created.record, other)).toThrow(expect.objectContaining({ code: 'BINDING_CONFLICT', details: { fields: [field] } }));
          expect(await store.get(base)).toEqual(claimed);
          expect(await store.get(other)).toBeNull();
          expect(await target.raw.count()).toBe(1);
        },
      );
    });

    describe('dedupe keys (docs/protocol.md#dedupe-keys)', () => {
      test('another call inserted under a dedupe key a row holds inserts nothing and gets that row, whatever its status', async () => {
        const first = makeBinding('intent-a');
        const second = makeBinding('intent-b');
        const held = await store.createIfAbsent(createClaimed(first, { attemptId: 'a-1', at: at(0) }), { dedupeKey: 'dedupe-1' });
        const completed = await driveTo(store, makeBinding('unrelated'), 'completed');

        const answer = await store.createIfAbsent(createClaimed(second, { attemptId: 'b-1', at: at(1) }), { dedupeKey: 'dedupe-1' });

        expect(held.created).toBe(true);
        expect(answer).toEqual({ created: false, record: held.record });
        expect(await store.get(second)).toBeNull();
        expect(completed.status).toBe('completed');
        expect(await target.raw.count()).toBe(2);
      });

      test("a call's own row comes first: its retry under the dedupe key gets its own record back", async () => {
        const binding = makeBinding('intent-own');
        const held = await store.createIfAbsent(createClaimed(binding, { attemptId: 'a-1', at: at(0) }), { dedupeKey: 'dedupe-own' });

        const again = await store.createIfAbsent(createClaimed(binding, { attemptId: 'a-2', at: at(1) }), { dedupeKey: 'dedupe-own' });

        expect(again).toEqual({ created: false, record: held.record });
      });

      test('rows without a dedupe key, or with different ones, never hold each other', async () => {
        const inserted = await Promise.all(
          [undefined, undefined, 'dedupe-x', 'dedupe-y'].map((dedupeKey, i) =>
            store.createIfAbsent(createCheckpoint(makeBinding(`plain-${i}`), { createdAt: at(0) }), dedupeKey === undefined ? undefined : { dedupeKey }),
          ),
        );

        expect(inserted.map((r) => r.created)).toEqual([true, true, true, true]);
        expect(await target.raw.count()).toBe(4);
      });

      test.each([
        ['empty', ''],
        ['too long', 'k'.repeat(257)],
        ['a control character', 'key\n'],
        ['not a string', 42],
      ])('a dedupe key that is %s is INVALID_ARGUMENT and nothing is written', async (_what, dedupeKey) => {
        const error = await expectCode(store.createIfAbsent(createCheckpoint(makeBinding(), { createdAt: at(0) }), { dedupeKey: dedupeKey as string }), 'INVALID_ARGUMENT');

        expect(error.details.field).toBe('dedupeKey');
        expect(await target.raw.count()).toBe(0);
      });

      test('a settled holder whose window ended gives its key to the next insert at or after the end; the old row stays', async () => {
        const first = makeBinding('window-a');
        const claimed = await store.createIfAbsent(createClaimed(first, { attemptId: 'a-1', at: at(0) }), { dedupeKey: 'order-1', dedupeUntil: at(10) });
        const settled = completeExecution(claimed.record, { attemptId: 'a-1', at: at(1), result: { ok: true } });
        expect(await store.compareAndSwap(settled.expectedRevision, settled.next, claimed.record)).toBe(true);
        const held = { record: settled.next };

        const within = await store.createIfAbsent(createClaimed(makeBinding('window-b'), { attemptId: 'b-1', at: at(9) }), { dedupeKey: 'order-1', dedupeUntil: at(19) });
        const atEnd = await store.createIfAbsent(createClaimed(makeBinding('window-c'), { attemptId: 'c-1', at: at(10) }), { dedupeKey: 'order-1', dedupeUntil: at(20) });
        const after = await store.createIfAbsent(createClaimed(makeBinding('window-d'), { attemptId: 'd-1', at: at(11) }), { dedupeKey: 'order-1', dedupeUntil: at(21) });

        expect(within).toEqual({ created: false, record: held.record });
        expect(atEnd.created).toBe(true);
        expect(after).toEqual({ created: false, record: atEnd.record });
        expect(await store.get(first)).toEqual(held.record);
        expect(await store.get(makeBinding('window-b'))).toBeNull();
        expect(await target.raw.count()).toBe(2);
      });

      test('a holder still claimed (its outcome unknown) keeps its key after its window: its effect may still land', async () => {
        const held = await store.createIfAbsent(createClaimed(makeBinding('unsettled-a'), { attemptId: 'a-1', at: at(0) }), { dedupeKey: 'unsettled', dedupeUntil: at(10) });
        const uncertain = markExecutionUncertain(held.record, { attemptId: 'a-1', at: at(5), reason: 'the answer was lost' });
        expect(await store.compareAndSwap(uncertain.expectedRevision, uncertain.next, held.record)).toBe(true);

        const late = await store.createIfAbsent(createClaimed(makeBinding('unsettled-b'), { attemptId: 'b-1', at: at(100) }), { dedupeKey: 'unsettled', dedupeUntil: at(110) });
        const stillExecuting = await store.createIfAbsent(createClaimed(makeBinding('unsettled-c'), { attemptId: 'c-1', at: at(100) }), {
          dedupeKey: 'executing',
          dedupeUntil: at(110),
        });
        const afterIt = await store.createIfAbsent(createClaimed(makeBinding('unsettled-d'), { attemptId: 'd-1', at: at(200) }), { dedupeKey: 'executing' });

        expect(late).toEqual({ created: false, record: uncertain.next });
        expect(stillExecuting.created).toBe(true);
        expect(afterIt).toEqual({ created: false, record: stillExecuting.record });
      });

      test('a key held without a window is never taken over, however late the insert', async () => {
        const held = await store.createIfAbsent(createClaimed(makeBinding('forever-a'), { attemptId: 'a-1', at: at(0) }), { dedupeKey: 'forever' });

        const late = await store.createIfAbsent(createClaimed(makeBinding('forever-b'), { attemptId: 'b-1', at: at(1_000_000) }), {
          dedupeKey: 'forever',
          dedupeUntil: at(1_000_010),
        });

        expect(late).toEqual({ created: false, record: held.record });
      });

      test('releaseDedupeKey clears the key of the row as read, once; a row changed since keeps it', async () => {
        const first = makeBinding('release-a');
        const held = await store.createIfAbsent(createClaimed(first, { attemptId: 'a-1', at: at(0) }), { dedupeKey: 'release-1', dedupeUntil: at(100) });
        const moved = completeExecution(held.record, { attemptId: 'a-1', at: at(1), result: { ok: true } });
        expect(await store.compareAndSwap(moved.expectedRevision, moved.next, held.record)).toBe(true);

        expect(await store.releaseDedupeKey(held.record)).toBe(false);
        const blocked = await store.createIfAbsent(createClaimed(makeBinding('release-b'), { attemptId: 'b-1', at: at(2) }), { dedupeKey: 'release-1' });
        expect(blocked).toEqual({ created: false, record: moved.next });

        expect(await store.releaseDedupeKey(moved.next)).toBe(true);
        expect(await store.releaseDedupeKey(moved.next)).toBe(false);
        const taken = await store.createIfAbsent(createClaimed(makeBinding('release-b'), { attemptId: 'b-2', at: at(3) }), { dedupeKey: 'release-1' });
        expect(taken.created).toBe(true);
        expect(await store.get(first)).toEqual(moved.next);
      });

      test('releaseDedupeKey of a record that is not stored, or malformed, changes nothing', async () => {
        const held = await store.createIfAbsent(createClaimed(makeBinding('release-x'), { attemptId: 'a-1', at: at(0) }), { dedupeKey: 'release-x' });

        expect(await store.releaseDedupeKey(createClaimed(makeBinding('never-stored'), { attemptId: 'n-1', at: at(0) }))).toBe(false);
        await expectCode(store.releaseDedupeKey({ ...held.record, revision: -1 }), 'INVALID_ARGUMENT');
        await expectCode(store.releaseDedupeKey({ ...held.record, binding: { ...held.record.binding, callId: '' } }), 'INVALID_ARGUMENT');
        const again = await store.createIfAbsent(createClaimed(makeBinding('release-y'), { attemptId: 'b-1', at: at(1) }), { dedupeKey: 'release-x' });
        expect(again).toEqual({ created: false, record: held.record });
      });

      test.each([
        ['without a dedupe key', { dedupeUntil: '2030-01-01T00:00:00.000Z' }, 'dedupeUntil'],
        ['not ISO-8601 UTC', { dedupeKey: 'k', dedupeUntil: '2030-01-01' }, 'dedupeUntil'],
        ['not a string', { dedupeKey: 'k', dedupeUntil: 42 }, 'dedupeUntil'],
      ])('a dedupeUntil %s is INVALID_ARGUMENT and nothing is written', async (_what, options, field) => {
        const error = await expectCode(store.createIfAbsent(createCheckpoint(makeBinding(), { createdAt: at(0) }), options as never), 'INVALID_ARGUMENT');

        expect(error.details.field).toBe(field);
        expect(await target.raw.count()).toBe(0);
      });

      test('prune keeps a delivered row while its dedupe window is open, and deletes it after', async () => {
        const deliver = async (name: string, until: string): Promise<CheckpointRecord> => {
          const held = await store.createIfAbsent(createClaimed(makeBinding(name), { attemptId: `${name}-1`, at: at(0) }), { dedupeKey: `key-${name}`, dedupeUntil: until });
          const done = completeAndDeliver(held.record, { attemptId: `${name}-1`, deliveryId: `${name}-d`, at: at(1), result: { ok: true } });
          expect(await store.compareAndSwap(done.expectedRevision, done.next, held.record)).toBe(true);
          return done.next;
        };
        // The suite's epoch is in the future: a window ending there is open now; one that ended in 2020 is closed.
        const open = await deliver('open-window', at(1_000));
        const closed = await deliver('closed-window', '2020-01-01T00:00:00.000Z');

        expect(await store.prune({ olderThan: at(2_000) })).toBe(1);

        expect(await store.get(open.binding)).toEqual(open);
        expect(await store.get(closed.binding)).toBeNull();
      });
    });

    describe('listByStatus', () => {
      test('lists records in the given statuses, oldest updatedAt first, within olderThan and limit', async () => {
        const a = await driveTo(store, makeBinding('a'), 'executing', 30);
        const b = await driveTo(store, makeBinding('b'), 'uncertain', 10);
        const c = await driveTo(store, makeBinding('c'), 'executing', 20);
        await driveTo(store, makeBinding('d'), 'delivered', 5);

        expect(await store.listByStatus(['executing', 'uncertain'])).toEqual([b, c, a]);
        expect(await store.listByStatus(['executing', 'uncertain'], { olderThan: at(25) })).toEqual([b, c]);
        expect(await store.listByStatus(['executing', 'uncertain'], { limit: 1 })).toEqual([b]);
        expect(await store.listByStatus(['completed'])).toEqual([]);
      });

      test('pages through more rows than one query returns, skipping a quarantined row, up to the limit', async () => {
        const bindings = Array.from({ length: 1_100 }, (_, i) => makeBinding(`page-${String(i).padStart(4, '0')}`));
        const created: CheckpointRecord[] = [];
        for (let i = 0; i < bindings.length; i += 275) {
          const part = await Promise.all(bindings.slice(i, i + 275).map((b, j) => store.createIfAbsent(createCheckpoint(b, { createdAt: at(i + j) }))));
          created.push(...part.map((p) => p.record));
        }
        await target.raw.update(checkpointKey(bindings[3]!), { body: '{"truncated":' });

        const listed = await store.listByStatus(['ready'], { limit: 1_050 });

        expect(listed).toHaveLength(1_050);
        expect(listed).toEqual(created.filter((_, i) => i !== 3).slice(0, 1_050));
        expect((await store.listByStatus(['ready'], { limit: 10_000 })).length).toBe(1_099);
        expect((await store.listQuarantined()).map((q) => q.key)).toEqual([checkpointKey(bindings[3]!)]);
      }, 60_000);

      test('bad arguments are INVALID_ARGUMENT', async () => {
        expect((await expectCode(store.listByStatus([]), 'INVALID_ARGUMENT')).details.field).toBe('statuses');
        expect((await expectCode(store.listByStatus(['stuck' as Status]), 'INVALID_ARGUMENT')).details.field).toBe('statuses');
        expect((await expectCode(store.listByStatus(['ready'], { limit: 0 }), 'INVALID_ARGUMENT')).details.field).toBe('limit');
        expect((await expectCode(store.listByStatus(['ready'], { olderThan: 'yesterday' }), 'INVALID_ARGUMENT')).details.field).toBe('olderThan');
      });
    });

    describe('prune', () => {
      test('deletes only delivered records older than the window; never ready, executing, uncertain, completed or delivering', async () => {
        const old: Record<Status, CheckpointRecord> = {} as Record<Status, CheckpointRecord>;
        for (const status of ['ready', 'executing', 'uncertain', 'completed', 'delivering', 'delivered'] as const) {
          old[status] = await driveTo(store, makeBinding(`old-${status}`), status, 0);
        }
        const recent = await driveTo(store, makeBinding('recent-delivered'), 'delivered', 100);

        expect(await store.prune({ olderThan: at(50) })).toBe(1);

        expect(await store.get(old.delivered.binding)).toBeNull();
        for (const status of ['ready', 'executing', 'uncertain', 'completed', 'delivering'] as const) {
          expect(await store.get(old[status].binding)).toEqual(old[status]);
        }
        expect(await store.get(recent.binding)).toEqual(recent);
        expect(await store.prune({ olderThan: at(50) })).toBe(0);
        expect(await target.raw.count()).toBe(6);
      });

      test('prune needs an ISO-8601 UTC olderThan: INVALID_ARGUMENT', async () => {
        expect((await expectCode(store.prune({ olderThan: '2020-01-01' }), 'INVALID_ARGUMENT')).details.field).toBe('olderThan');
      });
    });

    describe('conversation log (claim check)', () => {
      const LOG = 'log-a';
      const E1 = { encryptionKey: Buffer.alloc(32, 1), encryptionKeyId: 'enc-1' } as const;
      const message = (text: string) => ({ role: 'user', text });

      test('put then get returns the values in key order; a retried put of the same values is idempotent', async () => {
        await store.putConversationEntries(LOG, [
          { key: 'm/000000000', value: message('hello') },
          { key: 'm/000000001', value: { role: 'tool', content: { n: 1, s: 'ä' } } },
        ]);
        await store.putConversationEntries(LOG, [
          { key: 'm/000000001', value: { content: { s: 'ä', n: 1 }, role: 'tool' } }, // same value, other key order
          { key: 'm/000000002', value: message('again') },
        ]);

        expect(await store.getConversationEntries(LOG, ['m/000000002', 'm/000000000', 'm/000000001', 'm/000000000'])).toEqual([
          message('again'),
          message('hello'),
          { role: 'tool', content: { n: 1, s: 'ä' } },
          message('hello'),
        ]);
        expect(await target.raw.entryCount()).toBe(3);
        expect(await store.getConversationEntries(LOG, [])).toEqual([]);
      });

      test('a different value at an existing key is CONVERSATION_CONFLICT (non-retryable); the first value stays and nothing of that call is written', async () => {
        await store.putConversationEntries(LOG, [{ key: 'm/000000000', value: message('first') }]);

        const error = await expectCode(
          store.putConversationEntries(LOG, [
            { key: 'm/000000001', value: message('would be new') },
            { key: 'm/000000000', value: message('second') },
          ]),
          'CONVERSATION_CONFLICT',
        );

        expect(CHECKPOINT_ERROR_CODES[error.code as CheckpointErrorCode].retryable).toBe(false);
        expect(error.details).toMatchObject({ logId: LOG, key: 'm/000000000' });
        expect(await store.getConversationEntries(LOG, ['m/000000000'])).toEqual([message('first')]);
        await expectCode(store.getConversationEntries(LOG, ['m/000000001']), 'CONVERSATION_ENTRY_MISSING');
        expect(await target.raw.entryCount()).toBe(1);
        await expectCode(
          store.putConversationEntries(LOG, [
            { key: 'k', value: 1 },
            { key: 'k', value: 2 },
          ]),
          'CONVERSATION_CONFLICT',
        );
      });

      test('concurrent writers of one key with different values: exactly one value is stored, the other writer gets CONVERSATION_CONFLICT', async () => {
        const other = await target.open();
        const results = await Promise.allSettled([
          store.putConversationEntries(LOG, [{ key: 'r/x', value: 'a' }]),
          other.putConversationEntries(LOG, [{ key: 'r/x', value: 'b' }]),
        ]);

        expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
        const rejected = results.find((r): r is PromiseRejectedResult => r.status === 'rejected')!;
        expect(isCheckpointError(rejected.reason, 'CONVERSATION_CONFLICT')).toBe(true);
        const [stored] = await store.getConversationEntries(LOG, ['r/x']);
        expect(stored).toBe(results[0]!.status === 'fulfilled' ? 'a' : 'b');
      });

      test('a missing key is CONVERSATION_ENTRY_MISSING (non-retryable) naming it; another log does not see the entries', async () => {
        await store.putConversationEntries(LOG, [{ key: 'm/000000000', value: 1 }]);

        const error = await expectCode(store.getConversationEntries(LOG, ['m/000000000', 'm/000000001']), 'CONVERSATION_ENTRY_MISSING');
        expect(CHECKPOINT_ERROR_CODES[error.code as CheckpointErrorCode].retryable).toBe(false);
        expect(error.details).toMatchObject({ logId: LOG, key: 'm/000000001' });
        await expectCode(store.getConversationEntries('log-b', ['m/000000000']), 'CONVERSATION_ENTRY_MISSING');
      });

      test('many keys are read in chunks, in the order asked', async () => {
        const keys = Array.from({ length: 1_234 }, (_, i) => `m/${String(i).padStart(9, '0')}`);
        await store.putConversationEntries(
          LOG,
          keys.map((key, i) => ({ key, value: i })),
        );

        const reversed = [...keys].reverse();
        expect(await store.getConversationEntries(LOG, reversed)).toEqual(reversed.map((_, i) => keys.length - 1 - i));
      });

      test('bad arguments are INVALID_ARGUMENT; a value that is not JSON is NOT_JSON; nothing written', async () => {
        expect((await expectCode(store.putConversationEntries('', [{ key: 'a', value: 1 }]), 'INVALID_ARGUMENT')).details.field).toBe('logId');
        expect((await expectCode(store.putConversationEntries(LOG, [{ key: 'a\n', value: 1 }]), 'INVALID_ARGUMENT')).details.field).toBe('key');
        expect((await expectCode(store.getConversationEntries(LOG, ['']), 'INVALID_ARGUMENT')).details.field).toBe('key');
        await expectCode(store.putConversationEntries(LOG, [{ key: 'a', value: Number.NaN }]), 'NOT_JSON');
        expect(await target.raw.entryCount()).toBe(0);
      });

      test('round trip with sealing and encryption: the body holds no plaintext and reads back exactly; without the keys it does not read', async () => {
        const s = await target.open({ ...HMAC, ...E1 });
        // The marker holds a space and '#', which base64 ciphertext never holds, so the check cannot match by chance.
        const secret = { role: 'tool', content: { card: 'card #4242 4242', big: 'x'.repeat(200_000) } };
        await s.putConversationEntries(LOG, [{ key: 'r/call-1', value: secret }]);
        await s.putConversationEntries(LOG, [{ key: 'r/call-1', value: secret }]); // idempotent under encryption (fresh IV each write)

        const body = (await target.raw.entryBody(LOG, 'r/call-1'))!;
        expect(body).not.toContain('#4242 4242');
        expect(body).not.toContain('x'.repeat(64));
        expect(JSON.parse(body)).toMatchObject({ entry: 1, log: LOG, key: 'r/call-1', seal: { alg: 'HMAC-SHA256', keyId: 'seal-1' } });
        expect(await s.getConversationEntries(LOG, ['r/call-1'])).toEqual([secret]);
        await expectCode(s.putConversationEntries(LOG, [{ key: 'r/call-1', value: { ...secret, content: 'other' } }]), 'CONVERSATION_CONFLICT');

        const unsealedReader = await target.open(E1);
        expect((await expectCode(unsealedReader.getConversationEntries(LOG, ['r/call-1']), 'INTEGRITY_FAILURE')).details.reason).toBe('unknown-key');
        const noEncryption = await target.open(HMAC);
        expect((await expectCode(noEncryption.getConversationEntries(LOG, ['r/call-1']), 'DECRYPTION_FAILED')).details.quarantined).toBe(true);
      });

      describe('a damaged entry is a quarantine error naming it, never a wrong value, and is left as it is', () => {
        const cases: Array<{ name: string; code: CheckpointErrorCode; options: CheckpointStoreOptions; damage: (body: string, moved: string) => string }> = [
          { name: 'tampered sealed value (seal kept)', code: 'INTEGRITY_FAILURE', options: HMAC, damage: (b) => edit(b, (v) => (v.value = { role: 'user', text: 'forged' })) },
          { name: 'seal removed while a key is configured', code: 'INTEGRITY_FAILURE', options: HMAC, damage: (b) => edit(b, (v) => delete v.seal) },
          {
            name: 'unsealed value edited: bytes no longer match',
            code: 'INVALID_CHECKPOINT',
            options: {},
            damage: (b) => edit(b, (v) => (v.value = { role: 'user', text: 'forged!' })),
          },
          { name: 'truncated', code: 'INVALID_CHECKPOINT', options: {}, damage: (b) => b.slice(0, -3) },
          { name: 'not canonical (whitespace)', code: 'INVALID_CHECKPOINT', options: {}, damage: (b) => ` ${b}` },
          { name: "another entry's sealed body moved here", code: 'INVALID_CHECKPOINT', options: HMAC, damage: (_b, moved) => moved },
          {
            name: "another entry's ciphertext moved here (body relabelled)",
            code: 'DECRYPTION_FAILED',
            options: E1,
            damage: (b, moved) => edit(b, (v) => (v.enc = (JSON.parse(moved) as { enc: string }).enc)),
          },
          {
            name: 'plaintext swapped in for the ciphertext',
            code: 'DECRYPTION_FAILED',
            options: E1,
            damage: (b) =>
              edit(b, (v) => {
                delete v.enc;
                v.value = { role: 'user', text: 'hello' };
              }),
          },
          { name: 'an unknown entry format', code: 'UNSUPPORTED_SCHEMA', options: {}, damage: (b) => edit(b, (v) => (v.entry = 2)) },
        ];
        test.each(cases)('$name → $code', async ({ code, options, damage }) => {
          const s = await target.open(options);
          await s.putConversationEntries(LOG, [
            { key: 'm/000000000', value: { role: 'user', text: 'hello' } },
            { key: 'm/000000001', value: { role: 'user', text: 'other' } },
          ]);
          const moved = (await target.raw.entryBody(LOG, 'm/000000001'))!;
          const damaged = damage((await target.raw.entryBody(LOG, 'm/000000000'))!, moved);
          await target.raw.updateEntry(LOG, 'm/000000000', { body: damaged });

          const error = await expectCode(s.getConversationEntries(LOG, ['m/000000000']), code);
          expect(error.details).toMatchObject({ logId: LOG, key: 'm/000000000', quarantined: true });
          expect(error.message).toContain('m/000000000');
          // A retried write of the original value does not repair or overwrite it either.
          await expectCode(s.putConversationEntries(LOG, [{ key: 'm/000000000', value: { role: 'user', text: 'hello' } }]), code);
          expect(await target.raw.entryBody(LOG, 'm/000000000')).toBe(damaged);
        });
      });

      test('prune without conversationsOlderThan keeps every log; with it, deletes the logs whose newest entry is older, whole', async () => {
        await store.putConversationEntries('old', [
          { key: 'm/000000000', value: 1 },
          { key: 'm/000000001', value: 2 },
        ]);
        await store.putConversationEntries('mixed', [
          { key: 'm/000000000', value: 1 },
          { key: 'm/000000001', value: 2 },
        ]);
        await store.putConversationEntries('new', [{ key: 'm/000000000', value: 1 }]);
        for (const [log, key] of [
          ['old', 'm/000000000'],
          ['old', 'm/000000001'],
          ['mixed', 'm/000000000'],
        ] as const)
          await target.raw.updateEntry(log, key, { createdAt: at(0) });
        await target.raw.updateEntry('mixed', 'm/000000001', { createdAt: at(100) });
        await target.raw.updateEntry('new', 'm/000000000', { createdAt: at(100) });
        const delivered = await driveTo(store, makeBinding('pruned-too'), 'delivered', 0);

        expect(await store.prune({ olderThan: at(50) })).toBe(1);
        expect(await target.raw.entryCount()).toBe(5);

        expect(await store.prune({ olderThan: at(50), conversationsOlderThan: at(50) })).toBe(1); // the log "old"
        expect(await store.get(delivered.binding)).toBeNull();
        await expectCode(store.getConversationEntries('old', ['m/000000000']), 'CONVERSATION_ENTRY_MISSING');
        expect(await store.getConversationEntries('mixed', ['m/000000000', 'm/000000001'])).toEqual([1, 2]);
        expect(await store.getConversationEntries('new', ['m/000000000'])).toEqual([1]);
        expect(await target.raw.entryCount()).toBe(3);
        expect(await store.prune({ olderThan: at(50), conversationsOlderThan: at(50) })).toBe(0);
        expect((await expectCode(store.prune({ olderThan: at(50), conversationsOlderThan: 'last week' }), 'INVALID_ARGUMENT')).details.field).toBe('conversationsOlderThan');
      });
    });

    describe('quarantine: a damaged row is reported with its key and never replaced', () => {
      interface Damage {
        readonly name: string;
        readonly code: CheckpointErrorCode;
        readonly sealed: boolean;
        readonly reason?: string;
        damage(row: RawRow, other: RawRow): Partial<Pick<RawRow, 'body' | 'status'>>;
      }
      const damages: Damage[] = [
        { name: 'corrupted (bytes replaced)', code: 'INVALID_CHECKPOINT', sealed: false, damage: (r) => ({ body: r.body.slice(0, 40) + '\u00ff#garbage#' + r.body.slice(52) }) },
        { name: 'truncated', code: 'INVALID_CHECKPOINT', sealed: false, damage: (r) => ({ body: r.body.slice(0, Math.floor(r.body.length / 2)) }) },
        { name: 'empty', code: 'INVALID_CHECKPOINT', sealed: false, damage: () => ({ body: '' }) },
        {
          name: 'duplicate-key',
          code: 'INVALID_CHECKPOINT',
          sealed: false,
          reason: 'duplicate-key',
          damage: (r) => ({ body: r.body.replace('"status":"delivered"', '"status":"delivered","status":"ready"') }),
        },
        {
          name: 'tampered (sealed body edited, seal kept)',
          code: 'INTEGRITY_FAILURE',
          sealed: true,
          reason: 'mismatch',
          damage: (r) => ({ body: edit(r.body, (v) => ((v.execution as Record<string, unknown>).attemptId = 'attacker')) }),
        },
        {
          name: 'unsealed while a seal key is configured',
          code: 'INTEGRITY_FAILURE',
          sealed: true,
          reason: 'missing',
          damage: (r) => ({ body: edit(r.body, (v) => delete v.seal) }),
        },
        { name: 'an unknown schema version', code: 'UNSUPPORTED_SCHEMA', sealed: false, damage: (r) => ({ body: edit(r.body, (v) => (v.schemaVersion = 99)) }) },
        { name: 'a body moved from another row', code: 'INVALID_CHECKPOINT', sealed: true, damage: (_r, other) => ({ body: other.body }) },
        { name: 'a status column that disagrees with the body', code: 'INVALID_CHECKPOINT', sealed: true, damage: () => ({ status: 'ready' }) },
      ];

      test.each(damages)('$name: $code from get, createIfAbsent and listQuarantined; skipped by list and prune; row unchanged', async (d) => {
        const s = d.sealed ? await target.open(HMAC) : store;
        const binding = makeBinding();
        const neighbour = makeBinding();
        await driveTo(s, binding, 'delivered', 0);
        await driveTo(s, neighbour, 'delivered', 0);
        const key = checkpointKey(binding);
        const original = (await target.raw.row(key))!;
        const other = (await target.raw.row(checkpointKey(neighbour)))!;
        await target.raw.update(key, d.damage(original, other));
        const damaged = (await target.raw.row(key))!;

        const fromGet = await expectCode(s.get(binding), d.code);
        const fromCreate = await expectCode(s.createIfAbsent(createCheckpoint(binding, { createdAt: at(1) })), d.code);
        const quarantined = await s.listQuarantined();
        const listed = await s.listByStatus(['ready', 'delivered']);
        const pruned = await s.prune({ olderThan: at(1_000) });

        expect(fromGet.message).toContain(key);
        expect(fromGet.details.key).toBe(key);
        if (d.reason !== undefined) expect(fromGet.details.reason).toBe(d.reason);
        expect(fromCreate.details.key).toBe(key);
        expect(quarantined).toEqual([{ key, status: damaged.status, revision: damaged.revision, updatedAt: damaged.updatedAt, error: { code: d.code, message: fromGet.message } }]);
        expect(listed.map((r) => checkpointKey(r.binding))).not.toContain(key);
        expect(pruned).toBe(1);
        expect(await s.get(neighbour)).toBeNull();
        expect(await target.raw.row(key)).toEqual(damaged);
      });

      test('a binding object the caller changes while get awaits its row cannot let a moved body through', async () => {
        const binding = makeBinding();
        const neighbour = makeBinding();
        await driveTo(store, binding, 'delivered', 0);
        await driveTo(store, neighbour, 'delivered', 0);
        const key = checkpointKey(binding);
        await target.raw.update(key, { body: (await target.raw.row(checkpointKey(neighbour)))!.body });

        const reused = { ...binding };
        const pending = store.get(reused);
        Object.assign(reused, neighbour);
        const error = await expectCode(pending, 'INVALID_CHECKPOINT');
        expect(error.details.key).toBe(key);
      });
    });

    test('concurrent calls are independent: a quarantined row fails only its own call', async () => {
      const damaged = makeBinding();
      await driveTo(store, damaged, 'executing');
      await target.raw.update(checkpointKey(damaged), { body: 'not json' });
      const fresh = makeBinding();

      const [bad, good] = await Promise.allSettled([
        store.createIfAbsent(createCheckpoint(damaged, { createdAt: at(1) })),
        store.createIfAbsent(createCheckpoint(fresh, { createdAt: at(1) })),
      ]);

      expect(bad).toMatchObject({ status: 'rejected', reason: { code: 'INVALID_CHECKPOINT', details: { key: checkpointKey(damaged) } } });
      expect(good).toMatchObject({ status: 'fulfilled', value: { created: true } });
      expect((await store.get(fresh))?.status).toBe('ready');
    });

    describe('encryption at rest of result payloads', () => {
      const E1 = { encryptionKey: Buffer.alloc(32, 1), encryptionKeyId: 'enc-1' } as const;
      const E2 = { encryptionKey: Buffer.alloc(32, 2), encryptionKeyId: 'enc-2' } as const;

      test('round trip: the payload is stored encrypted and read back exactly', async () => {
        const s = await target.open({ ...HMAC, ...E1 });
        const binding = makeBinding();
        const payload = { secret: 'card #4242 4242', nested: [1, 'ä', null] }; // space and '#' never appear in base64

        const completed = await driveTo(s, binding, 'completed', 0, payload);

        const raw = (await target.raw.row(checkpointKey(binding)))!;
        expect(raw.body).not.toContain('#4242 4242');
        expect(JSON.parse(raw.body).result.payload).toMatchObject({ $enc: 'A256GCM', kid: 'enc-1' });
        expect(await s.get(binding)).toEqual(completed);
        expect((await s.get(binding))?.result?.payload).toEqual(payload);
      });

      test('after a key rotation, old payloads stay readable with the old key configured', async () => {
        const binding = makeBinding();
        await driveTo(await target.open(E1), binding, 'completed', 0, { v: 1 });

        const rotated = await target.open({ ...E2, encryptionKeys: { 'enc-1': E1.encryptionKey } });

        expect((await rotated.get(binding))?.result?.payload).toEqual({ v: 1 });
      });

      test('without the key the payload cannot be read: DECRYPTION_FAILED naming the key id', async () => {
        const binding = makeBinding();
        await driveTo(await target.open(E1), binding, 'completed', 0, { v: 1 });

        const noKeys = await expectCode(store.get(binding), 'DECRYPTION_FAILED');
        const otherKey = await expectCode((await target.open(E2)).get(binding), 'DECRYPTION_FAILED');
        const wrongKey = await expectCode((await target.open({ encryptionKey: Buffer.alloc(32, 9), encryptionKeyId: 'enc-1' })).get(binding), 'DECRYPTION_FAILED');

        for (const error of [noKeys, otherKey, wrongKey]) {
          expect(error.details.keyId).toBe('enc-1');
          expect(error.details.key).toBe(checkpointKey(binding));
          expect(error.message).toContain('"enc-1"');
        }
        expect(wrongKey.details.reason).toBe('authentication-failed');
      });

      test('with a current key configured, a plaintext payload swapped in for the ciphertext is refused: DECRYPTION_FAILED (unencrypted), quarantined, row unchanged', async () => {
        const s = await target.open(E1);
        const binding = makeBinding();
        await driveTo(s, binding, 'completed', 0, { v: 1 });
        const key = checkpointKey(binding);
        const original = (await target.raw.row(key))!;
        // HMAC is off, so the body stays well-formed and canonical with the forged plaintext payload.
        await target.raw.update(key, { body: edit(original.body, (v) => ((v.result as Record<string, unknown>).payload = { v: 'forged' })) });
        const swapped = (await target.raw.row(key))!;

        const fromGet = await expectCode(s.get(binding), 'DECRYPTION_FAILED');
        const fromCall = await expectCode(s.getByCall(binding.namespace, binding.callId), 'DECRYPTION_FAILED');
        const fromCreate = await expectCode(s.createIfAbsent(createCheckpoint(binding, { createdAt: at(1) })), 'DECRYPTION_FAILED');
        const quarantined = await s.listQuarantined();
        const listed = await s.listByStatus(['completed']);

        for (const error of [fromGet, fromCall, fromCreate]) {
          expect(error.details).toMatchObject({ key, reason: 'unencrypted', field: 'result.payload', keyId: 'enc-1', quarantined: true });
          expect(error.message).toContain('unencrypted');
        }
        expect(quarantined).toEqual([
          { key, status: 'completed', revision: swapped.revision, updatedAt: swapped.updatedAt, error: { code: 'DECRYPTION_FAILED', message: fromGet.message } },
        ]);
        expect(listed).toEqual([]);
        expect(await target.raw.row(key)).toEqual(swapped);
      });

      test('a payload written unencrypted (before encryption was turned on) is refused the same way once a key is configured; a store with only older keys reads it', async () => {
        const binding = makeBinding();
        const completed = await driveTo(store, binding, 'completed', 0, { v: 'plain' });

        const error = await expectCode((await target.open(E1)).get(binding), 'DECRYPTION_FAILED');
        const readOnly = await target.open({ encryptionKeys: { 'enc-1': E1.encryptionKey } });

        expect(error.details.reason).toBe('unencrypted');
        expect(await readOnly.get(binding)).toEqual(completed);
      });
    });

    describeGroupWrites({
      target: () => target,
      store: () => store,
      makeBinding,
      driveTo,
      expectCode,
      at,
      hmac: HMAC,
      async race(input, count) {
        const workers = Array.from({ length: count }, () => startWorker('group-race'));
        await Promise.all(workers.map((w) => w.ready));
        const options: SerializedOptions = { busyTimeoutMs: 30_000, poolSize: 2 };
        workers.forEach((w, i) => w.send({ url: target.url, options, workerId: `w${i}`, ...input }));
        return (await Promise.all(workers.map((w) => w.result()))).map((line) => JSON.parse(line) as GroupRaceResult);
      },
    });

    describe('concurrency and crashes (separate processes)', () => {
      test.each([
        { mode: 'claim' as const, how: 'compare-and-swap on a ready record (get → claimExecution → compareAndSwap)' },
        { mode: 'insert-claim' as const, how: 'claiming insert (docs/protocol.md#cost: the claim of a fresh call is its insert)' },
        { mode: 'dedupe-claim' as const, how: 'claiming insert of its own call under a shared dedupe key (docs/protocol.md#dedupe-keys)' },
        {
          mode: 'dedupe-claim' as const,
          expired: true,
          how: 'claiming insert under a dedupe key whose holder’s window ended (docs/protocol.md#business-keys)',
        },
      ])(
        '8 concurrent claimers × 1,000 records, each claim a $how: exactly one claim wins per record',
        async ({ mode, expired }) => {
          const bindings = Array.from({ length: 1_000 }, (_, i) => makeBinding(`${mode}-${expired === true ? 'expired-' : ''}race-${i}`));
          if (mode === 'claim') {
            for (let i = 0; i < bindings.length; i += 250) {
              await Promise.all(bindings.slice(i, i + 250).map((b) => store.createIfAbsent(createCheckpoint(b, { createdAt: at(0) }))));
            }
          }
          if (expired === true) {
            // Each key's first holder: a delivered call whose window ended in 2020; its attempt id names no worker.
            const ended = '2020-01-01T00:00:00.000Z';
            for (let i = 0; i < bindings.length; i += 250) {
              await Promise.all(
                bindings.slice(i, i + 250).map((b, j) =>
                  store.createIfAbsent(
                    completeAndDeliver(createClaimed({ ...b, callId: `${b.callId}/old` }, { attemptId: `old-${i + j}-x`, at: ended }), {
                      attemptId: `old-${i + j}-x`,
                      deliveryId: `old-${i + j}-d`,
                      at: ended,
                      result: { ok: true },
                    }).next,
                    { dedupeKey: `dedupe:${b.callId}`, dedupeUntil: ended },
                  ),
                ),
              );
            }
          }
          const workers = Array.from({ length: 8 }, () => startWorker(mode));
          await Promise.all(workers.map((w) => w.ready));
          const options: SerializedOptions = { busyTimeoutMs: 30_000, poolSize: 4 };
          const window = expired === true ? { dedupeWindowMs: 3_600_000 } : {};
          workers.forEach((w, i) => w.send({ url: target.url, options, bindings, workerId: `w${i}`, concurrency: 4, ...window }));

          const results = (await Promise.all(workers.map((w) => w.result()))).map((line) => JSON.parse(line) as { wins: number[]; lost: number });

          const owners = new Map<number, number[]>();
          results.forEach((r, w) => r.wins.forEach((index) => owners.set(index, [...(owners.get(index) ?? []), w])));
          expect(results.reduce((n, r) => n + r.wins.length, 0)).toBe(1_000);
          expect(owners.size).toBe(1_000);
          expect([...owners.values()].filter((w) => w.length !== 1)).toEqual([]);
          expect(results.reduce((n, r) => n + r.lost, 0)).toBe(7_000);
          // dedupe-claim: each worker inserted its own call; the row is the winner's.
          const own = (b: Binding, index: number): Binding => (mode === 'dedupe-claim' ? { ...b, callId: `${b.callId}/w${owners.get(index)![0]}` } : b);
          const stored = await Promise.all(bindings.map((b, index) => store.get(own(b, index))));
          stored.forEach((record, index) => {
            expect(record).toMatchObject({ status: 'executing', revision: 1, execution: { attemptId: `w${owners.get(index)![0]}-${index}` } });
          });
        },
        120_000,
      );

      test('a writer killed mid-transaction (SIGKILL, repeatedly) leaves the old or the new record, never a torn one', async () => {
        const bindings = Array.from({ length: 4 }, (_, i) => makeBinding(`churn-${i}`));
        for (const b of bindings) await store.createIfAbsent(createCheckpoint(b, { createdAt: at(0) }));
        const acked = bindings.map(() => 0);
        // Each round's worker process starts loading while the round before runs; it opens the store only when sent its input.
        let next: Worker | undefined = startWorker('churn');
        try {
          for (let round = 0; round < 6; round += 1) {
            const worker = next!;
            next = round < 5 ? startWorker('churn') : undefined;
            await worker.ready;
            worker.send({ url: target.url, options: {}, bindings, payloadBytes: 200_000 });
            const killAfter = 3 + Math.floor(Math.random() * 12);
            let seen = 0;
            await new Promise<void>((resolve, reject) => {
              worker.onLine((line) => {
                const match = /^ack (\d+) (\d+)$/.exec(line);
                if (match === null) return;
                const index = Number(match[1]);
                acked[index] = Math.max(acked[index]!, Number(match[2]));
                seen += 1;
                if (seen === killAfter) {
                  worker.child.kill('SIGKILL');
                  resolve();
                }
              });
              worker.exited.then((code) => reject(new Error(`churn worker exited early (${String(code)}): ${worker.stderr()}`)), reject);
            });
            await worker.exited.catch(() => undefined);

            const reader = await target.open();
            for (const [index, binding] of bindings.entries()) {
              const record = await reader.get(binding);
              expect(record).not.toBeNull();
              expect([acked[index], acked[index]! + 1]).toContain(record!.revision);
              acked[index] = record!.revision;
            }
            await reader.close();
          }
        } finally {
          next?.child.kill('SIGKILL'); // left only when a round failed
        }
        expect(await target.raw.integrity()).toBe('ok');
        expect(await store.listQuarantined()).toEqual([]);
      }, 120_000);
    });

    describe('fail closed while the database is unavailable', () => {
      test('writes fail with STORE_UNAVAILABLE, nothing is written, and the store works again afterwards', async () => {
        const outage = await factory.outage();
        try {
          const existing = makeBinding();
          const fresh = (await outage.store.createIfAbsent(createCheckpoint(existing, { createdAt: at(0) }))).record;
          const absent = makeBinding();
          await outage.begin();

          const create = await expectCode(outage.store.createIfAbsent(createCheckpoint(absent, { createdAt: at(0) })), 'STORE_UNAVAILABLE');
          const claim = claimExecution(fresh, { attemptId: 'a1', at: at(1) });
          await expectCode(outage.store.compareAndSwap(0, claim.next), 'STORE_UNAVAILABLE');
          await expectCode(
            outage.store.writeGroup([
              { kind: 'create', record: createCheckpoint(absent, { createdAt: at(0) }) },
              { kind: 'cas', expectedRevision: 0, next: claim.next, expected: fresh },
            ]),
            'STORE_UNAVAILABLE',
          );
          await outage.end();

          expect(create.message).toContain('nothing was written');
          expect(await outage.store.get(absent)).toBeNull();
          expect(await outage.store.get(existing)).toEqual(fresh);
          expect(await outage.store.compareAndSwap(0, claim.next)).toBe(true);
        } finally {
          await outage.dispose();
        }
      }, 60_000);
    });
  });
}

/** Parses a canonical body, applies `change`, and writes it back canonically (seal kept as is). */
function edit(body: string, change: (value: Record<string, unknown>) => unknown): string {
  const value = JSON.parse(body) as Record<string, unknown>;
  change(value);
  return canonicalize(value) as string;
}

interface Worker {
  readonly child: ChildProcessWithoutNullStreams;
  readonly ready: Promise<void>;
  readonly exited: Promise<number | null>;
  send(input: unknown): void;
  onLine(listener: (line: string) => void): void;
  /** The last stdout line once the worker exited with 0. */
  result(): Promise<string>;
  stderr(): string;
}

function startWorker(mode: 'claim' | 'insert-claim' | 'dedupe-claim' | 'group-race' | 'churn'): Worker {
  const child = spawn(process.execPath, ['-r', 'tsx/cjs', WORKER, mode], { cwd: REPO, stdio: ['pipe', 'pipe', 'pipe'] });
  let err = '';
  child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
  const lines = createInterface({ input: child.stdout });
  const listeners: Array<(line: string) => void> = [];
  let last = '';
  let onReady: () => void;
  const ready = new Promise<void>((resolve) => (onReady = resolve));
  lines.on('line', (line) => {
    if (line === 'ready') onReady();
    last = line;
    listeners.forEach((l) => l(line));
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    child,
    ready,
    exited,
    send: (input) => child.stdin.write(`${JSON.stringify(input)}\n`),
    onLine: (listener) => listeners.push(listener),
    stderr: () => err,
    async result() {
      const code = await exited;
      if (code !== 0) throw new Error(`worker exited with ${String(code)}: ${err}`);
      return last;
    },
  };
}
