/**
 * The conversation log forks per run (`loadConversation` with `ConversationRef.segments`): a run
 * reset to an earlier turn writes its new messages to its own run's log, reads the earlier ones
 * where the runs of its history wrote them, and never conflicts with the discarded branch, whose
 * messages stay readable in its run's log. Real SQLite store; the worker-local cache shared
 * between branches.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { ConversationCache } from '../../../src/activities/agent/conversation-cache';
import { activityConversationLogs, deliverOutput, messageKey, type RunConversationLogs } from '../../../src/activities/agent/conversation-log';
import { createModelActivities } from '../../../src/activities/agent/model-turn';
import { loadConversation } from '../../../src/activities/agent/turn-conversation';
import type { OutputRef } from '../../../src/activities/contract/contract';
import type { ModelAdapter } from '../../../src/model/model-adapter';
import type { ConversationRef, ConversationSegment, LoggedMessage, ModelTurnInput, ModelTurnResult } from '../../../src/model/types';
import type { CheckpointStore } from '../../../src/stores/checkpoint-store';
import { openCheckpointStore } from '../../../src/stores/open-checkpoint-store';

const TENANT = 'acme';
const user = (text: string): LoggedMessage => ({ role: 'user', text });
const said = (text: string): LoggedMessage => ({ role: 'assistant', text, toolCalls: [] });

let dir: string;
let store: CheckpointStore;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ttc-conversation-branches-'));
  store = await openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`);
});
afterAll(async () => {
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The logs of run `runId` of chain `chain` of workflow `workflowId`, as a model turn outside an activity names them. */
function logsOf(workflowId: string, chain: string, runId: string): RunConversationLogs {
  return activityConversationLogs(TENANT, chain, { namespace: 'default', workflowId, runId });
}

function ref(runChainId: string, logged: number, append: LoggedMessage[], segments?: ConversationSegment[]): ConversationRef {
  return { runChainId, logged, append, ...(segments !== undefined ? { segments } : {}) };
}

const texts = (messages: readonly { readonly role: string }[]): string[] =>
  messages.map((m) => (m as { text?: string }).text ?? `tool:${JSON.stringify((m as { content?: unknown }).content)}`);

