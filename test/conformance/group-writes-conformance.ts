/**
 * The conformance cases of grouped reads and writes (`getMany`, `writeGroup`: a
 * batch's item checkpoints are claimed and completed in groups, one transaction each), run by
 * `describeStoreConformance` against every store: round trips, mixed groups where some writes
 * find rows or lose their compare-and-swap, argument checks, quarantined rows in a group, and
 * processes racing overlapping groups for the same records.
 */
import { createCheckpoint } from '../../src/checkpoint/record';
import { claimExecution, completeExecution } from '../../src/checkpoint/transitions';
import type { Binding, CheckpointRecord } from '../../src/checkpoint/types';
import { checkpointKey } from '../../src/stores/checkpoint-key';
import type { CheckpointStore, GroupWrite } from '../../src/stores/checkpoint-store';
import type * as Suite from './store-conformance';

/** What one `group-race` worker reports: the indexes whose claim it won, and how many it lost, for the claiming inserts and the compare-and-swap claims. */
export interface GroupRaceResult {
  readonly inserts: { readonly wins: number[]; readonly lost: number };
  readonly claims: { readonly wins: number[]; readonly lost: number };
}

/** What the group cases need from the suite around them. */
export interface GroupContext {
  readonly target: () => Suite.StoreTarget;
  readonly store: () => CheckpointStore;
  readonly makeBinding: typeof Suite.makeBinding;
  readonly driveTo: typeof Suite.driveTo;
  readonly expectCode: typeof Suite.expectCode;
  /** Starts `count` store-worker processes in `group-race` mode and returns each one's result. */
  readonly race: (input: { bindings: Binding[]; readyBindings: Binding[]; groupSize: number }, count: number) => Promise<GroupRaceResult[]>;
  /** An ISO-8601 UTC time `seconds` after the suite's epoch. */
  readonly at: (seconds: number) => string;
  readonly hmac: { readonly hmacKey: Buffer; readonly keyId: string };
}

