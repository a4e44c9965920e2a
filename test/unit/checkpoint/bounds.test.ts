/**
 * docs/protocol.md#bounds: result bytes, nesting depth, value count, maxPayloadBytes, JSON-only values
 * and identifiers.
 */
import {
  assertJsonValue,
  canonicalJson,
  claimDelivery,
  claimExecution,
  completeExecution,
  createCheckpoint,
  fingerprintInput,
  idempotencyKey,
  LIMITS,
  validateCheckpoint,
  type CheckpointRecord,
} from '../../../src/protocol';
import fc from 'fast-check';
import { runInNewContext } from 'node:vm';
import { assertIdentifier, parseTimestamp, resolveMaxPayloadBytes, utf8ByteLength } from '../../../src/checkpoint/bounds';
import { at, BINDING, caught, OWNER_ATTEMPT, plainCopy, recordIn } from './fixtures';

const MIB = 1024 * 1024;

/** A JSON string value whose canonical text is exactly `bytes` UTF-8 bytes: quotes + ASCII. */
function stringOfBytes(bytes: number): string {
  return 'a'.repeat(bytes - 2);
}

function complete(result: unknown, maxPayloadBytes?: number): CheckpointRecord {
  return completeExecution(recordIn('executing'), { attemptId: OWNER_ATTEMPT, at: at(10), result, maxPayloadBytes }).next;
}

/** `depth` nested arrays around 0, built without recursion: depth 1 is `[0]`. */
function nestedArrays(depth: number): unknown {
  let value: unknown = 0;
  for (let i = 0; i < depth; i += 1) value = [value];
  return value;
}

describe('result payload bytes (default 65,536 UTF-8 JSON bytes)', () => {
  it('the default limit is 65,536 and the hard limit 10 MiB', () => {
    expect(LIMITS.defaultMaxPayloadBytes).toBe(65_536);
    expect(LIMITS.hardMaxPayloadBytes).toBe(10 * MIB);
  });

  it('a result of exactly 65,536 bytes is stored', () => {
    const result = stringOfBytes(65_536);

    expect(complete(result).result).toEqual({ payload: result });
  });

  it('a result of 65,537 bytes is PAYLOAD_TOO_LARGE with the limit and the actual size', () => {
    const error = caught(() => complete(stringOfBytes(65_537)));

    expect(error.code).toBe('PAYLOAD_TOO_LARGE');
    expect(error.details).toEqual({ field: 'result', limit: 65_536, actual: 65_537, bound: 'bytes' });
    expect(error.message).toBe('PAYLOAD_TOO_LARGE: result is 65,537 UTF-8 JSON bytes, maxPayloadBytes is 65,536');
  });

  it.each([
    ['é (2 bytes)', 'é', 32_767, 65_536, true],
    ['€ (3 bytes)', '€', 21_845, 65_537, false],
    ['😀 (4 bytes, 2 UTF-16 units)', '😀', 16_383, 65_534, true],
    ['😀 (4 bytes, 2 UTF-16 units)', '😀', 16_384, 65_538, false],
    ['a newline (escaped as 2 bytes)', '\n', 32_767, 65_536, true],
    ['a control character (escaped as \\u0001, 6 bytes)', '\u0001', 10_923, 65_540, false],
  ])('counts %s as UTF-8 bytes of the canonical text: %d of them make %d bytes', (_label, char, count, bytes, fits) => {
    const result = char.repeat(count);

    expect(utf8ByteLength(canonicalJson(result))).toBe(bytes);
    if (fits) expect(complete(result).result).toEqual({ payload: result });
    else expect(caught(() => complete(result))).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', details: { limit: 65_536, actual: bytes } });
  });

  it("measures the canonical text, not the caller's formatting: key order and -0 do not change the count", () => {
    expect(utf8ByteLength(canonicalJson({ b: -0, a: 'x' }))).toBe('{"a":"x","b":0}'.length);
  });

  it('a caller-chosen maxPayloadBytes is honoured exactly', () => {
    expect(complete('12345678', 10).result).toEqual({ payload: '12345678' });
    expect(caught(() => complete('123456789', 10))).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', details: { field: 'result', limit: 10, actual: 11, bound: 'bytes' } });
  });

  it('maxPayloadBytes of 10 MiB stores a result of exactly 10 MiB', () => {
    const result = stringOfBytes(10 * MIB);

    expect(complete(result, 10 * MIB).result!.payload).toBe(result);
  });

  it('a 10 MiB result over the default limit is PAYLOAD_TOO_LARGE', () => {
    expect(caught(() => complete(stringOfBytes(10 * MIB)))).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', details: { limit: 65_536, actual: 10 * MIB } });
  });

  it('maxPayloadBytes above 10 MiB is refused with INVALID_ARGUMENT, before the result is looked at', () => {
    const error = caught(() => complete({ bad: Number.NaN }, 10 * MIB + 1));

    expect(error.code).toBe('INVALID_ARGUMENT');
    expect(error.details).toEqual({ field: 'maxPayloadBytes', limit: 10 * MIB, actual: String(10 * MIB + 1) });
  });

  it.each([0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY])('maxPayloadBytes %p is refused with INVALID_ARGUMENT', (value) => {
    expect(caught(() => resolveMaxPayloadBytes(value))).toEqual({
      code: 'INVALID_ARGUMENT',
      details: { field: 'maxPayloadBytes', limit: 10 * MIB, actual: String(value) },
      message: `INVALID_ARGUMENT: maxPayloadBytes must be an integer from 1 to ${10 * MIB} (10 MiB), got ${String(value)}`,
    });
  });

  it('maxPayloadBytes defaults to 65,536 and accepts 1 and 10 MiB', () => {
    expect([resolveMaxPayloadBytes(undefined), resolveMaxPayloadBytes(1), resolveMaxPayloadBytes(10 * MIB)]).toEqual([65_536, 1, 10 * MIB]);
  });
});

