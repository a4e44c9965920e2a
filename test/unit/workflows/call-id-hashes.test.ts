// Call ids carried across continue-as-new as fixed-width hashes: 8 characters per id
// whatever its length, every id found again after a round trip.
import fc from 'fast-check';
import { CALL_ID_HASH_CHARS, callIdHash, packCallIdHashes, unpackCallIdHashes } from '../../../src/workflows/agent/call-id-hashes';

describe('call id hashes', () => {
  it('pack and unpack keep every id (no false negative), 8 hex characters each', () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.string({ minLength: 1, maxLength: 3_000 }), { maxLength: 200 }), (ids) => {
        const packed = packCallIdHashes(new Set(ids.map(callIdHash)));
        expect(packed.length % CALL_ID_HASH_CHARS).toBe(0);
        expect(packed.length).toBeLessThanOrEqual(ids.length * CALL_ID_HASH_CHARS);
        expect(packed).toMatch(/^[0-9a-f]*$/);
        const hashes = unpackCallIdHashes(packed);
        for (const id of ids) expect(hashes.has(callIdHash(id))).toBe(true);
      }),
    );
  });

  it('is FNV-1a 32 (published test vectors) and tells the ids of a reusing provider apart', () => {
    expect(callIdHash('')).toBe('811c9dc5');
    expect(callIdHash('a')).toBe('e40c292c');
    expect(callIdHash('foobar')).toBe('bf9cf968');
    const ids = Array.from({ length: 1_000 }, (_, i) => `ollama_${i}`);
    expect(new Set(ids.map(callIdHash)).size).toBe(ids.length);
  });
});
