/**
 * The fence's own work for one call without a store or Temporal (shared by bench:peers and
 * bench:overhead, whose floors add it): for a fresh call, what `runFencedTool` derives from its
 * input (`prepareCall`: the schema, the canonical arguments, the intent digest, the idempotency
 * key, the binding) and the two records it writes (`createClaimed`, `completeAndDeliver`); for a
 * re-delivery, `prepareCall` alone. It leaves out the record's encoding and the store's reads,
 * so a floor with it added is still below what any fence of this protocol can cost.
 */
import { z } from 'zod';
import { defineTool } from '../src/activities';
import type { FencedToolInput } from '../src/activities/contract/contract';
import { prepareCall } from '../src/activities/fence/prepare-call';
import { completeAndDeliver, createClaimed } from '../src/checkpoint/compose';
import type { Binding } from '../src/checkpoint/types';
import type { ComposedFreshCall } from './fresh-call';

const tool = defineTool({
  name: 'create_ticket',
  revision: '1',
  input: z.object({ ref: z.string() }),
  async execute(input) {
    return { output: { ticket: input.ref } };
  },
});
const tools = new Map([[tool.name, tool]]);
const input = (id: string): FencedToolInput => ({ tenant: 'bench', callId: id, toolName: tool.name, input: { ref: id } });
const context = (attempt: number) => ({ namespace: 'bench', workflowId: 'bench-wf', runId: 'bench-run', attempt });

/** A fresh call's protocol work for call `id`: its binding and the two records it writes (`./fresh-call`'s shape). */
export function protocolFreshRecords(id: string): ComposedFreshCall {
  const call = prepareCall(tools, input(id), context(1));
  const at = new Date().toISOString();
  const claimed = createClaimed(call.binding, { attemptId: call.attemptId, at });
  return { binding: call.binding, claimed, done: completeAndDeliver(claimed, { attemptId: call.attemptId, deliveryId: call.deliveryId, at, result: { ticket: id } }) };
}

/** A fresh call's protocol work for call `id`. @returns the completed record's revision (4), so the work is not optimised away. */
export function protocolFresh(id: string): number {
  return protocolFreshRecords(id).done.next.revision;
}

/** A re-delivery's protocol work for call `id`: the binding the attempt derives before it reads the store. */
export function protocolRedeliveryBinding(id: string): Binding {
  return prepareCall(tools, input(id), context(2)).binding;
}

/** A re-delivery's protocol work for call `id` (what the attempt derives before it reads the store). */
export function protocolRedelivery(id: string): string {
  return protocolRedeliveryBinding(id).inputFingerprint;
}
