/**
 * docs/protocol.md#key-lifetime: a same-key repeat counts as reconciliation only while the
 * provider still remembers the key whenever the repeat's request or the holder's lands, each by its
 * settle time (`keyOutlivesRepeat`). The provider modelled here remembers a key from its first use
 * (at or after the checkpoint's creation) for `keyRetentionMs`, the end excluded; the first use is
 * whichever request lands first.
 */
import fc from 'fast-check';
import { keyOutlivesRepeat } from '../../../src/activities/fence/fence-deps';
import type { CheckpointRecord } from '../../../src/checkpoint/types';

const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const recordCreatedAt = (ms: number): CheckpointRecord => ({ createdAt: new Date(ms).toISOString() }) as CheckpointRecord;

describe('keyOutlivesRepeat', () => {
  it('a repeat that settles at the instant the key expires is not a reconciliation (explorer finding F)', () => {
    const tool = { dedupesByKey: true, keyRetentionMs: 15_501 };
    expect(keyOutlivesRepeat(recordCreatedAt(T0), tool, T0 + 15_501, T0)).toBe(false);
    expect(keyOutlivesRepeat(recordCreatedAt(T0), tool, T0 + 15_500, T0)).toBe(true);
  });

  it('a holder that may still send after the key expires is not repeated: an item claimed second in a group (deadline two call deadlines out), whose repeat alone would settle in time (batch explorer, seed -327833121)', () => {
    // callDeadlineMs 20,000, margin 500, keyRetentionMs 20,502: the repeat at t = 1 settles at 20,501, inside the key's
    // retention; the holder's item 1 may be sent until 40,000 and land until 40,500, after the key the repeat used first expired.
    const tool = { dedupesByKey: true, keyRetentionMs: 20_502 };
    expect(keyOutlivesRepeat(recordCreatedAt(T0), tool, T0 + 20_501, T0 + 40_500)).toBe(false);
    expect(keyOutlivesRepeat(recordCreatedAt(T0), tool, T0 + 20_501, T0 + 20_500)).toBe(true);
  });

  it('never for a provider that does not deduplicate by key', () => {
    expect(keyOutlivesRepeat(recordCreatedAt(T0), { dedupesByKey: false, keyRetentionMs: 86_400_000 }, T0 + 1, T0)).toBe(false);
  });

  it('property: whenever it says yes, the request that lands second lands while the provider remembers the key from the first, whichever lands first, around the boundary too', () => {
    const aroundEnd = fc.oneof(fc.integer({ min: -3, max: 3 }), fc.integer({ min: -100_000, max: 100_000 }));
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 100_000 }), // keyRetentionMs
        aroundEnd, // the repeat's settle time, around the end of the retention
        aroundEnd, // the holder's settle time, likewise
        fc.double({ min: 0, max: 1, noNaN: true }), // where in [creation, its settle time] the repeat's request lands
        fc.double({ min: 0, max: 1, noNaN: true }), // where the holder's lands
        (retention, repeatOffset, holderOffset, repeatAt, holderAt) => {
          const repeatSettles = T0 + retention + repeatOffset;
          const holderSettles = T0 + retention + holderOffset;
          if (!keyOutlivesRepeat(recordCreatedAt(T0), { dedupesByKey: true, keyRetentionMs: retention }, repeatSettles, holderSettles)) return;
          // Neither request lands before the checkpoint was created, nor after its settle time.
          const repeatLands = T0 + Math.floor(repeatAt * Math.max(0, repeatSettles - T0));
          const holderLands = T0 + Math.floor(holderAt * Math.max(0, holderSettles - T0));
          const first = Math.min(repeatLands, holderLands);
          const second = Math.max(repeatLands, holderLands);
          expect(second).toBeLessThan(first + retention);
        },
      ),
      { numRuns: 2_000 },
    );
  });
});
