/**
 * The replay window (`TTC_REPLAY_WINDOW`, what `ttc prune` keeps) is at least the longest an
 * approval grant lives (24 h): a call pruned sooner could run again under a grant still valid
 * (docs/protocol.md#approval-grants).
 */
import { resolveConfig } from '../../../src/config';
import { MAX_GRANT_TTL_MS } from '../../../src/checkpoint/approval-grant';
import { parseGrantVerificationKeys } from '../../../src/approval-grant-keys';

describe('the replay window', () => {
  it('is 7 days by default and accepts 1 day', () => {
    expect(resolveConfig({}, {}).retention.replayWindowMs).toBe(7 * 24 * 3_600_000);
    expect(resolveConfig({}, { TTC_REPLAY_WINDOW: '1d' }).retention.replayWindowMs).toBe(MAX_GRANT_TTL_MS);
  });

  it('refuses a window shorter than the longest grant, naming the variable', () => {
    expect(() => resolveConfig({}, { TTC_REPLAY_WINDOW: '23h' })).toThrow(
      expect.objectContaining({ code: 'INVALID_CONFIG', details: { field: 'TTC_REPLAY_WINDOW' }, message: expect.stringContaining('the longest an approval grant lives') }),
    );
  });
});

describe('grant keys from the environment', () => {
  it('an unset variable is unsigned mode (no keys); a set one must list keys', () => {
    expect(parseGrantVerificationKeys('TTC_APPROVAL_GRANT_KEYS', undefined)).toBeUndefined();
    expect(() => parseGrantVerificationKeys('TTC_APPROVAL_GRANT_KEYS', '')).toThrow(expect.objectContaining({ code: 'INVALID_CONFIG' }));
  });
});