/** Registers the group cases (call inside the store's describe, after its beforeEach). */
export function describeGroupWrites(ctx: GroupContext): void {
  const { makeBinding, driveTo, expectCode, at } = ctx;

  describe('grouped reads and writes (getMany, writeGroup: one transaction per group)', () => {
    test('round trip, sealed and encrypted: creates then claims in groups; getMany returns them in order (null for absent, a repeated binding twice); written records serve as expected', async () => {
      const s = await ctx.target().open({ ...ctx.hmac, encryptionKey: Buffer.alloc(32, 5), encryptionKeyId: 'enc-5' });
      const bindings = [makeBinding(), makeBinding(), makeBinding()];
      const fresh = bindings.map((b) => createCheckpoint(b, { createdAt: at(0) }));

      const created = await s.writeGroup(fresh.map((record) => ({ kind: 'create', record })));
      const claims = fresh.map((r, i) => claimExecution(r, { attemptId: `a${i}`, at: at(1) }));
      const swapped = await s.writeGroup(claims.map((c, i) => ({ kind: 'cas', expectedRevision: c.expectedRevision, next: c.next, expected: fresh[i]! })));
      const done = claims.map((c, i) => completeExecution(c.next, { attemptId: `a${i}`, at: at(2), result: { secret: `card #4242 ${i}` } }));
      const completed = await s.writeGroup(done.map((d, i) => ({ kind: 'cas', expectedRevision: d.expectedRevision, next: d.next, expected: claims[i]!.next })));
      const absent = makeBinding();
      const read = await s.getMany([bindings[2]!, absent, bindings[0]!, bindings[1]!, bindings[0]!]);

      expect(created).toEqual(fresh.map((record) => ({ kind: 'create', created: true, record })));
      expect(swapped).toEqual([
        { kind: 'cas', swapped: true },
        { kind: 'cas', swapped: true },
        { kind: 'cas', swapped: true },
      ]);
      expect(completed).toEqual([
        { kind: 'cas', swapped: true },
        { kind: 'cas', swapped: true },
        { kind: 'cas', swapped: true },
      ]);
      expect(read).toEqual([done[2]!.next, null, done[0]!.next, done[1]!.next, done[0]!.next]);
      expect(read[0]?.result?.payload).toEqual({ secret: 'card #4242 2' });
      const raw = (await ctx.target().raw.row(checkpointKey(bindings[0]!)))!;
      expect(raw.body).not.toContain('#4242');
      expect(JSON.parse(raw.body).seal).toMatchObject({ keyId: 'seal-1' });
      expect(await s.getMany([])).toEqual([]);
      expect(await s.writeGroup([])).toEqual([]);
    });

    test('a mixed group: each write answers as its single method would (a create finds a row or another binding of its call, a compare-and-swap loses); losers change nothing', async () => {
      const store = ctx.store();
      const existing = makeBinding();
      const stored = await driveTo(store, existing, 'executing', 0);
      const sameCall = makeBinding(existing.callId, { toolRevision: '2' });
      const moved = makeBinding();
      const movedRead = (await store.createIfAbsent(createCheckpoint(moved, { createdAt: at(0) }))).record;
      const winner = claimExecution(movedRead, { attemptId: 'first', at: at(1) });
      expect(await store.compareAndSwap(0, winner.next, movedRead)).toBe(true);
      const loser = claimExecution(movedRead, { attemptId: 'late', at: at(1) });
      const ready = makeBinding();
      const readyRead = (await store.createIfAbsent(createCheckpoint(ready, { createdAt: at(0) }))).record;
      const claim = claimExecution(readyRead, { attemptId: 'a1', at: at(1) });
      const fresh = createCheckpoint(makeBinding(), { createdAt: at(0) });
      const before = await ctx.target().raw.row(checkpointKey(moved));

      const results = await store.writeGroup([
        { kind: 'create', record: createCheckpoint(existing, { createdAt: at(2) }) },
        { kind: 'cas', expectedRevision: 0, next: loser.next, expected: movedRead },
        { kind: 'create', record: fresh },
        { kind: 'cas', expectedRevision: 0, next: claim.next, expected: readyRead },
      ]);
      const other = await store.writeGroup([{ kind: 'create', record: createCheckpoint(sameCall, { createdAt: at(2) }) }]);

      expect(results).toEqual([
        { kind: 'create', created: false, record: stored },
        { kind: 'cas', swapped: false },
        { kind: 'create', created: true, record: fresh },
        { kind: 'cas', swapped: true },
      ]);
      expect(other).toEqual([{ kind: 'create', created: false, record: stored }]);
      expect(await ctx.target().raw.row(checkpointKey(moved))).toEqual(before);
      expect(await store.getMany([existing, moved, fresh.binding, ready, sameCall])).toEqual([stored, winner.next, fresh, claim.next, null]);
    });

    test('bad groups are INVALID_ARGUMENT naming the write, before anything is written: two writes on one key or one call, a cas without a record this store returned, more than 1,000', async () => {
      const store = ctx.store();
      const a = makeBinding();
      const first = createCheckpoint(a, { createdAt: at(0) });
      const readyRead = (await store.createIfAbsent(createCheckpoint(makeBinding(), { createdAt: at(0) }))).record;
      const claim = claimExecution(readyRead, { attemptId: 'a1', at: at(1) });
      const cases: Array<{ writes: GroupWrite[]; index: number; field: string }> = [
        {
          writes: [
            { kind: 'create', record: first },
            { kind: 'create', record: createCheckpoint(a, { createdAt: at(1) }) },
          ],
          index: 1,
          field: 'writes',
        },
        {
          writes: [
            { kind: 'create', record: first },
            { kind: 'create', record: createCheckpoint(makeBinding(a.callId, { toolRevision: '2' }), { createdAt: at(0) }) },
          ],
          index: 1,
          field: 'writes',
        },
        {
          writes: [
            { kind: 'create', record: first },
            { kind: 'cas', expectedRevision: 0, next: claim.next, expected: { ...readyRead } },
          ],
          index: 1,
          field: 'expected',
        },
        { writes: [{ kind: 'create', record: first }, { kind: 'cas', expectedRevision: 0, next: claim.next } as unknown as GroupWrite], index: 1, field: 'expected' },
        { writes: [{ kind: 'create', record: first }, { kind: 'delete', record: first } as unknown as GroupWrite], index: 1, field: 'kind' },
      ];

      for (const c of cases) {
        const error = await expectCode(store.writeGroup(c.writes), 'INVALID_ARGUMENT');
        expect(error.details).toMatchObject({ index: c.index, field: c.field });
      }
      const many = Array.from({ length: 1_001 }, () => ({ kind: 'create', record: first }) as const);
      expect((await expectCode(store.writeGroup(many), 'INVALID_ARGUMENT')).details).toMatchObject({ field: 'writes', limit: 1_000, actual: 1_001 });
      expect((await expectCode(store.getMany(Array.from({ length: 1_001 }, () => a)), 'INVALID_ARGUMENT')).details).toMatchObject({ field: 'bindings', limit: 1_000 });
      expect(await store.getMany([a, readyRead.binding])).toEqual([null, readyRead]);
    });

    test('a damaged row in a group is never overwritten: its compare-and-swap is false, a create on it throws its quarantine code after the rest of the group committed; getMany throws it too', async () => {
      const store = ctx.store();
      const damagedCas = makeBinding();
      const damagedCreate = makeBinding();
      const read = await driveTo(store, damagedCas, 'executing', 0);
      await driveTo(store, damagedCreate, 'ready', 0);
      for (const b of [damagedCas, damagedCreate]) await ctx.target().raw.update(checkpointKey(b), { body: 'not json' });
      const rows = await Promise.all([damagedCas, damagedCreate].map((b) => ctx.target().raw.row(checkpointKey(b))));
      const done = completeExecution(read, { attemptId: 'a1', at: at(1), result: { ok: true } });
      const fresh = createCheckpoint(makeBinding(), { createdAt: at(0) });

      const swapped = await store.writeGroup([{ kind: 'cas', expectedRevision: done.expectedRevision, next: done.next, expected: read }]);
      const error = await expectCode(
        store.writeGroup([
          { kind: 'create', record: fresh },
          { kind: 'create', record: createCheckpoint(damagedCreate, { createdAt: at(1) }) },
        ]),
        'INVALID_CHECKPOINT',
      );
      const fromGetMany = await expectCode(store.getMany([fresh.binding, damagedCreate]), 'INVALID_CHECKPOINT');

      expect(swapped).toEqual([{ kind: 'cas', swapped: false }]);
      expect(error.details.key).toBe(checkpointKey(damagedCreate));
      expect(fromGetMany.details.key).toBe(checkpointKey(damagedCreate));
      expect(await store.get(fresh.binding)).toEqual(fresh);
      expect(await Promise.all([damagedCas, damagedCreate].map((b) => ctx.target().raw.row(checkpointKey(b))))).toEqual(rows);
    });

    test('4 processes claim 300 fresh and 300 ready records in overlapping groups of 50 (claiming inserts, compare-and-swaps): exactly one claim wins per record', async () => {
      const store = ctx.store();
      const fresh = Array.from({ length: 300 }, (_, i) => makeBinding(`group-insert-${i}`));
      const ready = Array.from({ length: 300 }, (_, i) => makeBinding(`group-claim-${i}`));
      await store.writeGroup(ready.map((b) => ({ kind: 'create', record: createCheckpoint(b, { createdAt: at(0) }) })));

      const results = await ctx.race({ bindings: fresh, readyBindings: ready, groupSize: 50 }, 4);

      for (const [kind, bindings] of [
        ['inserts', fresh],
        ['claims', ready],
      ] as const) {
        const owners = new Map<number, number[]>();
        results.forEach((r, w) => r[kind].wins.forEach((index) => owners.set(index, [...(owners.get(index) ?? []), w])));
        expect({ kind, records: owners.size, shared: [...owners.values()].filter((w) => w.length !== 1) }).toEqual({ kind, records: 300, shared: [] });
        expect(results.reduce((n, r) => n + r[kind].lost, 0)).toBe(900);
        const stored: Array<CheckpointRecord | null> = await store.getMany(bindings);
        stored.forEach((record, index) => expect(record).toMatchObject({ status: 'executing', revision: 1, execution: { attemptId: `w${owners.get(index)![0]}-${index}` } }));
      }
    }, 120_000);
  });
}