describe('nesting depth (32 levels)', () => {
  it('32 nested arrays are stored', () => {
    expect(complete(nestedArrays(32)).result).toEqual({ payload: nestedArrays(32) });
  });

  it('33 nested arrays are PAYLOAD_TOO_LARGE naming the depth bound and the path', () => {
    const error = caught(() => complete(nestedArrays(33)));

    expect(error.code).toBe('PAYLOAD_TOO_LARGE');
    expect(error.details).toEqual({ field: 'result', path: `$${'[0]'.repeat(32)}`, limit: 32, bound: 'depth' });
  });

  it('objects and arrays count alike: 16 objects around 16 arrays pass, one more level fails', () => {
    let value: unknown = nestedArrays(16);
    for (let i = 0; i < 16; i += 1) value = { k: value };
    expect(() => assertJsonValue(value, 'result')).not.toThrow();
    expect(caught(() => assertJsonValue({ k: value }, 'result'))).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', details: { bound: 'depth', limit: 32 } });
  });

  it('a scalar at the top has depth 0 and an empty container depth 1', () => {
    expect(() => assertJsonValue(nestedArrays(31), 'v', { maxDepth: 31 })).not.toThrow();
    expect(() => assertJsonValue([], 'v', { maxDepth: 1 })).not.toThrow();
    expect(() => assertJsonValue(7, 'v', { maxDepth: 0 })).not.toThrow();
    expect(caught(() => assertJsonValue([], 'v', { maxDepth: 0 }))).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', details: { path: '$', bound: 'depth' } });
  });

  describe('a 100,000-deep nested array is PAYLOAD_TOO_LARGE, never a stack overflow', () => {
    const hostile = nestedArrays(100_000);

    it('as a result (completeExecution)', () => {
      expect(caught(() => complete(hostile))).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', details: { field: 'result', limit: 32, bound: 'depth' } });
    });

    it('as tool input (fingerprintInput)', () => {
      expect(caught(() => fingerprintInput(hostile))).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', details: { field: 'input', limit: 32, bound: 'depth' } });
    });

    it('given to canonicalJson', () => {
      expect(caught(() => canonicalJson(hostile))).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', details: { field: 'value', bound: 'depth' } });
    });

    it('inside a record given to validateCheckpoint: INVALID_CHECKPOINT that says why', () => {
      const record = { ...plainCopy(recordIn('completed')), result: { payload: hostile } };

      expect(caught(() => validateCheckpoint(record))).toMatchObject({ code: 'INVALID_CHECKPOINT', details: { field: 'result.payload', reason: 'PAYLOAD_TOO_LARGE' } });
    });
  });
});

