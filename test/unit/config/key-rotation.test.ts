/**
 * Key rotation from configuration: the current HMAC and encryption keys write,
 * older keys listed by id (`TTC_HMAC_KEYS`, `TTC_ENCRYPTION_KEYS` as `id:key,id:key`) still read,
 * so changing the current key does not quarantine every row. Real SQLite store, opened the way
 * the worker and the CLI open it (`storeOptions(config)`).
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { isCheckpointError } from '../../../src/checkpoint/errors';
import { createCheckpoint } from '../../../src/checkpoint/record';
import { claimDelivery, claimExecution, completeExecution } from '../../../src/checkpoint/transitions';
import { fingerprintInput } from '../../../src/checkpoint/digest';
import type { Binding, CheckpointRecord } from '../../../src/checkpoint/types';
import { resolveConfig, type Config } from '../../../src/config';
import { checkpointKey } from '../../../src/stores/checkpoint-key';
import type { CheckpointStore } from '../../../src/stores/checkpoint-store';
import { openCheckpointStore } from '../../../src/stores/open-checkpoint-store';
import { storeOptions } from '../../../src/worker';

// Random-looking fixed keys (key material refuses low-entropy keys such as 32 × 0x11); bare hex and
// `base64:` text.
const HMAC_1_BYTES = createHash('sha256').update('hmac key 1').digest();
const HMAC_2_BYTES = createHash('sha512').update('hmac key 2').digest().subarray(0, 48);
const ENC_1_BYTES = createHash('sha256').update('encryption key 1').digest();
const ENC_2_BYTES = createHash('sha256').update('encryption key 2').digest();
const HMAC_1 = HMAC_1_BYTES.toString('hex');
const HMAC_2 = `base64:${HMAC_2_BYTES.toString('base64')}`;
const ENC_1 = ENC_1_BYTES.toString('hex');
const ENC_2 = `base64:${ENC_2_BYTES.toString('base64')}`;
const AT = '2030-01-01T00:00:00.000Z';

function binding(callId: string): Binding {
  return { namespace: 'tenant', callId, toolName: 'create_ticket', toolRevision: '1', inputFingerprint: fingerprintInput({ callId }) };
}

function configError(env: Record<string, string>): { code: string; message: string; details: Record<string, unknown> } {
  try {
    resolveConfig({}, env);
  } catch (error) {
    if (isCheckpointError(error)) return error as unknown as { code: string; message: string; details: Record<string, unknown> };
    throw error;
  }
  throw new Error(`expected INVALID_CONFIG for ${JSON.stringify(env)}`);
}

describe('key rotation from configuration (TTC_HMAC_KEYS, TTC_ENCRYPTION_KEYS)', () => {
  let dir: string;
  let file: string;
  const stores: CheckpointStore[] = [];
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-rotation-'));
    file = join(dir, 'checkpoints.db');
  });
  afterEach(async () => {
    for (const store of stores.splice(0)) await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function open(env: Record<string, string>): Promise<{ config: Config; store: CheckpointStore }> {
    const config = resolveConfig({}, { TTC_STORE_URL: `sqlite:${file}`, ...env });
    const store = await openCheckpointStore(config.store.url, storeOptions(config));
    stores.push(store);
    return { config, store };
  }

  async function complete(store: CheckpointStore, b: Binding, payload: unknown): Promise<CheckpointRecord> {
    const created = (await store.createIfAbsent(createCheckpoint(b, { createdAt: AT }))).record;
    const claim = claimExecution(created, { attemptId: 'a1', at: AT });
    expect(await store.compareAndSwap(claim.expectedRevision, claim.next, created)).toBe(true);
    const done = completeExecution(claim.next, { attemptId: 'a1', at: AT, result: payload });
    expect(await store.compareAndSwap(done.expectedRevision, done.next, claim.next)).toBe(true);
    return done.next;
  }

  function rawBody(b: Binding): { seal: { keyId: string }; result: { payload: { kid: string } } | null } {
    const db = new Database(file, { readonly: true });
    try {
      return JSON.parse((db.prepare('SELECT body FROM ttc_checkpoints WHERE key = ?').get(checkpointKey(b)) as { body: string }).body);
    } finally {
      db.close();
    }
  }

  const FIRST = { TTC_HMAC_KEY: HMAC_1, TTC_HMAC_KEY_ID: 'k1', TTC_ENCRYPTION_KEY: ENC_1, TTC_ENCRYPTION_KEY_ID: 'e1' };
  const ROTATED = {
    TTC_HMAC_KEY: HMAC_2,
    TTC_HMAC_KEY_ID: 'k2',
    TTC_HMAC_KEYS: `k1:${HMAC_1}`,
    TTC_ENCRYPTION_KEY: ENC_2,
    TTC_ENCRYPTION_KEY_ID: 'e2',
    TTC_ENCRYPTION_KEYS: ` e1:${ENC_1} `,
  };

  test('rows written under k1/e1 read after rotating to k2/e2 with k1/e1 listed as older keys; new rows are written under k2/e2', async () => {
    const { store: before } = await open(FIRST);
    const old = await complete(before, binding('old'), { ticket: 'T-1' });
    await before.close();
    expect(rawBody(binding('old')).seal.keyId).toBe('k1');
    expect(rawBody(binding('old')).result?.payload.kid).toBe('e1');

    const { config, store } = await open(ROTATED);

    expect(Object.keys(config.keys.hmacKeys)).toEqual(['k1']);
    expect(Object.keys(config.keys.encryptionKeys)).toEqual(['e1']);
    const read = (await store.get(binding('old')))!;
    expect(read).toEqual(old);
    expect(read.result?.payload).toEqual({ ticket: 'T-1' });
    // A transition of an old row is written under the current keys.
    const delivering = claimDelivery(read, { deliveryId: 'd1', at: AT });
    expect(await store.compareAndSwap(delivering.expectedRevision, delivering.next, read)).toBe(true);
    expect(rawBody(binding('old')).seal.keyId).toBe('k2');
    expect(rawBody(binding('old')).result?.payload.kid).toBe('e2');
    const fresh = await complete(store, binding('new'), { ticket: 'T-2' });
    expect(rawBody(binding('new')).seal.keyId).toBe('k2');
    expect(rawBody(binding('new')).result?.payload.kid).toBe('e2');
    expect(await store.get(binding('new'))).toEqual(fresh);
    expect(await store.listQuarantined()).toEqual([]);
  });

  test('without the older keys listed, the old rows are quarantined (what rotation used to do to every row)', async () => {
    const { store: before } = await open(FIRST);
    await complete(before, binding('old'), { ticket: 'T-1' });
    await before.close();

    const { store: noHmacHistory } = await open({ ...ROTATED, TTC_HMAC_KEYS: '' });
    const { store: noEncryptionHistory } = await open({ ...ROTATED, TTC_ENCRYPTION_KEYS: '' });

    await expect(noHmacHistory.get(binding('old'))).rejects.toMatchObject({ code: 'INTEGRITY_FAILURE', details: { reason: 'unknown-key', keyId: 'k1' } });
    await expect(noEncryptionHistory.get(binding('old'))).rejects.toMatchObject({ code: 'DECRYPTION_FAILED', details: { reason: 'unknown-key', keyId: 'e1' } });
  });

  test('several older keys, and the keys environment variable names can be changed in the config file', () => {
    const config = resolveConfig(
      { keys: { hmacKeysEnv: 'OLD_SEALS', encryptionKeysEnv: 'OLD_PAYLOAD_KEYS' } },
      { TTC_HMAC_KEY: HMAC_2, TTC_HMAC_KEY_ID: 'k3', OLD_SEALS: `k1:${HMAC_1}, k2:${HMAC_2}`, OLD_PAYLOAD_KEYS: `e1:${ENC_1},e2:${ENC_2}` },
    );

    expect(config.keys.hmacKeys).toEqual({ k1: HMAC_1_BYTES, k2: HMAC_2_BYTES });
    expect(config.keys.encryptionKeys).toEqual({ e1: ENC_1_BYTES, e2: ENC_2_BYTES });
    expect(config.keys.encryptionKey).toBeNull();
    expect(storeOptions(config)).toMatchObject({
      keyId: 'k3',
      hmacKeys: { k1: expect.any(Buffer), k2: expect.any(Buffer) },
      encryptionKeys: { e1: expect.any(Buffer), e2: expect.any(Buffer) },
    });
  });

  test.each<[string, Record<string, string>, string, RegExp]>([
    ['an entry without a colon', { TTC_HMAC_KEY: HMAC_2, TTC_HMAC_KEY_ID: 'k2', TTC_HMAC_KEYS: HMAC_1 }, 'TTC_HMAC_KEYS', /entry 1 must be id:key/],
    ['a bad key id', { TTC_HMAC_KEY: HMAC_2, TTC_HMAC_KEY_ID: 'k2', TTC_HMAC_KEYS: `k 1:${HMAC_1}` }, 'TTC_HMAC_KEYS', /key id "k 1"/],
    [
      'a short HMAC key',
      { TTC_HMAC_KEY: HMAC_2, TTC_HMAC_KEY_ID: 'k2', TTC_HMAC_KEYS: `k1:${HMAC_1},k0:${HMAC_1.slice(0, 32)}` },
      'TTC_HMAC_KEYS',
      /key id "k0" must hold at least 32 bytes/,
    ],
    ['an id listed twice', { TTC_HMAC_KEY: HMAC_2, TTC_HMAC_KEY_ID: 'k2', TTC_HMAC_KEYS: `k1:${HMAC_1},k1:${HMAC_1}` }, 'TTC_HMAC_KEYS', /lists key id "k1" twice/],
    ['the current id with another key', { TTC_HMAC_KEY: HMAC_2, TTC_HMAC_KEY_ID: 'k2', TTC_HMAC_KEYS: `k2:${HMAC_1}` }, 'TTC_HMAC_KEYS', /another key than TTC_HMAC_KEY/],
    ['older HMAC keys without a current one', { TTC_HMAC_KEYS: `k1:${HMAC_1}` }, 'TTC_HMAC_KEYS', /TTC_HMAC_KEY \(the current key\) is not set/],
    ['an entry with no key', { TTC_ENCRYPTION_KEYS: 'e1:' }, 'TTC_ENCRYPTION_KEYS', /key id "e1" has no key/],
    ['an encryption key that is not 32 bytes', { TTC_ENCRYPTION_KEYS: `e1:${ENC_1.slice(2)}` }, 'TTC_ENCRYPTION_KEYS', /must hold exactly 32 bytes/],
    ['a bare base64 key (read as lenient base64 by earlier builds)', { TTC_HMAC_KEY: HMAC_2.slice('base64:'.length) }, 'TTC_HMAC_KEY', /"base64:" followed by base64/],
    ['the current encryption id with another key', { TTC_ENCRYPTION_KEY: ENC_2, TTC_ENCRYPTION_KEYS: `e1:${ENC_1}` }, 'TTC_ENCRYPTION_KEYS', /another key than TTC_ENCRYPTION_KEY/],
  ])('%s is INVALID_CONFIG naming the variable, without showing key material', (_label, env, variable, says) => {
    const error = configError(env);

    expect(error.code).toBe('INVALID_CONFIG');
    expect(error.details.field).toBe(variable);
    expect(error.message).toMatch(says);
    expect(error.message).not.toContain(HMAC_1);
    expect(error.message).not.toContain(ENC_1);
  });

  test('an encryption key list alone (turning encryption off) reads old ciphertexts and writes plaintext', async () => {
    const { store: before } = await open({ TTC_ENCRYPTION_KEY: ENC_1, TTC_ENCRYPTION_KEY_ID: 'e1' });
    await complete(before, binding('old'), { v: 1 });
    await before.close();

    const { store } = await open({ TTC_ENCRYPTION_KEYS: `e1:${ENC_1}` });

    expect((await store.get(binding('old')))?.result?.payload).toEqual({ v: 1 });
    await complete(store, binding('new'), { v: 2 });
    expect(rawBody(binding('new')).result?.payload).toEqual({ v: 2 });
  });
});
