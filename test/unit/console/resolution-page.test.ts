/**
 * The page after a resolution the run acted on says what happens next as the command line does
 * (`resolutionNextStep`): an item resolved applied is not sent again; one resolved absent is sent
 * again as its next generation; a call proven absent runs again under its retry id.
 */
import { renderResolution } from '../../../src/console/render-outcome';
import { resolutionNextStep } from '../../../src/operator/run-decisions';
import type { ResolveOutcomeResult } from '../../../src/workflows/agent/types';

describe('the page after a resolution', () => {
  const item = { key: 'n20', generation: 1 };

  it('an item resolved applied: stored, not sent again; the call resumes the batch after it (never "runs again as")', () => {
    const result: ResolveOutcomeResult = { callId: 'b1', pauseId: 'b1#1', resolution: 'applied', status: 'resolved-applied', retryCallId: 'b1', item };
    const page = renderResolution('wf-1', result);
    expect(page).toContain(
      'is now resolved-applied; item &quot;n20&quot; (generation 1) is stored as applied and is not sent again; call b1 runs again and resumes the batch after it.',
    );
    expect(page).not.toContain('runs again as');
  });

  it('an item resolved absent: sent again as generation 2 under a new key; while the run stops, the batch does not resume', () => {
    expect(resolutionNextStep({ callId: 'b1', pauseId: 'b1#1', resolution: 'absent', status: 'resolved-absent', retryCallId: 'b1', item })).toBe(
      'item "n20" (generation 1) is sent again as generation 2, under a new idempotency key; call b1 runs again and resumes the batch with it',
    );
    expect(resolutionNextStep({ callId: 'b1', pauseId: 'b1#1', resolution: 'applied', status: 'resolved-applied', retryCallId: null, item })).toBe(
      'item "n20" (generation 1) is stored as applied and is not sent again; the batch does not resume: the run is stopping',
    );
  });

  it('a call proven absent runs again under its retry id; an applied call and a compensation applied say nothing more', () => {
    expect(resolutionNextStep({ callId: 'e1', pauseId: 'e1#1', resolution: 'absent', status: 'resolved-absent', retryCallId: 'e1~retry1' })).toBe('it runs again as e1~retry1');
    expect(resolutionNextStep({ callId: 'e1', pauseId: 'e1#1', resolution: 'applied', status: 'resolved-applied', retryCallId: null })).toBeNull();
    expect(
      resolutionNextStep({ callId: 'c1', pauseId: 'c1#1', resolution: 'absent', status: 'resolved-absent', retryCallId: null, role: 'compensation', compensationGeneration: 2 }),
    ).toBe('the compensation runs again as generation 2');
  });
});
