/**
 * AES-GCM with full 16-byte tags and 12-byte IVs only, and everything in a
 * stored record that can carry tool or provider text encrypted when encryption is on: the
 * result payload (a success or a handler error) and `execution.uncertainReason` (which quotes
 * tool and provider error text). Records written before stay readable. Real SQLite stores.
 */
import { createCipheriv, createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { fingerprintInput } from '../../src/checkpoint/digest';
import { createCheckpoint } from '../../src/checkpoint/record';
import { claimExecution, markExecutionUncertain } from '../../src/checkpoint/transitions';
import type { Binding, CheckpointRecord } from '../../src/checkpoint/types';
import { checkpointKey } from '../../src/stores/checkpoint-key';
import type { CheckpointStore, CheckpointStoreOptions } from '../../src/stores/checkpoint-store';
import { openCheckpointStore } from '../../src/stores/open-checkpoint-store';
import { createPayloadCipher, type EncryptedPayload } from '../../src/stores/payload-cipher';

const KEY = createHash('sha256').update('item 7 key').digest();
const ENCRYPTED: CheckpointStoreOptions = { encryptionKey: KEY, encryptionKeyId: 'e1' };
const AT = '2030-01-01T00:00:00.000Z';
const SECRET_REASON = 'provider said: 500 for account acct_SECRET_4242 (card ending 4242), request may have been sent';

function binding(callId: string): Binding {
  return { namespace: 'tenant', callId, toolName: 'charge_card', toolRevision: '1', inputFingerprint: fingerprintInput({ callId }) };
}

describe('AES-GCM lengths and what is encrypted', () => {
  const cipher = createPayloadCipher(ENCRYPTED)!;

  test('an authentication tag truncated to 4 bytes is refused (DECRYPTION_FAILED), not checked on its first 4 bytes', () => {
    const envelope = cipher.encrypt({ ok: true }, 'row-1') as unknown as EncryptedPayload;
    const short = { ...envelope, tag: Buffer.from(envelope.tag, 'base64url').subarray(0, 4).toString('base64url') };

    expect(() => cipher.decrypt(short, 'row-1')).toThrow(expect.objectContaining({ code: 'DECRYPTION_FAILED', details: expect.objectContaining({ reason: 'bad-tag' }) }));
    expect(cipher.decrypt(envelope, 'row-1')).toEqual({ ok: true });
  });

  test('an IV that is not 12 bytes is refused, even when the envelope authenticates with the right key', () => {
    const iv = Buffer.alloc(16, 7);
    const gcm = createCipheriv('aes-256-gcm', KEY, iv);
    gcm.setAAD(Buffer.from('ttc/payload/1\ne1\nrow-1', 'utf8'));
    const ct = Buffer.concat([gcm.update('{"ok":true}', 'utf8'), gcm.final()]);
    const envelope: EncryptedPayload = { $enc: 'A256GCM', kid: 'e1', iv: iv.toString('base64url'), tag: gcm.getAuthTag().toString('base64url'), ct: ct.toString('base64url') };

    expect(() => cipher.decrypt(envelope, 'row-1')).toThrow(expect.objectContaining({ code: 'DECRYPTION_FAILED', details: expect.objectContaining({ reason: 'bad-iv' }) }));
  });

  describe('stored records', () => {
    let dir: string;
    let file: string;
    const stores: CheckpointStore[] = [];
    beforeEach(() => {
      dir = mkdtempSync(join(tmpdir(), 'ttc-item7-'));
      file = join(dir, 'checkpoints.db');
    });
    afterEach(async () => {
      for (const store of stores.splice(0)) await store.close();
      rmSync(dir, { recursive: true, force: true });
    });

    async function open(options: CheckpointStoreOptions): Promise<CheckpointStore> {
      const store = await openCheckpointStore(`sqlite:${file}`, options);
      stores.push(store);
      return store;
    }

    async function uncertain(store: CheckpointStore, b: Binding, reason: string): Promise<CheckpointRecord> {
      const created = (await store.createIfAbsent(createCheckpoint(b, { createdAt: AT }))).record;
      const claim = claimExecution(created, { attemptId: 'a1', at: AT });
      expect(await store.compareAndSwap(claim.expectedRevision, claim.next, created)).toBe(true);
      const mark = markExecutionUncertain(claim.next, { attemptId: 'a1', at: AT, reason });
      expect(await store.compareAndSwap(mark.expectedRevision, mark.next, claim.next)).toBe(true);
      return mark.next;
    }

    function rawBody(b: Binding): string {
      const db = new Database(file, { readonly: true });
      try {
        return (db.prepare('SELECT body FROM ttc_checkpoints WHERE key = ?').get(checkpointKey(b)) as { body: string }).body;
      } finally {
        db.close();
      }
    }

    test('with encryption on, uncertainReason (tool and provider error text) is stored encrypted and reads back as written', async () => {
      const store = await open(ENCRYPTED);
      const written = await uncertain(store, binding('c1'), SECRET_REASON);

      expect(rawBody(binding('c1'))).not.toContain('acct_SECRET_4242');
      expect(JSON.parse(rawBody(binding('c1'))).execution.uncertainReason).toMatch(/^\$enc:A256GCM:/);
      expect(await store.get(binding('c1'))).toEqual(written);
      expect((await store.listByStatus(['uncertain']))[0]?.execution?.uncertainReason).toBe(SECRET_REASON);
    });

    test('a reason of 2,048 three-byte characters still fits its stored (encrypted) form', async () => {
      const store = await open(ENCRYPTED);
      const long = '€'.repeat(2_048);
      await uncertain(store, binding('long'), long);
      expect((await store.get(binding('long')))?.execution?.uncertainReason).toBe(long);
    });

    test('records written before (plaintext reason) stay readable once encryption is on; without the key an encrypted reason is DECRYPTION_FAILED', async () => {
      const before = await open({});
      await uncertain(before, binding('old'), SECRET_REASON);
      const encrypted = await open(ENCRYPTED);
      await uncertain(encrypted, binding('new'), SECRET_REASON);

      expect((await encrypted.get(binding('old')))?.execution?.uncertainReason).toBe(SECRET_REASON);
      await expect(before.get(binding('new'))).rejects.toMatchObject({
        code: 'DECRYPTION_FAILED',
        details: { field: 'execution.uncertainReason', keyId: 'e1', reason: 'no-keys' },
      });
    });

    test('a tool reason that itself starts with "$enc:" is stored and read back as itself, with and without a key', async () => {
      const forged = '$enc:A256GCM:AAAA:BBBB:CCCC:e1';
      for (const [callId, options] of [
        ['plain', {}],
        ['enc', ENCRYPTED],
      ] as const) {
        const store = await open(options);
        await uncertain(store, binding(callId), forged);
        expect((await store.get(binding(callId)))?.execution?.uncertainReason).toBe(forged);
      }
    });
  });
});