describe('value count (10,000 values)', () => {
  it('an array of 9,999 numbers (10,000 values with the array) is stored', () => {
    const result = Array.from({ length: 9_999 }, (_, i) => i);

    expect(complete(result).result!.payload).toEqual(result);
  });

  it('an array of 10,000 numbers (10,001 values) is PAYLOAD_TOO_LARGE naming the values bound', () => {
    const error = caught(() => complete(Array.from({ length: 10_000 }, (_, i) => i)));

    expect(error.code).toBe('PAYLOAD_TOO_LARGE');
    expect(error.details).toEqual({ field: 'result', limit: 10_000, bound: 'values' });
  });

  it('object members count as values: 4,999 members of [] plus the object is 10,000', () => {
    const within = Object.fromEntries(Array.from({ length: 4_999 }, (_, i) => [`k${i}`, [0]]));
    expect(() => assertJsonValue({ ...within, z: [] }, 'result')).not.toThrow();
    expect(caught(() => assertJsonValue({ ...within, z: [0] }, 'result'))).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', details: { bound: 'values' } });
  });
});

describe('only JSON values (refused with NOT_JSON, never dropped or turned into null)', () => {
  class Ticket {
    id = 1;
  }
  const cycle: Record<string, unknown> = { a: 1 };
  cycle.self = cycle;
  const arrayCycle: unknown[] = [1];
  arrayCycle.push([arrayCycle]);

  const sparse = [1, , 3];
  const withNamedMember = Object.assign([1, 2], { extra: 'dropped by JSON.stringify' });

  it.each([
    ['NaN', { x: Number.NaN }, '$.x', 'NaN'],
    ['Infinity', { x: Number.POSITIVE_INFINITY }, '$.x', 'Infinity'],
    ['-Infinity', [Number.NEGATIVE_INFINITY], '$[0]', '-Infinity'],
    ['undefined at the top', undefined, '$', 'undefined'],
    ['an undefined member', { x: undefined }, '$.x', 'undefined'],
    ['an undefined array element', [undefined], '$[0]', 'undefined'],
    ['a function', { f: () => 1 }, '$.f', 'function'],
    ['a symbol', [Symbol('s')], '$[0]', 'symbol'],
    ['a bigint', { n: 10n }, '$.n', 'bigint'],
    ['an object cycle', cycle, '$.self', 'a cycle'],
    ['an array cycle', arrayCycle, '$[1][0]', 'a cycle'],
    ['a sparse array', sparse, '$', 'a sparse array (hole at index 1)'],
    ['a Date', { when: new Date(0) }, '$.when', 'an instance of Date'],
    ['a Map', new Map([['a', 1]]), '$', 'an instance of Map'],
    ['a class instance', [new Ticket()], '$[0]', 'an instance of Ticket'],
    ['a boxed number', new Number(1), '$', 'an instance of Number'],
    ['a lone high surrogate', 'a\ud800', '$', 'a string with a lone surrogate'],
    ['a lone low surrogate in a key', { '\udc00': 1 }, '$', 'an object key with a lone surrogate'],
    ['a symbol key', { [Symbol('k')]: 1 }, '$', 'an object with symbol keys'],
    ['an array with a named member', withNamedMember, '$', 'an array with non-index properties'],
  ])('%s is NOT_JSON with the path and kind', (_label, value, path, kind) => {
    expect(caught(() => assertJsonValue(value, 'result'))).toEqual({
      code: 'NOT_JSON',
      details: { field: 'result', path, kind },
      message: `NOT_JSON: result at ${path} is ${kind}, not a JSON value`,
    });
  });

  it('the same values are refused by completeExecution, canonicalJson and fingerprintInput alike', () => {
    for (const bad of [{ x: Number.NaN }, { x: undefined }, [10n], cycle, sparse]) {
      expect(caught(() => complete(bad)).code).toBe('NOT_JSON');
      expect(caught(() => canonicalJson(bad)).code).toBe('NOT_JSON');
      expect(caught(() => fingerprintInput(bad)).code).toBe('NOT_JSON');
    }
  });

  it('fingerprintInput refuses {x: NaN} instead of hashing {"x":null}', () => {
    expect(caught(() => fingerprintInput({ x: Number.NaN }))).toMatchObject({ code: 'NOT_JSON', details: { field: 'input', path: '$.x', kind: 'NaN' } });
  });

  it('a shared (non-cyclic) sub-object is JSON and is accepted', () => {
    const shared = { n: 1 };

    expect(canonicalJson({ a: shared, b: [shared, shared] })).toBe('{"a":{"n":1},"b":[{"n":1},{"n":1}]}');
  });

  it('objects without a prototype are plain JSON objects', () => {
    const bare = Object.assign(Object.create(null) as object, { b: 1, a: 2 });

    expect(canonicalJson(bare)).toBe('{"a":2,"b":1}');
  });

  it('a plain object or array made in another realm (node:vm) is JSON and is accepted', () => {
    const foreign: unknown = runInNewContext('({ b: [1, { c: null }], a: "x" })');

    expect(canonicalJson(foreign)).toBe('{"a":"x","b":[1,{"c":null}]}');
  });

  it('a Date or class instance made in another realm is still NOT_JSON', () => {
    expect(caught(() => assertJsonValue(runInNewContext('({ when: new Date(0) })'), 'result'))).toMatchObject({
      code: 'NOT_JSON',
      details: { path: '$.when', kind: 'an instance of Date' },
    });
    expect(caught(() => assertJsonValue(runInNewContext('class T {}; new T()'), 'result'))).toMatchObject({ code: 'NOT_JSON', details: { path: '$', kind: 'an instance of T' } });
  });

  it('a well-formed surrogate pair is accepted', () => {
    expect(canonicalJson({ '😀': '😀' })).toBe('{"😀":"😀"}');
  });
});

