/**
 * The fence's approval refusals (src/activities/fence/approval-checks.ts), shared by `runFencedTool`
 * and the plugin's fence interceptor, and the description a person approves
 * (src/activities/fence/call-description.ts), shared by `describeToolCall` and `describeFencedCall`.
 */
import { z } from 'zod/v4';
import {
  assertApprovalGiven,
  assertApprovalLive,
  assertApprovedIntent,
  assertCallApproved,
  assertOneApprovedIntent,
  callApprovalExpired,
} from '../../../src/activities/fence/approval-checks';
import { describePreparedCall } from '../../../src/activities/fence/call-description';
import type { FencedToolInput } from '../../../src/activities/contract/contract';
import { defineTool, type ToolDefinition } from '../../../src/activities/tools/define-tool';
import { resolvePins } from '../../../src/activities/fence/pins';
import { prepareCall, type PreparedCall } from '../../../src/activities/fence/prepare-call';
import { caught } from '../checkpoint/fixtures';

const send = defineTool({
  name: 'send',
  revision: 'v1',
  input: z.object({ to: z.string(), cents: z.number().default(0) }),
  target: (args) => ({ to: args.to }),
  async execute() {
    return { output: null };
  },
});
const TOOLS = new Map<string, ToolDefinition<any>>([[send.name, send]]);
const CONTEXT = { namespace: 'default', workflowId: 'wf-1', runId: 'run-1', attempt: 1 };
const OTHER = `sha256:${'b'.repeat(64)}`;
const T0 = '2026-01-31T12:00:00.000Z';
const T0_MS = Date.parse(T0);

function prepared(extra: Partial<FencedToolInput> = {}, tools = TOOLS): PreparedCall {
  return prepareCall(tools, { tenant: 't', callId: 'c-1', toolName: 'send', input: { to: 'ann' }, ...extra }, CONTEXT);
}
const digest = prepared().intentDigest;

describe('assertApprovalGiven: APPROVAL_REQUIRED', () => {
  const pins = resolvePins({ requireApproval: ['send'] }, ['send', 'read']);
  it('refuses a call of a pinned tool without a digest, naming the field and tool', () => {
    for (const missing of [undefined, '', null]) {
      expect(caught(() => assertApprovalGiven(pins, 'send', missing))).toMatchObject({ code: 'APPROVAL_REQUIRED', details: { field: 'expectedIntentDigest', toolName: 'send' } });
    }
  });
  it("passes a digest (whether it matches is assertApprovedIntent's question) and tools not pinned", () => {
    expect(() => assertApprovalGiven(pins, 'send', OTHER)).not.toThrow();
    expect(() => assertApprovalGiven(pins, 'read', undefined)).not.toThrow();
  });
});

describe('assertApprovedIntent: APPROVAL_MISMATCH', () => {
  it('passes without an approval and with the computed digest', () => {
    expect(() => assertApprovedIntent(prepared())).not.toThrow();
    expect(() => assertApprovedIntent(prepared({ expectedIntentDigest: digest }))).not.toThrow();
  });
  it('refuses another digest, with both digests and the revision in its details', () => {
    expect(caught(() => assertApprovedIntent(prepared({ expectedIntentDigest: OTHER })))).toMatchObject({
      code: 'APPROVAL_MISMATCH',
      details: { callId: 'c-1', toolName: 'send', toolRevision: 'v1', expectedIntentDigest: OTHER, intentDigest: digest },
    });
  });
});

describe('assertCallApproved: required, then matching', () => {
  const pins = resolvePins({ requireApproval: ['send'] }, ['send']);
  it('checks the pin only when pins are given', () => {
    expect(caught(() => assertCallApproved(pins, prepared()))).toMatchObject({ code: 'APPROVAL_REQUIRED' });
    expect(() => assertCallApproved(undefined, prepared())).not.toThrow();
  });
  it('checks the digest either way', () => {
    expect(caught(() => assertCallApproved(pins, prepared({ expectedIntentDigest: OTHER })))).toMatchObject({ code: 'APPROVAL_MISMATCH' });
    expect(caught(() => assertCallApproved(undefined, prepared({ expectedIntentDigest: OTHER })))).toMatchObject({ code: 'APPROVAL_MISMATCH' });
    expect(() => assertCallApproved(pins, prepared({ expectedIntentDigest: digest }))).not.toThrow();
  });
});

describe('assertApprovalLive: APPROVAL_EXPIRED at or after the expiry', () => {
  const call = prepared({ expectedIntentDigest: digest, approvalExpiresAt: T0 });
  it('passes before the expiry and without one', () => {
    expect(() => assertApprovalLive(call, T0_MS - 1)).not.toThrow();
    expect(() => assertApprovalLive(prepared(), Number.MAX_SAFE_INTEGER)).not.toThrow();
    expect(callApprovalExpired(call, T0_MS - 1)).toBe(false);
  });
  it('refuses at the expiry, naming the call and the expiry', () => {
    expect(callApprovalExpired(call, T0_MS)).toBe(true);
    expect(caught(() => assertApprovalLive(call, T0_MS))).toMatchObject({ code: 'APPROVAL_EXPIRED', details: { callId: 'c-1', approvalExpiresAt: T0 } });
  });
});

describe('assertOneApprovedIntent: a tool input and its call header name one intent', () => {
  it("passes an input without a digest, or with the header's", () => {
    expect(() => assertOneApprovedIntent('send', 'c-1', undefined, digest)).not.toThrow();
    expect(() => assertOneApprovedIntent('send', 'c-1', digest, digest)).not.toThrow();
  });
  it('refuses another digest (null included), with both in its details', () => {
    expect(caught(() => assertOneApprovedIntent('send', 'c-1', OTHER, digest))).toMatchObject({
      code: 'APPROVAL_MISMATCH',
      details: { callId: 'c-1', toolName: 'send', expectedIntentDigest: digest, inputIntentDigest: OTHER },
    });
    // An input without a call id: the details say so (null), never the text "undefined".
    expect(caught(() => assertOneApprovedIntent('send', undefined, null, digest))).toMatchObject({ code: 'APPROVAL_MISMATCH', details: { callId: null } });
  });
});

describe('describePreparedCall', () => {
  it('shows the validated arguments and target the digest covers', () => {
    const call = prepared();
    expect(describePreparedCall(call)).toEqual({
      toolRevision: 'v1',
      intentDigest: call.intentDigest,
      idempotencyKey: call.idempotencyKey,
      arguments: { cents: 0, to: 'ann' },
      target: { to: 'ann' },
    });
  });
  it('refuses a target() that is not deterministic', () => {
    let n = 0;
    const flaky = defineTool({ ...send, target: () => ({ n: n++ }) });
    const call = prepared({}, new Map([[flaky.name, flaky]]));
    expect(caught(() => describePreparedCall(call))).toMatchObject({ code: 'INVALID_ARGUMENT', details: { toolName: 'send', field: 'target' } });
  });
});
