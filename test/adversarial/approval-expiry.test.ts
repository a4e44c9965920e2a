/**
 * Adversarial regression (docs/protocol.md#nothing-applied): an approved call carries its expiry.
 * An attempt that starts at or after it refuses with APPROVAL_EXPIRED before any claim; a result
 * stored before the expiry is still delivered after it; a claim made before the expiry whose effect
 * a lookup later proves absent is not run again under the expired approval (the run pauses for a
 * person).
 */
import { Harness, MARGIN_MS, never, Provider, ticketTool, typeOf, waitFor, UNREACHED_DEADLINE_MS } from './harness';

jest.setTimeout(60_000);

const h = new Harness();
beforeAll(() => h.open());
afterAll(() => h.close());
beforeEach(() => {
  h.offsetMs = 0;
});

describe('approval expiry between attempts', () => {
  test('an attempt that starts exactly at the expiry refuses with APPROVAL_EXPIRED (non-retryable) before any claim; nothing runs', async () => {
    const provider = new Provider();
    const at = new Date(Date.now() + 5_000).toISOString();
    const call = h.newCall({ approvalExpiresAt: at });
    h.offsetMs = Date.parse(at) - Date.now();
    const out = await h.run(h.activities([ticketTool(provider)]), call, 1);
    expect(out).toEqual({ failure: expect.objectContaining({ type: 'APPROVAL_EXPIRED', nonRetryable: true }) });
    expect((await h.recordOf(call))?.execution ?? null).toBeNull();
    expect(provider.requests).toHaveLength(0);
  });

  test('a result stored before the expiry is delivered after it (source store), not refused with APPROVAL_EXPIRED', async () => {
    const provider = new Provider();
    const call = h.newCall({ approvalExpiresAt: new Date(Date.now() + 5_000).toISOString() });
    void h.run(h.activities([ticketTool(provider)], { hooks: { step: (p) => (p === 'after-result-stored' ? never() : undefined) } }), call, 1);
    await waitFor(async () => (await h.recordOf(call))?.status === 'delivered'); // result and delivery are one write (docs/protocol.md#cost)
    h.offsetMs = 10_000;
    expect(typeOf(await h.run(h.activities([ticketTool(provider)]), call, 2))).toBe('result:store');
    expect(provider.total()).toBe(1);
  });

  test('claimed before the expiry, holder died before execute, lookup proves absence after the expiry: the run pauses (OUTCOME_UNKNOWN), the tool is not run', async () => {
    const provider = new Provider();
    const call = h.newCall({ approvalExpiresAt: new Date(Date.now() + 500).toISOString() });
    void h.run(h.activities([ticketTool(provider, { withLookup: true })], { hooks: { step: (p) => (p === 'before-execute' ? never() : undefined) } }), call, 1);
    await waitFor(async () => (await h.recordOf(call))?.status === 'executing');
    h.offsetMs = UNREACHED_DEADLINE_MS + MARGIN_MS + 50;
    const out = await h.run(h.activities([ticketTool(provider, { withLookup: true })]), call, 2);
    expect(out).toEqual({ failure: expect.objectContaining({ type: 'OUTCOME_UNKNOWN', nonRetryable: true }) });
    expect(provider.requests).toHaveLength(0);
  });
});
