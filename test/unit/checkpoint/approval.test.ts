/**
 * The approval rules both surfaces share (src/checkpoint/approval.ts): an approved digest is
 * present, it covers the intent, the approval has not expired; the expiry's parsing and clamping.
 */
import { approvalExpired, approvalExpiryText, earlierExpiry, hasApprovedIntent, intentMismatch, isApprovalExpiryText } from '../../../src/checkpoint/approval';
import { caught } from './fixtures';

const DIGEST = `sha256:${'a'.repeat(64)}`;
const OTHER = `sha256:${'b'.repeat(64)}`;
const T0 = '2026-01-31T12:00:00.000Z';
const T0_MS = Date.parse(T0);

describe('hasApprovedIntent (APPROVAL_REQUIRED when false)', () => {
  it.each([
    [DIGEST, true],
    ['', false],
    [undefined, false],
    [null, false],
    [42, false],
  ])('%j → %s', (digest, expected) => {
    expect(hasApprovedIntent(digest)).toBe(expected);
  });
});

describe('intentMismatch (APPROVAL_MISMATCH when true)', () => {
  it('an absent approval never mismatches', () => expect(intentMismatch(undefined, DIGEST)).toBe(false));
  it('the same digest covers the intent', () => expect(intentMismatch(DIGEST, DIGEST)).toBe(false));
  it('another digest does not', () => expect(intentMismatch(OTHER, DIGEST)).toBe(true));
  it('null is an approval naming nothing: it mismatches (fail closed)', () => expect(intentMismatch(null, DIGEST)).toBe(true));
  it('a call without a digest is covered by no approval', () => expect(intentMismatch(DIGEST, null)).toBe(true));
});

describe('approvalExpired: at or after the expiry', () => {
  it.each([
    ['ms, before', T0_MS, T0_MS - 1, false],
    ['ms, at', T0_MS, T0_MS, true],
    ['ms, after', T0_MS, T0_MS + 1, true],
    ['text, before', T0, T0_MS - 1, false],
    ['text, at', T0, T0_MS, true],
    ['no expiry (undefined)', undefined, Number.MAX_SAFE_INTEGER, false],
    ['no expiry (null)', null, Number.MAX_SAFE_INTEGER, false],
    ['text that does not parse: expired (fail closed)', 'not a timestamp', 0, true],
    ['NaN ms: expired (fail closed)', Number.NaN, 0, true],
  ] as const)('%s', (_what, expiresAt, now, expected) => {
    expect(approvalExpired(expiresAt, now)).toBe(expected);
  });
});

describe('approvalExpiryText', () => {
  it('keeps valid ISO-8601 UTC text', () => expect(approvalExpiryText(T0, 'expiresAt')).toBe(T0));
  it('converts a Date', () => expect(approvalExpiryText(new Date(T0_MS), 'expiresAt')).toBe(T0));
  it('refuses an invalid Date, naming the field', () => {
    expect(caught(() => approvalExpiryText(new Date(Number.NaN), 'expiresAt'))).toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: 'INVALID_ARGUMENT: expiresAt is an invalid Date',
      details: { field: 'expiresAt' },
    });
  });
  it.each(['2026-01-31', '2026-02-30T12:00:00.000Z', 'tomorrow', 5, null])('refuses %j as parseTimestamp does', (value) => {
    expect(caught(() => approvalExpiryText(value, 'approvalExpiresAt'))).toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: 'INVALID_ARGUMENT: approvalExpiresAt must be an ISO-8601 UTC timestamp like 2026-01-31T12:00:00.000Z',
      details: { field: 'approvalExpiresAt' },
    });
    expect(isApprovalExpiryText(value)).toBe(false);
  });
  it('isApprovalExpiryText accepts text only', () => {
    expect(isApprovalExpiryText(T0)).toBe(true);
    expect(isApprovalExpiryText(new Date(T0_MS))).toBe(false);
  });
});

describe('earlierExpiry: the earlier of two approvals of one intent wins', () => {
  const LATER = '2026-01-31T13:00:00.000Z';
  it('either absent: the other', () => {
    expect(earlierExpiry(undefined, T0)).toBe(T0);
    expect(earlierExpiry(T0, undefined)).toBe(T0);
    expect(earlierExpiry(undefined, undefined)).toBeUndefined();
  });
  it('both valid: the earlier, whichever side', () => {
    expect(earlierExpiry(LATER, T0)).toBe(T0);
    expect(earlierExpiry(T0, LATER)).toBe(T0);
  });
  it.each([['not a timestamp'], ['2026-01-31'], [null], [42]])('an invalid first expiry %j is kept, to be refused (fail closed)', (invalid) => {
    expect(earlierExpiry(invalid, T0)).toBe(invalid);
  });
});