describe('a conversation log forked per run', () => {
  test('a run forked at message 2 appends other messages there without conflict; the discarded branch stays readable', async () => {
    const wf = 'wf-fork';
    const chain = 'run-a'; // run A is the chain's first run: its log is the chain's log
    const a = logsOf(wf, chain, 'run-a');
    const b = logsOf(wf, chain, 'run-b');
    expect(a.logOf('run-a')).toBe(a.chain);
    // Run A: the prompt and its first answer, then two more messages (a large tool output by reference).
    const output = await deliverOutput(store, a.chain, 'toolu_a', { ok: true, output: { rows: 'r'.repeat(500) }, receipt: null }, 100);
    const outputRef = (output as { outputRef: OutputRef }).outputRef;
    await loadConversation(store, a, ref(chain, 0, [user('hello'), said('A1')], []));
    const aMessages = await loadConversation(
      store,
      a,
      ref(chain, 2, [user('A2'), { role: 'tool', callId: 'toolu_a', toolName: 'read', contentRef: outputRef, isError: false }], [{ runId: 'run-a', until: 2 }]),
    );
    expect(texts(aMessages)).toEqual(['hello', 'A1', 'A2', `tool:${JSON.stringify({ rows: 'r'.repeat(500) })}`]);

    // Without segments (one log per chain) the reset run's other message at index 2 is refused.
    await expect(loadConversation(store, b, ref(chain, 2, [user('B2')]))).rejects.toMatchObject({ code: 'CONVERSATION_CONFLICT' });

    // Run B, reset to before A's second turn: A's first two messages, then its own two (the tool output still resolved from the chain's log).
    const bMessages = await loadConversation(
      store,
      b,
      ref(chain, 2, [user('B2'), { role: 'tool', callId: 'toolu_a', toolName: 'read', contentRef: outputRef, isError: false }], [{ runId: 'run-a', until: 2 }]),
    );
    expect(texts(bMessages)).toEqual(['hello', 'A1', 'B2', `tool:${JSON.stringify({ rows: 'r'.repeat(500) })}`]);
    expect(await store.getConversationEntries(b.logOf('run-b'), [messageKey(2)])).toEqual([user('B2')]);
    // A's branch is untouched and readable for audit.
    expect(await store.getConversationEntries(a.chain, [messageKey(2), messageKey(3)])).toEqual([user('A2'), expect.objectContaining({ contentRef: outputRef })]);
    // A retried turn of B writes the same entries again: no conflict.
    await expect(
      loadConversation(
        store,
        b,
        ref(chain, 2, [user('B2'), { role: 'tool', callId: 'toolu_a', toolName: 'read', contentRef: outputRef, isError: false }], [{ runId: 'run-a', until: 2 }]),
      ),
    ).resolves.toHaveLength(4);
  });

  test('a fork of a fork, and a continued run after it, read each message from the run that wrote it', async () => {
    const wf = 'wf-refork';
    const chain = 'run-a';
    await loadConversation(store, logsOf(wf, chain, 'run-a'), ref(chain, 0, [user('a0'), said('a1'), user('a2'), said('a3')], []));
    await loadConversation(store, logsOf(wf, chain, 'run-b'), ref(chain, 1, [said('b1'), user('b2'), said('b3')], [{ runId: 'run-a', until: 1 }]));
    // C: reset of B to after its message 2.
    const c = await loadConversation(
      store,
      logsOf(wf, chain, 'run-c'),
      ref(
        chain,
        3,
        [said('c3')],
        [
          { runId: 'run-a', until: 1 },
          { runId: 'run-b', until: 3 },
        ],
      ),
    );
    expect(texts(c)).toEqual(['a0', 'b1', 'b2', 'c3']);
    // C continued as new (run C2): its handover names C's segment too.
    const c2 = await loadConversation(
      store,
      logsOf(wf, chain, 'run-c2'),
      ref(
        chain,
        4,
        [user('c4')],
        [
          { runId: 'run-a', until: 1 },
          { runId: 'run-b', until: 3 },
          { runId: 'run-c', until: 4 },
        ],
      ),
    );
    expect(texts(c2)).toEqual(['a0', 'b1', 'b2', 'c3', 'c4']);
    // Every branch is still whole in its own log.
    expect(texts((await store.getConversationEntries(logsOf(wf, chain, 'run-a').chain, [1, 2, 3].map(messageKey))) as never)).toEqual(['a1', 'a2', 'a3']);
    expect(texts((await store.getConversationEntries(logsOf(wf, chain, 'run-b').logOf('run-b'), [3].map(messageKey))) as never)).toEqual(['b3']);
  });

  test('malformed segments are INVALID_ARGUMENT naming conversation.segments, and nothing is written', async () => {
    const logs = logsOf('wf-bad', 'run-a', 'run-b');
    const bad: unknown[] = [
      'run-a',
      [], // logged 2 is not covered
      [{ runId: 'run-a', until: 1 }], // ends before logged
      [{ runId: 'run-a', until: 3 }], // ends after logged
      [{ runId: '', until: 2 }],
      [{ until: 2 }],
      [
        { runId: 'run-a', until: 2 },
        { runId: 'run-b', until: 2 },
      ], // not increasing
      [{ runId: 'run-a', until: 1.5 }],
      [null],
    ];
    for (const segments of bad) {
      await expect(loadConversation(store, logs, ref('run-a', 2, [user('x')], segments as ConversationSegment[]))).rejects.toMatchObject({
        code: 'INVALID_ARGUMENT',
        details: { field: 'conversation.segments' },
      });
    }
    await expect(loadConversation(store, logs, ref('run-a', 0, [user('x')], [{ runId: 'run-a', until: 0 } as ConversationSegment]))).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    await expect(store.getConversationEntries(logs.logOf('run-b'), [messageKey(2)])).rejects.toMatchObject({ code: 'CONVERSATION_ENTRY_MISSING' });
  });

  test('a worker-local cache never serves one branch the messages of another, and spares what it holds', async () => {
    const wf = 'wf-cache';
    const chain = 'run-a';
    const cache = new ConversationCache();
    const a = logsOf(wf, chain, 'run-a');
    const b = logsOf(wf, chain, 'run-b');
    const c = logsOf(wf, chain, 'run-c');
    expect(texts(await loadConversation(store, a, ref(chain, 0, [user('p'), said('a1'), user('a2'), said('a3')], []), cache))).toEqual(['p', 'a1', 'a2', 'a3']);
    // B forks at 2 on the same worker: its messages 2 and 3, not A's cached ones.
    expect(texts(await loadConversation(store, b, ref(chain, 2, [user('b2'), said('b3')], [{ runId: 'run-a', until: 2 }]), cache))).toEqual(['p', 'a1', 'b2', 'b3']);
    // A's next turn (the discarded run, had it gone on) and B's next turn each read their own branch.
    expect(texts(await loadConversation(store, a, ref(chain, 4, [user('a4')], [{ runId: 'run-a', until: 4 }]), cache))).toEqual(['p', 'a1', 'a2', 'a3', 'a4']);
    const reads = jest.spyOn(store, 'getConversationEntries');
    try {
      const bSegments = [
        { runId: 'run-a', until: 2 },
        { runId: 'run-b', until: 4 },
      ];
      expect(texts(await loadConversation(store, b, ref(chain, 4, [user('b4')], bSegments), cache))).toEqual(['p', 'a1', 'b2', 'b3', 'b4']);
      // Only the appended message was read: the rest came from the cache of B's branch.
      expect(reads.mock.calls).toEqual([[b.logOf('run-b'), [messageKey(4)]]]);
      reads.mockClear();
      // C forks from B at 3 on the same worker: B's cached message 3 is not served.
      const cSegments = [
        { runId: 'run-a', until: 2 },
        { runId: 'run-b', until: 3 },
      ];
      expect(texts(await loadConversation(store, c, ref(chain, 3, [said('c3')], cSegments), cache))).toEqual(['p', 'a1', 'b2', 'c3']);
      expect(reads.mock.calls.map(([logId]) => logId)).toEqual([a.chain, b.logOf('run-b'), c.logOf('run-c')]);
    } finally {
      reads.mockRestore();
    }
  });

  test('the model-turn activity writes to the log of its own run (from the activity context) and names it in the result', async () => {
    const wf = 'wf-activity';
    const chain = 'run-a';
    await loadConversation(store, logsOf(wf, chain, 'run-a'), ref(chain, 0, [user('p'), said('a1')], []));
    const seen: string[][] = [];
    const adapter: ModelAdapter = {
      name: 'echo',
      async turn(input: ModelTurnInput): Promise<ModelTurnResult> {
        seen.push(texts(input.messages ?? []));
        return { stopReason: 'end_turn', text: 'done', toolCalls: [] };
      },
    };
    const activities = createModelActivities({ adapters: { echo: adapter }, store });
    const env = new MockActivityEnvironment({ attempt: 1, workflowExecution: { workflowId: wf, runId: 'run-b' } }, { logger: new DefaultLogger('ERROR') });
    const turn = (conversation: ConversationRef): ModelTurnInput => ({ tenant: TENANT, model: 'echo', turn: 1, tools: [], conversation });
    const forked: ModelTurnResult = await env.run(activities.runModelTurn, turn(ref(chain, 1, [said('b1')], [{ runId: 'run-a', until: 1 }])));
    expect(forked.conversationRunId).toBe('run-b');
    expect(seen[0]).toEqual(['p', 'b1']);
    expect(await store.getConversationEntries(logsOf(wf, chain, 'run-b').logOf('run-b'), [messageKey(1)])).toEqual([said('b1')]);
    // Without segments (older workflow code): the chain's log, as before, and no run named.
    const legacy: ModelTurnResult = await env.run(activities.runModelTurn, turn(ref(chain, 2, [])));
    expect(legacy.conversationRunId).toBeUndefined();
    expect(seen[1]).toEqual(['p', 'a1']);
  });
});
