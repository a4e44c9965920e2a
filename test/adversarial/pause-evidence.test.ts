/**
 * Every pause the fence raises (OUTCOME_UNKNOWN) names what a person looks the effect up by at the
 * provider: the idempotency key the request was sent under and the tool revision the call was
 * claimed under, with the call and tool. Three paths build the failure: a lost answer the tool
 * cannot look up (the fence's own pause), an unfinished claim met by a worker that cannot
 * reconcile it (a deploy removed the tool), and a batch item whose answer is lost (the item's
 * key, the call's key, and where the item sits, counted from 1: "item 2 of 4").
 *
 * Real activities in MockActivityEnvironment against a real SQLite store (the adversarial harness).
 */
import { ApplicationFailure } from '@temporalio/common';
import { z } from 'zod';
import { defineTool, ToolError, type ToolActivities, type ToolContext, type ToolSuccess } from '../../src/activities';
import { Harness, Provider, UNREACHED_DEADLINE_MS, ticketTool, waitFor, type Call } from './harness';

jest.setTimeout(30_000);

const h = new Harness();
beforeAll(() => h.open());
afterAll(() => h.close());
beforeEach(() => {
  h.offsetMs = 0;
});

/** The failure an attempt ends with (an ApplicationFailure), or the test fails. */
async function failureOf(acts: ToolActivities, call: Call, attempt: number): Promise<ApplicationFailure> {
  const error = await h
    .env(call, attempt)
    .run(acts.runFencedTool, call.input)
    .then(
      () => null,
      (e: unknown) => e,
    );
  expect(error).toBeInstanceOf(ApplicationFailure);
  return error as ApplicationFailure;
}

/** A ticket tool whose provider applies the request, then the answer is lost (no lookup, no key dedupe). */
function losingTool(provider: Provider) {
  return ticketTool(provider, {
    async execute(_input, ctx) {
      provider.apply(ctx.idempotencyKey);
      throw new ToolError('unknown-outcome', 'connection reset after the request was sent');
    },
  });
}

describe('OUTCOME_UNKNOWN names the key and revision the call was claimed under', () => {
  it('a lost answer the tool cannot look up: details name the key the provider received and the revision', async () => {
    const provider = new Provider();
    const call = h.newCall();
    const failure = await failureOf(h.activities([losingTool(provider)]), call, 1);
    expect(failure.type).toBe('OUTCOME_UNKNOWN');
    expect(provider.requests).toHaveLength(1);
    expect(failure.details?.[0]).toMatchObject({ callId: call.input.callId, toolName: 'create_ticket', toolRevision: 'v1', idempotencyKey: provider.requests[0] });
  });

  it('an unfinished claim met by a worker whose deploy removed the tool: details name the claim’s key and revision, not a key of this worker', async () => {
    const provider = new Provider();
    const call = h.newCall();
    // Attempt 1 (revision v1) claims and sends the request; its worker dies before storing anything.
    const died = h
      .env(call, 1)
      .run(h.activities([ticketTool(provider)], { hooks: { step: (p) => (p === 'after-effect' ? new Promise<void>(() => undefined) : undefined) } }).runFencedTool, call.input);
    void died.catch(() => undefined);
    await waitFor(() => provider.total() === 1);
    const record = await h.recordOf(call);
    expect(record?.status).toBe('executing');
    // A worker without the tool, after the claim's settle time: it cannot reconcile, so the run pauses.
    h.passSettleTime(record!);
    const failure = await failureOf(h.activities([]), call, 2);
    expect(failure.type).toBe('OUTCOME_UNKNOWN');
    expect(failure.details?.[0]).toMatchObject({
      callId: call.input.callId,
      toolName: 'create_ticket',
      toolRevision: 'v1',
      idempotencyKey: provider.requests[0],
      cause: 'UNKNOWN_TOOL',
    });
  });

  it('a batch item whose answer is lost: the item’s key, the call’s key and revision, and the item counted from 1 of the batch', async () => {
    const provider = new Provider();
    const recipients = ['u1', 'u2', 'u3', 'u4'];
    const callKeys: string[] = [];
    const batch = defineTool({
      name: 'create_ticket',
      revision: 'v3',
      batch: true,
      callDeadlineMs: UNREACHED_DEADLINE_MS,
      input: z.object({ title: z.string() }).strict(),
      async execute(_input, ctx: ToolContext): Promise<ToolSuccess> {
        callKeys.push(ctx.idempotencyKey);
        await ctx.forEachItem!(
          recipients,
          (to) => to,
          async (to, item): Promise<ToolSuccess> => {
            provider.apply(item.idempotencyKey);
            if (to === 'u2') throw new ToolError('unknown-outcome', 'connection reset after sending to u2');
            return { output: { sent: to } };
          },
        );
        return { output: null };
      },
    });
    const call = h.newCall();
    const failure = await failureOf(h.activities([batch]), call, 1);
    expect(failure.type).toBe('OUTCOME_UNKNOWN');
    expect(failure.details?.[0]).toMatchObject({
      callId: call.input.callId,
      toolName: 'create_ticket',
      toolRevision: 'v3',
      idempotencyKey: callKeys[0],
      item: { key: 'u2', generation: 1, index: 1, total: 4, idempotencyKey: provider.requests[1] },
    });
    expect(failure.message).toContain('item "u2" (2 of 4, generation 1) of create_ticket call');
  });
});