describe('identifiers: required, non-empty, bounded, no control characters', () => {
  const LIMITS_BY_FIELD = [
    ['namespace', 256],
    ['callId', 2_048],
    ['runChainId', 256],
    ['toolName', 128],
    ['toolRevision', 128],
    ['attemptId', 256],
    ['deliveryId', 256],
    ['workflowId', 1_000],
    ['keyId', 128],
  ] as const;

  it.each(LIMITS_BY_FIELD)('%s of exactly %d characters is accepted and one more is INVALID_ARGUMENT with the limit', (field, limit) => {
    expect(() => assertIdentifier('x'.repeat(limit), field)).not.toThrow();
    expect(caught(() => assertIdentifier('x'.repeat(limit + 1), field))).toEqual({
      code: 'INVALID_ARGUMENT',
      details: { field, limit, actual: limit + 1 },
      message: `INVALID_ARGUMENT: ${field} is ${limit + 1} characters, the limit is ${limit}`,
    });
  });

  it.each([
    ['missing', undefined, 'undefined'],
    ['null', null, 'null'],
    ['empty', '', '""'],
    ['a number', 7, '7'],
    ['an object', {}, 'object'],
  ])('an identifier that is %s is INVALID_ARGUMENT, never hashed as "" or "null"', (_label, value, actual) => {
    expect(caught(() => assertIdentifier(value, 'callId'))).toEqual({
      code: 'INVALID_ARGUMENT',
      details: { field: 'callId', actual },
      message: 'INVALID_ARGUMENT: callId is required and must be a non-empty string',
    });
  });

  it.each([
    ['NUL', 'a\u0000b'],
    ['a newline', 'a\nb'],
    ['a tab', 'a\tb'],
    ['DEL', 'a\u007fb'],
    ['NEL (C1)', 'a\u0085b'],
    ['CSI (C1)', 'a\u009bb'],
    ['a lone surrogate', 'a\ud800b'],
  ])('an identifier holding %s is INVALID_ARGUMENT', (_label, value) => {
    expect(caught(() => assertIdentifier(value, 'toolName'))).toEqual({
      code: 'INVALID_ARGUMENT',
      details: { field: 'toolName' },
      message: 'INVALID_ARGUMENT: toolName contains a control character or a lone surrogate',
    });
  });

  it('non-ASCII identifiers without control characters are accepted', () => {
    expect(() => assertIdentifier('wf-ünïcode-😀', 'workflowId')).not.toThrow();
  });

  it.each(['namespace', 'callId', 'toolName', 'toolRevision'] as const)('createCheckpoint with an empty or missing %s is INVALID_ARGUMENT naming it', (field) => {
    const { [field]: _omitted, ...missing } = BINDING;

    expect(caught(() => createCheckpoint({ ...BINDING, [field]: '' }, { createdAt: at(0) }))).toMatchObject({ code: 'INVALID_ARGUMENT', details: { field, actual: '""' } });
    expect(caught(() => createCheckpoint(missing as typeof BINDING, { createdAt: at(0) }))).toMatchObject({ code: 'INVALID_ARGUMENT', details: { field, actual: 'undefined' } });
  });

  it('idempotencyKey with an empty callId is INVALID_ARGUMENT, never a key over ""', () => {
    expect(caught(() => idempotencyKey({ namespace: 'ns', runChainId: 'chain', workflowId: 'wf', callId: '', toolName: 't', toolRevision: '1' }))).toMatchObject({
      code: 'INVALID_ARGUMENT',
      details: { field: 'callId' },
    });
  });

  it('attemptId and deliveryId are checked by the transitions that take them', () => {
    expect(caught(() => claimExecution(recordIn('ready'), { attemptId: 'x\u0000', at: at(5) }))).toMatchObject({ code: 'INVALID_ARGUMENT', details: { field: 'attemptId' } });
    expect(caught(() => claimDelivery(recordIn('completed'), { deliveryId: 'd'.repeat(257), at: at(5) }))).toMatchObject({
      code: 'INVALID_ARGUMENT',
      details: { field: 'deliveryId', limit: 256, actual: 257 },
    });
  });
});

