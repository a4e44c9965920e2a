/**
 * Segments of an agent run chain (`checkChainSegments`, run by every model turn): a continued
 * run's first turn records that its segment started, and a reset run's turn is refused
 * (RESET_OF_CONTINUED_RUN, before the model is asked and before anything is written) once the
 * segment after the run it reset has started. Real SQLite store, the real model-turn activity.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { activityConversationLogs, messageKey } from '../../../src/activities/agent/conversation-log';
import { createModelActivities } from '../../../src/activities/agent/model-turn';
import { createToolActivities, defineTool } from '../../../src/activities';
import { z } from 'zod';
import { isCheckpointError } from '../../../src/checkpoint/errors';
import { callBindingId } from '../../../src/checkpoint/call-identity';
import type { ModelAdapter } from '../../../src/model/model-adapter';
import type { ConversationRef, LoggedMessage, ModelTurnInput } from '../../../src/model/types';
import type { CheckpointStore } from '../../../src/stores/checkpoint-store';
import { openCheckpointStore } from '../../../src/stores/open-checkpoint-store';

const TENANT = 'acme';
const CHAIN = 'run-0';
const user = (text: string): LoggedMessage => ({ role: 'user', text });

let dir: string;
let store: CheckpointStore;
let asked = 0;
const adapter: ModelAdapter = {
  name: 'echo',
  turn() {
    asked += 1;
    return Promise.resolve({ stopReason: 'end_turn', text: 'done', toolCalls: [] });
  },
};

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ttc-chain-segments-'));
  store = await openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`);
});
afterAll(async () => {
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** One model turn of run `runId` of workflow `workflowId`, as the activity runs it for that run. */
async function turn(workflowId: string, runId: string, marks: Pick<ConversationRef, 'startsSegment' | 'refusedIfStarted'>, append = [user(`from ${runId}`)]) {
  const activities = createModelActivities({ adapters: { echo: adapter }, store });
  const env = new MockActivityEnvironment({ attempt: 1, workflowExecution: { workflowId, runId } }, { logger: new DefaultLogger('ERROR') });
  const input: ModelTurnInput = {
    tenant: TENANT,
    model: 'echo',
    turn: 0,
    tools: [],
    conversation: { runChainId: CHAIN, logged: 0, append, segments: [], writeTo: runId, ...marks },
  };
  return env.run(activities.runModelTurn, input);
}

const codeOf = (error: unknown): string | undefined => (error as { type?: string }).type ?? (isCheckpointError(error) ? error.code : undefined);

describe('segments of an agent run chain', () => {
  test('a reset of a run whose next segment started is refused before the model is asked, and writes nothing', async () => {
    const wf = 'wf-refused';
    await turn(wf, 'run-1', { startsSegment: 'after:run-0' });
    const before = asked;
    const refused = await turn(wf, 'reset-0', { refusedIfStarted: ['after:run-0'] }).catch((error: unknown) => error);
    expect(codeOf(refused)).toBe('RESET_OF_CONTINUED_RUN');
    expect(asked).toBe(before);
    const resetLog = activityConversationLogs(TENANT, CHAIN, { namespace: 'default', workflowId: wf, runId: 'reset-0' }).logOf('reset-0');
    await expect(store.getConversationEntries(resetLog, [messageKey(0)])).rejects.toMatchObject({ code: 'CONVERSATION_ENTRY_MISSING' });
  });

  test('a reset whose next segment never started runs, and so does a reset of the latest run of a continued chain', async () => {
    const wf = 'wf-allowed';
    await expect(turn(wf, 'reset-0', { refusedIfStarted: ['after:run-0'] })).resolves.toMatchObject({ text: 'done' });
    await turn(wf, 'run-1', { startsSegment: 'after:run-0' });
    await expect(turn(wf, 'reset-1', { refusedIfStarted: ['after:run-1'] })).resolves.toMatchObject({ text: 'done' });
  });

  test('recording a segment is idempotent: a retried turn, and another run starting the same segment, both succeed', async () => {
    const wf = 'wf-idempotent';
    await turn(wf, 'run-1', { startsSegment: 'after:run-0' });
    await turn(wf, 'run-1', { startsSegment: 'after:run-0' });
    await expect(turn(wf, 'run-1b', { startsSegment: 'after:run-0' })).resolves.toMatchObject({ text: 'done' });
  });

  test("a segment started in one workflow's chain never refuses a reset in another workflow", async () => {
    await turn('wf-one', 'run-1', { startsSegment: 'after:run-0' });
    await expect(turn('wf-two', 'reset-0', { refusedIfStarted: ['after:run-0'] })).resolves.toMatchObject({ text: 'done' });
  });

  test.each([
    ['startsSegment', ''],
    ['refusedIfStarted', ['x'.repeat(257)]],
    ['refusedIfStarted', Array.from({ length: 101 }, (_, i) => `after:${i}`)],
    ['startsSegment', 42],
  ])('a malformed %s (%j) is INVALID_ARGUMENT naming it', async (field, value) => {
    const error = await turn('wf-bad', 'run-1', { [field]: value } as never).catch((e: unknown) => e);
    expect(codeOf(error)).toBe('INVALID_ARGUMENT');
    expect(String((error as Error).message)).toContain(`conversation.${field}`);
  });

  test("a reset lineage's tool call is refused before its claim once the segment started: the tool never runs, nothing is stored", async () => {
    const wf = 'wf-tool';
    let ran = 0;
    const charge = defineTool({
      name: 'charge',
      revision: 'v1',
      input: z.object({ orderId: z.string() }),
      async execute() {
        ran += 1;
        return { output: { charged: true } };
      },
    });
    const tools = createToolActivities({ store, tools: [charge] });
    const call = (callId: string) =>
      new MockActivityEnvironment({ attempt: 1, workflowExecution: { workflowId: wf, runId: 'reset-0' } }, { logger: new DefaultLogger('ERROR') }).run(tools.runFencedTool, {
        tenant: TENANT,
        callId,
        runChainId: CHAIN,
        toolName: 'charge',
        input: { orderId: 'o-1' },
        occurrences: { scope: `first:${CHAIN}`, ownCallsIn: 'reset-0', refusedIfStarted: ['after:run-0'] },
      });
    // Before the segment started the call runs; once a continued run started it, the next call is refused.
    await expect(call('t1@reset-0')).resolves.toMatchObject({ source: 'executed' });
    await turn(wf, 'run-1', { startsSegment: 'after:run-0' });
    const refused = await call('t2@reset-0').catch((error: unknown) => error);
    expect(codeOf(refused)).toBe('RESET_OF_CONTINUED_RUN');
    expect(ran).toBe(1);
    const stored = (callId: string) => store.getByCall(`default/${TENANT}`, callBindingId({ runChainId: CHAIN, workflowId: wf, callId }));
    expect(await stored('t1@reset-0')).not.toBeNull();
    expect(await stored('t2@reset-0')).toBeNull();
  });
});
