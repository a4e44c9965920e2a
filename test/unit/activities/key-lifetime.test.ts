/**
 * docs/protocol.md#key-lifetime: a same-key repeat counts as reconciliation only while the
 * provider still remembers the key until the repeat's settle time, the latest its request can land (`keyOutlivesRepeat`).
 * The provider modelled here remembers a key from its first use (at or after the checkpoint's
 * creation) for `keyRetentionMs`, the end excluded.
 */
import fc from 'fast-check';
import { keyOutlivesRepeat } from '../../../src/activities/fence/fence-deps';
import type { CheckpointRecord } from '../../../src/checkpoint/types';

const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const recordCreatedAt = (ms: number): CheckpointRecord => ({ createdAt: new Date(ms).toISOString() }) as CheckpointRecord;

describe('keyOutlivesRepeat', () => {
  it('a repeat that settles at the instant the key expires is not a reconciliation (explorer finding F)', () => {
    const tool = { dedupesByKey: true, keyRetentionMs: 15_501 };
    expect(keyOutlivesRepeat(recordCreatedAt(T0), tool, T0 + 15_501)).toBe(false);
    expect(keyOutlivesRepeat(recordCreatedAt(T0), tool, T0 + 15_500)).toBe(true);
  });

  it('never for a provider that does not deduplicate by key', () => {
    expect(keyOutlivesRepeat(recordCreatedAt(T0), { dedupesByKey: false, keyRetentionMs: 86_400_000 }, T0 + 1)).toBe(false);
  });

  it('property: whenever it says yes, every landing time of the repeat is inside the provider memory of the key, around the boundary too', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 100_000 }), // keyRetentionMs
        fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 50 })), // first use of the key after the record was created, ms
        fc.integer({ min: -3, max: 3 }), // the repeat's end, around the end of the retention
        fc.oneof(fc.integer({ min: 0, max: 2 }), fc.integer({ min: 0, max: 100_000 })), // how long before its end the repeat's request lands
        (retention, firstUseAfter, offset, landsBeforeEnd) => {
          const repeatEndsAt = T0 + retention + offset;
          const landsAt = repeatEndsAt - landsBeforeEnd;
          const remembered = landsAt >= T0 + firstUseAfter && landsAt < T0 + firstUseAfter + retention;
          const firstUseLater = landsAt < T0 + firstUseAfter; // lands before the first use: the repeat is the first use
          if (keyOutlivesRepeat(recordCreatedAt(T0), { dedupesByKey: true, keyRetentionMs: retention }, repeatEndsAt)) expect(remembered || firstUseLater).toBe(true);
        },
      ),
      { numRuns: 2_000 },
    );
  });
});