describe('timestamps (ISO-8601 UTC)', () => {
  const two = (n: number) => String(n).padStart(2, '0');
  // Every field one past its range, years 0000–9999 (0–99 are the years Date.UTC remaps), 0–10 fraction digits.
  const stamps = fc
    .tuple(
      fc.integer({ min: 0, max: 9999 }),
      fc.integer({ min: 0, max: 13 }),
      fc.integer({ min: 0, max: 32 }),
      fc.integer({ min: 0, max: 25 }),
      fc.integer({ min: 0, max: 61 }),
      fc.integer({ min: 0, max: 61 }),
      fc.option(fc.stringMatching(/^\d{1,10}$/)),
    )
    .map(([y, mo, d, h, mi, s, fraction]) => `${String(y).padStart(4, '0')}-${two(mo)}-${two(d)}T${two(h)}:${two(mi)}:${two(s)}${fraction === null ? '' : `.${fraction}`}Z`);

  /** What Date.parse reads, when it is the same calendar time printed back (no roll-over), else NaN. */
  function oracle(text: string): number {
    const ms = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$/.test(text) ? Date.parse(text) : Number.NaN;
    return Number.isFinite(ms) && new Date(ms).toISOString().slice(0, 19) === text.slice(0, 19) ? ms : Number.NaN;
  }

  it('reads what Date.parse reads, and refuses every time Date.parse would roll over (30 February, 24:00, 60 s)', () => {
    fc.assert(
      fc.property(stamps, (text) => {
        const expected = oracle(text);
        if (Number.isNaN(expected)) expect(caught(() => parseTimestamp(text, 'at'))).toMatchObject({ code: 'INVALID_ARGUMENT', details: { field: 'at' } });
        else expect(parseTimestamp(text, 'at')).toBe(expected);
      }),
      { numRuns: 20_000 },
    );
  });

  it.each([
    ['0000-02-29T00:00:00Z', Date.parse('0000-02-29T00:00:00Z')],
    ['2024-02-29T23:59:59.999999999Z', Date.parse('2024-02-29T23:59:59.999Z')],
  ])('%s is a valid time', (text, ms) => {
    expect(parseTimestamp(text, 'at')).toBe(ms);
  });

  it.each(['2100-02-29T00:00:00Z', '2026-01-01T24:00:00Z', '2026-01-01T23:59:60Z', '2026-01-01T00:00:00+01:00', '2026-01-01', 1_767_225_600_000, null])(
    '%j is INVALID_ARGUMENT',
    (value) => {
      expect(caught(() => parseTimestamp(value, 'at'))).toMatchObject({ code: 'INVALID_ARGUMENT', details: { field: 'at' } });
    },
  );
});
