/**
 * Adversarial (claim check + worker-local ConversationCache): the cache hands the
 * adapter the very message objects it keeps for later turns (`prefix` copies the array, not the
 * messages; `loadConversation` stores the array it returns). An adapter that edits the
 * conversation it is given in place (redacting a secret, trimming an old tool result before
 * sending: JsonValue content is mutable by its type) therefore changes what every LATER turn on
 * that worker reads, while a worker without the entry cached reads the log as written. The model
 * is fed content that is not in the conversation log, and what it is fed depends on which worker
 * took the turn.
 *
 * Rule broken: "the model-turn activity reads the conversation by reference" / the cache is safe
 * "because a log is append-only and its entries immutable" (conversation-cache.ts): a turn must
 * read what the log holds.
 *
 * Real SQLite store, real createToolActivities / createModelActivities in a mock activity context.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { z } from 'zod';
import { createToolActivities, defineTool } from '../../src/activities';
import type { Delivered, FencedToolInput, FencedToolResult, OutputRef } from '../../src/activities/contract/contract';
import { conversationLogId } from '../../src/activities/agent/conversation-log';
import { createModelActivities } from '../../src/activities/agent/model-turn';
import type { JsonValue } from '../../src/checkpoint/types';
import type { ModelAdapter } from '../../src/model/model-adapter';
import type { ModelTurnInput, ModelTurnResult } from '../../src/model/types';
import type { CheckpointStore } from '../../src/stores/checkpoint-store';
import { openCheckpointStore } from '../../src/stores/open-checkpoint-store';

jest.setTimeout(60_000);

const TENANT = 'acme';
const SECRET = 'sk-live-1234';
const readConfig = defineTool({
  name: 'read_config',
  revision: 'v1',
  input: z.object({}).strict(),
  async execute() {
    return { output: { apiKey: SECRET, body: 'c'.repeat(6_000) }, receipt: null };
  },
});

/**
 * An adapter that redacts `apiKey` in tool results before "sending" them (in place), and records
 * the apiKey of each tool result as it was handed the conversation (before its own edit).
 */
class RedactingModel implements ModelAdapter {
  readonly name = 'redacting';
  readonly seen: (string | undefined)[][] = [];
  refusedEdits = 0;
  async turn(input: ModelTurnInput): Promise<ModelTurnResult> {
    const messages = input.messages ?? [];
    this.seen.push(messages.filter((m) => m.role === 'tool').map((m) => (m.role === 'tool' ? ((m.content as { apiKey?: string }).apiKey ?? undefined) : undefined)));
    for (const m of messages) {
      if (m.role === 'tool' && typeof m.content === 'object' && m.content !== null && !Array.isArray(m.content) && 'apiKey' in m.content) {
        try {
          (m.content as { [k: string]: JsonValue }).apiKey = '[redacted]';
        } catch {
          this.refusedEdits += 1; // the conversation is read-only (deeply frozen) since 2ee5829
        }
      }
    }
    return { stopReason: 'end_turn', text: `turn ${input.turn}`, toolCalls: [] };
  }
}

describe('ConversationCache aliasing', () => {
  let dir: string;
  let store: CheckpointStore;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-adv-cache-'));
    store = await openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`);
  });
  afterAll(async () => {
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a later turn reads the log as written, whatever an adapter did to the objects it was handed in an earlier turn', async () => {
    const workflowId = 'wf-adv-cache-1';
    const runChainId = 'chain-adv-cache-1';
    const env = () =>
      new MockActivityEnvironment({ attempt: 1, workflowExecution: { workflowId, runId: runChainId }, heartbeatTimeoutMs: 60_000 }, { logger: new DefaultLogger('ERROR') });
    const tools = createToolActivities({ store, tools: [readConfig] });
    const call: FencedToolInput = { tenant: TENANT, callId: 'toolu_1', runChainId, toolName: 'read_config', input: {}, resultByReference: { inlineMaxBytes: 4_096 } };
    const delivered = (await env().run(tools.runFencedTool, call)) as Delivered<FencedToolResult>;
    const ref = (delivered.outcome as { outputRef: OutputRef }).outputRef;
    expect(ref.key).toBe('r/toolu_1');

    const model = new RedactingModel();
    const cached = createModelActivities({ adapters: { redacting: model }, store });
    const turn = (n: number, logged: number, append: NonNullable<ModelTurnInput['conversation']>['append']): ModelTurnInput => ({
      tenant: TENANT,
      model: 'redacting',
      turn: n,
      tools: ['read_config'],
      conversation: { runChainId, logged, append },
    });
    // Turn 1: prompt, the assistant's call, its result by reference.
    await env().run(
      cached.runModelTurn,
      turn(1, 0, [
        { role: 'user', text: 'read the config' },
        { role: 'assistant', text: '', toolCalls: [{ callId: 'toolu_1', toolName: 'read_config', input: {} }] },
        { role: 'tool', callId: 'toolu_1', toolName: 'read_config', contentRef: ref, isError: false },
      ]),
    );
    // Turn 2 on the same worker: the model's answer and a user message are new.
    await env().run(
      cached.runModelTurn,
      turn(2, 3, [
        { role: 'assistant', text: 'turn 1', toolCalls: [] },
        { role: 'user', text: 'which key did you read?' },
      ]),
    );
    // The same turn on a worker that has nothing cached (cache disabled).
    const fresh = new RedactingModel();
    const uncached = createModelActivities({ adapters: { redacting: fresh }, store, conversationCacheBytes: 0 });
    await env().run(
      uncached.runModelTurn,
      turn(2, 3, [
        { role: 'assistant', text: 'turn 1', toolCalls: [] },
        { role: 'user', text: 'which key did you read?' },
      ]),
    );

    // The log still holds the real key.
    const logId = conversationLogId({ namespace: 'default', tenant: TENANT, workflowId, runChainId });
    expect(await store.getConversationEntries(logId, ['r/toolu_1'])).toEqual([{ apiKey: SECRET, body: 'c'.repeat(6_000) }]);
    expect(fresh.seen).toEqual([[SECRET]]);
    expect(model.seen[0]).toEqual([SECRET]);
    // Before 2ee5829 this failed: the cached worker handed turn 2 the adapter's own edit from turn 1 ("[redacted]"), not the log.
    expect(model.seen[1]).toEqual([SECRET]);
  });
});
