/**
 * A worker whose key configuration is wrong (a rotation that did not list the old key, a deploy
 * rolled back to older keys) cannot read a call's stored record: the store quarantines the row
 * (DECRYPTION_FAILED or INTEGRITY_FAILURE) and never changes it. That is a fault of the worker,
 * not a fact about the call: the attempt fails retryably with the typed reason
 * (`details[0].fault: 'key-configuration'`), never as a pause that would offer a person a rerun,
 * and a worker with the right keys then delivers the stored result or reconciles the claim.
 * Real stores: a SQLite file and PostgreSQL, opened with real keys.
 */
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { defineTool, type ToolDefinition } from '../../src/activities';
import { KEY_CONFIGURATION_FAULT } from '../../src/activities/fence/failures';
import type { CheckpointStoreOptions } from '../../src/stores/checkpoint-store';
import { openCheckpointStore } from '../../src/stores/open-checkpoint-store';
import type { CheckpointStore } from '../../src/stores/checkpoint-store';
import { Harness, Provider, UNREACHED_DEADLINE_MS, schema, typeOf, type Call } from './harness';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres';

jest.setTimeout(120_000);

const h = new Harness();
beforeAll(() => h.open());
afterAll(() => h.close());
beforeEach(() => {
  h.offsetMs = 0;
});

const key = (label: string): Buffer => createHash('sha256').update(label).digest();
const HMAC_1 = key('key configuration fault: hmac 1');
const HMAC_2 = key('key configuration fault: hmac 2');
const ENC_1 = key('key configuration fault: encryption 1');
const ENC_2 = key('key configuration fault: encryption 2');

/** The keys of the worker that wrote the record (k1, e1). */
const WROTE: CheckpointStoreOptions = { hmacKey: HMAC_1, keyId: 'k1', encryptionKey: ENC_1, encryptionKeyId: 'e1' };
/** Rotated to k2 without listing k1: every seal written under k1 is unknown here. */
const SEAL_KEY_DROPPED: CheckpointStoreOptions = { hmacKey: HMAC_2, keyId: 'k2', encryptionKey: ENC_1, encryptionKeyId: 'e1' };
/** Rotated to e2 without listing e1: every payload encrypted under e1 is unreadable here. */
const PAYLOAD_KEY_DROPPED: CheckpointStoreOptions = { hmacKey: HMAC_1, keyId: 'k1', encryptionKey: ENC_2, encryptionKeyId: 'e2' };
/** The fixed configuration: new keys current, old keys listed. */
const FIXED: CheckpointStoreOptions = { hmacKey: HMAC_2, keyId: 'k2', hmacKeys: { k1: HMAC_1 }, encryptionKey: ENC_2, encryptionKeyId: 'e2', encryptionKeys: { e1: ENC_1 } };

function keyedTool(provider: Provider): ToolDefinition<any> {
  return defineTool({
    name: 'create_ticket',
    revision: 'v1',
    input: schema,
    callDeadlineMs: UNREACHED_DEADLINE_MS,
    dedupesByKey: true,
    keyRetentionMs: 86_400_000,
    async execute(_input, ctx) {
      return { output: provider.find(ctx.idempotencyKey) ?? provider.apply(ctx.idempotencyKey) };
    },
  });
}

type Backend = 'sqlite' | 'postgres';

describe.each(['sqlite', 'postgres'] as Backend[])('%s store read by a worker with the wrong keys', (backend) => {
  let url: string;
  let db: TestDatabase | undefined;
  const opened: CheckpointStore[] = [];
  let seq = 0;

  beforeAll(async () => {
    if (backend === 'postgres') {
      db = await createTestDatabase();
      url = db.url;
    } else {
      url = `sqlite:${join(h.dir, 'key-configuration.db')}`;
    }
  });
  afterAll(async () => {
    for (const store of opened.splice(0)) await store.close();
    await db?.drop();
  });

  async function store(options: CheckpointStoreOptions): Promise<CheckpointStore> {
    const s = await openCheckpointStore(url, options);
    opened.push(s);
    return s;
  }

  /** The call's record as the fixed configuration reads it. */
  async function recordOf(call: Call) {
    const previous = h.store;
    h.store = await store(FIXED);
    try {
      return await h.recordOf(call);
    } finally {
      h.store = previous;
    }
  }

  test.each([
    { label: 'seal key dropped', wrong: SEAL_KEY_DROPPED, code: 'INTEGRITY_FAILURE' },
    { label: 'payload key dropped', wrong: PAYLOAD_KEY_DROPPED, code: 'DECRYPTION_FAILED' },
  ])(
    'a stored result ($label): the attempt fails retryably with $code and the key-configuration fault, the row is untouched, and a worker with the right keys delivers it',
    async ({ wrong, code }) => {
      const provider = new Provider();
      const tool = keyedTool(provider);
      const call = h.newCall({ callId: `toolu_key_${backend}_${(seq += 1)}` });
      expect(typeOf(await h.run(h.activities([tool], { store: await store(WROTE) }), call, 1))).toBe('result:executed');
      const before = await recordOf(call);

      // Temporal did not record attempt 1's completion; attempt 2 lands on a worker with the wrong keys.
      const second = await h.run(h.activities([tool], { store: await store(wrong) }), call, 2);
      expect(second).toEqual({ failure: expect.objectContaining({ type: code, nonRetryable: false }) });
      expect(await recordOf(call)).toEqual(before);

      const third = await h.run(h.activities([tool], { store: await store(FIXED) }), call, 3);
      expect(third).toEqual({ result: expect.objectContaining({ source: 'store', outcome: before?.result?.payload }) });
      expect(provider.total()).toBe(1);
    },
  );

  test('an unfinished claim under a seal the worker cannot verify: retryable INTEGRITY_FAILURE carrying the typed fault (never OUTCOME_UNKNOWN); the right keys reconcile it by a same-key repeat', async () => {
    const provider = new Provider();
    const tool = keyedTool(provider);
    const call = h.newCall({ callId: `toolu_claim_${backend}_${(seq += 1)}` });
    // Attempt 1 claimed the call and its worker died before the request (the claim is all that was written).
    const killedAfterClaim = {
      step: (point: string) => {
        if (point === 'after-claim') throw new Error('the worker was killed right after the claim');
      },
    };
    expect(typeOf(await h.run(h.activities([tool], { store: await store(WROTE), hooks: killedAfterClaim }), call, 1))).toBe('failure:UNEXPECTED');
    const before = await recordOf(call);
    expect(before?.status).toBe('executing');

    let failure: unknown;
    const acts = h.activities([tool], { store: await store(SEAL_KEY_DROPPED) });
    try {
      await h.env(call, 2).run(acts.runFencedTool, call.input);
    } catch (error) {
      failure = error;
    }
    expect(failure).toEqual(
      expect.objectContaining({ type: 'INTEGRITY_FAILURE', nonRetryable: false, details: [expect.objectContaining({ fault: KEY_CONFIGURATION_FAULT, quarantined: true })] }),
    );
    expect(await recordOf(call)).toEqual(before);

    const third = await h.run(h.activities([tool], { store: await store(FIXED) }), call, 3);
    expect(typeOf(third)).toBe('result:same-key-repeat');
    expect(provider.total()).toBe(1);
  });
});
