/**
 * Tool input numbers: a literal is refused exactly when `JSON.parse` would read it as another
 * number than written (an integer literal no double holds, or a fraction read as an integer), and
 * every literal that passes reaches the tool as the double it names. Explored over integers of
 * every size, exponent forms and doubles' own shortest forms; the named cases are in
 * test/security/model-input.test.ts.
 */
import fc from 'fast-check';
import { literalChangesValue } from '../../src/checkpoint/json-text';
import { parseToolInputText } from '../../src/checkpoint/model-input';
import { textFindingsOf } from '../../src/model/transcript';

/** What the rule says for an integer literal of value `n`: refused iff no double is exactly n. */
const changes = (n: bigint): boolean => BigInt(Number(n)) !== n;

/** The reason `{"n": <literal>}` is refused for, or null when it passes (then its value is Number(literal)). */
function verdict(literal: string): string | null {
  const parsed = parseToolInputText(`{"n": ${literal}}`);
  if (!parsed.ok) return parsed.problem.reason;
  expect(Object.is(parsed.value.n, Number(literal))).toBe(true);
  return null;
}

const SEED = 20261204;

describe('number literals in tool input', () => {
  it('an integer literal of any size passes iff a double holds it exactly (decimal and exponent forms, both signs)', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: -(10n ** 40n), max: 10n ** 40n }), fc.integer({ min: 0, max: 30 }), (mantissa, exponent) => {
        const value = mantissa * 10n ** BigInt(exponent);
        const expected = changes(value) ? 'inexact-number' : null;
        expect(verdict(value.toString())).toBe(expected);
        expect(verdict(`${mantissa}e${exponent}`)).toBe(expected);
        expect(literalChangesValue(`${mantissa}E+${exponent}`, Number(`${mantissa}e${exponent}`))).toBe(expected !== null);
      }),
      { seed: SEED, numRuns: 3000 },
    );
  });

  it('every integer a double holds passes written out in full, however large (2^53 + 2, 1e20, 1e21, 2^1000)', () => {
    fc.assert(
      fc.property(fc.double({ noNaN: true, noDefaultInfinity: true }).filter(Number.isInteger), (d) => {
        expect(verdict(BigInt(d).toString())).toBeNull();
      }),
      { seed: SEED, numRuns: 2000 },
    );
  });

  it("a fraction's shortest form passes; a fraction read as an integer does not", () => {
    fc.assert(
      fc.property(
        fc.double({ noNaN: true, noDefaultInfinity: true }).filter((d) => !Number.isInteger(d)),
        (d) => {
          expect(verdict(String(d))).toBeNull();
        },
      ),
      { seed: SEED, numRuns: 2000 },
    );
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 2 ** 40 }), fc.integer({ min: 17, max: 40 }), (whole, nines) => {
        // whole.999…9 with enough nines is read as whole + 1: an integer the model did not write.
        expect(verdict(`${whole}.${'9'.repeat(nines)}`)).toBe('inexact-number');
      }),
      { seed: SEED, numRuns: 500 },
    );
  });
});

describe('number literals: named cases from a review', () => {
  it('a fraction read as an integer is found in a response text without 16 digits in a row (99999999.999999999)', () => {
    expect(textFindingsOf('{"content":[{"input":{"n":99999999.999999999}}]}')).toEqual([{ kind: 'inexact-number', token: '99999999.999999999', path: '$.content[0].input.n' }]);
  });
});
