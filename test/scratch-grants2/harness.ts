/** Shared scratch harness: the same setup as test/integration/approval-grants.test.ts. */
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { z } from 'zod';
import { createToolActivities, defineTool, type ToolActivities } from '../../src/activities';
import type { FencedToolInput, FencedToolResult } from '../../src/activities/contract/contract';
import { signApprovalGrant, type GrantSigningKey } from '../../src/checkpoint/approval-grant';
import type { JsonValue } from '../../src/checkpoint/types';
import type { CheckpointStore } from '../../src/stores/checkpoint-store';

export const SECRET = Buffer.from('9c2e41d07b6a5f38e1c04d2b97a6f5e3d2c1b0a9f8e7d6c5b4a39281706f5e4d', 'hex');
export const KEY: GrantSigningKey = { keyId: 'ops', hmacSecret: SECRET };
export const MIN = 60_000;

export type Outcome = { result: FencedToolResult } | { failure: { type: string | undefined; reason: unknown; message: string } };

export function harness(opts: { store: () => CheckpointStore; tools?: Parameters<typeof defineTool>[0][]; wf: () => string; chain: () => string }) {
  const applied: string[] = [];
  const refund = defineTool({
    name: 'refund',
    revision: 'v1',
    input: z.object({ orderId: z.string(), amountCents: z.number().int().positive() }),
    async execute(input) {
      applied.push(`${input.orderId}:${input.amountCents}`);
      return { output: { refunded: input.amountCents } };
    },
  });
  let offsetMs = 0;
  const acts = (over: { store?: CheckpointStore; clockOffsetMs?: number; tools?: any[] } = {}): ToolActivities =>
    createToolActivities({
      store: over.store ?? opts.store(),
      tools: over.tools ?? [refund],
      requireApproval: (over.tools ?? [refund]).map((t: any) => t.name),
      clock: () => new Date(Date.now() + (over.clockOffsetMs ?? offsetMs)),
      approvalGrantKeys: [{ keyId: 'ops', hmacSecret: SECRET }],
    });
  const input = (callId: string, args: JsonValue, over: Partial<FencedToolInput> = {}): FencedToolInput => ({
    tenant: 'acme',
    callId,
    runChainId: opts.chain(),
    toolName: 'refund',
    input: args,
    ...over,
  });
  const env = (attempt = 1) =>
    new MockActivityEnvironment({ attempt, workflowExecution: { workflowId: opts.wf(), runId: opts.chain() }, heartbeatTimeoutMs: 30_000 } as never);
  async function run(a: ToolActivities, call: FencedToolInput, attempt = 1): Promise<Outcome> {
    try {
      return { result: await env(attempt).run(a.runFencedTool, call) };
    } catch (error) {
      if (!(error instanceof ApplicationFailure)) throw error;
      return { failure: { type: error.type ?? undefined, reason: (error.details?.[0] as { reason?: unknown } | undefined)?.reason, message: error.message } };
    }
  }
  async function grantFor(
    callId: string,
    args: JsonValue,
    over: { expiresAt?: string; now?: Date; toolName?: string; a?: ToolActivities; input?: Partial<FencedToolInput> } = {},
  ): Promise<string> {
    const described = (await env().run((over.a ?? acts()).describeToolCall, input(callId, args, { toolName: over.toolName ?? 'refund', ...over.input }))) as { intentDigest: string };
    const now = over.now ?? new Date();
    const call = { namespace: 'default', tenant: 'acme', workflowId: opts.wf(), runChainId: opts.chain(), callId, toolName: over.toolName ?? 'refund', intentDigest: described.intentDigest };
    return signApprovalGrant(call, { approver: 'alice@ops', expiresAt: over.expiresAt ?? new Date(now.getTime() + 15 * MIN).toISOString() }, KEY, now);
  }
  const brief = (o: Outcome) => ('failure' in o ? { type: o.failure.type, reason: o.failure.reason } : { source: o.result.source, ok: o.result.outcome.ok });
  return { applied, refund, acts, input, env, run, grantFor, brief, setOffset: (ms: number) => (offsetMs = ms) };
}
