/**
 * RFC 8785 (JCS) canonical JSON: fixed vectors from the RFC and from public reports.
 */
import { canonicalJson, fingerprintInput } from '../../../src/protocol';
import { caught } from './fixtures';

describe('canonicalJson (RFC 8785)', () => {
  it('sorts object keys at every depth and writes no whitespace', () => {
    expect(canonicalJson({ b: { y: 2, x: 1 }, a: 1 })).toBe('{"a":1,"b":{"x":1,"y":2}}');
  });

  it('{a:1,b:{x:1,y:2}} and {b:{y:2,x:1},a:1} have one canonical text and one fingerprint', () => {
    expect(canonicalJson({ a: 1, b: { x: 1, y: 2 } })).toBe(canonicalJson({ b: { y: 2, x: 1 }, a: 1 }));
    expect(fingerprintInput({ a: 1, b: { x: 1, y: 2 } })).toBe(fingerprintInput({ b: { y: 2, x: 1 }, a: 1 }));
  });

  it('[{p:1,q:2}] and [{q:2,p:1}] have one canonical text and one fingerprint', () => {
    expect(canonicalJson([{ q: 2, p: 1 }])).toBe('[{"p":1,"q":2}]');
    expect(fingerprintInput([{ p: 1, q: 2 }])).toBe(fingerprintInput([{ q: 2, p: 1 }]));
  });

  it('[1,2] and [2,1] keep their order and differ', () => {
    expect(canonicalJson([2, 1])).toBe('[2,1]');
    expect(fingerprintInput([1, 2])).not.toBe(fingerprintInput([2, 1]));
  });

  it('orders keys by UTF-16 code units: "\\u{1F600}" (D83D DE00) comes before "\\uFB33"', () => {
    expect(canonicalJson({ '\uFB33': 'dalet', '\u{1F600}': 'emoji' })).toBe('{"\u{1F600}":"emoji","\uFB33":"dalet"}');
  });

  it('sorts the RFC 8785 §3.2.3 example keys as the RFC lists them', () => {
    const value = {
      '\u20ac': 'Euro Sign',
      '\r': 'Carriage Return',
      '\ufb33': 'Hebrew Letter Dalet With Dagesh',
      '1': 'One',
      '\ud83d\ude00': 'Emoji: Grinning Face',
      '\u0080': 'Control',
      '\u00f6': 'Latin Small Letter O With Diaeresis',
    };

    expect(canonicalJson(value)).toBe(
      '{"\\r":"Carriage Return","1":"One","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis","\u20ac":"Euro Sign","\ud83d\ude00":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"}',
    );
  });

  it.each([
    [1e21, '1e+21'],
    [1e-7, '1e-7'],
    [-0, '0'],
    [333333333.3333333, '333333333.3333333'],
    [1e23, '1e+23'],
    [0.000001, '0.000001'],
    [9007199254740992, '9007199254740992'],
    [5e-324, '5e-324'],
    [1.7976931348623157e308, '1.7976931348623157e+308'],
    [4.5, '4.5'],
    [0.002, '0.002'],
    [-1e-7, '-1e-7'],
    [100, '100'],
  ])('writes the number %p as %s (RFC 8785 §3.2.2.3, ECMAScript form)', (value, text) => {
    expect(canonicalJson(value)).toBe(text);
  });

  it('reads 1E-7 and 1e-7 as the same number with one canonical form', () => {
    expect(canonicalJson(JSON.parse('[1E-7,1e-7,1.0E-7]'))).toBe('[1e-7,1e-7,1e-7]');
  });

  it('escapes strings as RFC 8785 §3.2.2.2 does: short escapes, \\u00XX for other controls, the rest literal', () => {
    expect(canonicalJson('\u0008\t\n\u000c\r"\\/\u0001\u001f\u007f\u00e9')).toBe('"\\b\\t\\n\\f\\r\\"\\\\/\\u0001\\u001f\u007f\u00e9"');
  });

  it('writes literals and empty containers plainly', () => {
    expect(canonicalJson([null, true, false, {}, [], ''])).toBe('[null,true,false,{},[],""]');
  });

  it('refuses what is not JSON with NOT_JSON naming the value and path', () => {
    expect(caught(() => canonicalJson({ a: [1, Number.NaN] }, 'args'))).toEqual({
      code: 'NOT_JSON',
      details: { field: 'args', path: '$.a[1]', kind: 'NaN' },
      message: 'NOT_JSON: args at $.a[1] is NaN, not a JSON value',
    });
  });

  it('does not mutate its input', () => {
    const value = { b: [3, { d: 1, c: 2 }], a: null };
    const before = JSON.stringify(value);

    canonicalJson(value);

    expect(JSON.stringify(value)).toBe(before);
    expect(Object.isFrozen(value)).toBe(false);
  });
});
