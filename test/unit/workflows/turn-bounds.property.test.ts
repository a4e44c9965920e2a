/**
 * The turn bounds as a rule over any turn: the calls that run are the longest prefix, in the
 * model's order, within both bounds; every other call is refused with the bound it crossed.
 */
import fc from 'fast-check';
import { turnRefusals } from '../../../src/workflows/agent/turn-bounds';

const size = (input: unknown): number => Buffer.byteLength(JSON.stringify(input), 'utf8');

describe('turn bounds', () => {
  it('the calls that run are the longest prefix within maxCalls and maxInputBytes; the rest are refused with the bound first crossed', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ text: fc.string({ unit: 'grapheme', maxLength: 40 }) }), { maxLength: 30 }),
        fc.integer({ min: 1, max: 20 }),
        fc.integer({ min: 1, max: 600 }),
        (inputs, maxCalls, maxInputBytes) => {
          const refusals = turnRefusals(inputs, { maxCalls, maxInputBytes });
          expect(refusals).toHaveLength(inputs.length);
          const admitted = refusals.findIndex((r) => r !== null);
          const runs = admitted === -1 ? inputs.length : admitted;
          // A prefix: after the first refusal every call is refused, with the same refusal.
          expect(refusals.slice(runs).every((r) => r !== null && r.type === refusals[runs]!.type)).toBe(true);
          const bytes = inputs.slice(0, runs).reduce((sum, input) => sum + size(input), 0);
          expect(runs).toBeLessThanOrEqual(maxCalls);
          expect(bytes).toBeLessThanOrEqual(maxInputBytes);
          // The longest: one more call would cross a bound, and the refusal names that bound.
          if (runs < inputs.length) {
            const crossesCount = runs + 1 > maxCalls;
            expect(crossesCount || bytes + size(inputs[runs]) > maxInputBytes).toBe(true);
            expect(refusals[runs]!.type).toBe(crossesCount ? 'TOO_MANY_TOOL_CALLS' : 'TURN_INPUT_TOO_LARGE');
          }
        },
      ),
      { seed: 20261204, numRuns: 1000 },
    );
  });
});
