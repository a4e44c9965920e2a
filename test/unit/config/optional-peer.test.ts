/**
 * A missing optional peer is a configuration error naming the install line (src/optional-peer.ts),
 * with the range an entry pins; an installed one passes.
 */
import { assertPeersInstalled } from '../../../src/optional-peer';
import { isCheckpointError } from '../../../src/checkpoint/errors';

function refusal(packages: readonly string[]): { code: string; message: string; packages: unknown } {
  try {
    assertPeersInstalled(packages, '`ttc console`');
  } catch (err) {
    if (!isCheckpointError(err)) throw err;
    return { code: err.code, message: err.message, packages: err.details.packages };
  }
  throw new Error('assertPeersInstalled did not throw');
}

describe('assertPeersInstalled', () => {
  it('passes when every package resolves, a pinned range included', () => {
    expect(() => assertPeersInstalled(['zod', '@temporalio/common@^1.23.0'], 'a test')).not.toThrow();
  });

  it('names the missing packages, with the ranges they pin, in one npm install line', () => {
    const r = refusal(['zod', 'ttc-no-such-package', '@ttc-no-such-scope/cookie@~11.0.2']);
    expect(r.code).toBe('INVALID_CONFIG');
    expect(r.message).toBe(
      'INVALID_CONFIG: `ttc console` needs ttc-no-such-package, @ttc-no-such-scope/cookie@~11.0.2, not installed: run `npm install ttc-no-such-package @ttc-no-such-scope/cookie@~11.0.2` in your project',
    );
    expect(r.packages).toEqual(['ttc-no-such-package', '@ttc-no-such-scope/cookie@~11.0.2']);
  });
});
