/**
 * The conversation log helpers of the claim check: log ids, entry keys, output
 * references and the delivery of a tool outcome by reference, against a recording store.
 */
import { createHash } from 'node:crypto';
import { MockActivityEnvironment } from '@temporalio/testing';
import type { ToolOutcome } from '../../../src/activities/contract/contract';
import {
  activityConversationLogs,
  assertMatchesRef,
  conversationLogId,
  deliverOutput,
  messageKey,
  outputKey,
  outputRefFor,
  type RunConversationLogs,
} from '../../../src/activities/agent/conversation-log';
import { isCheckpointError, type CheckpointErrorCode } from '../../../src/checkpoint/errors';
import type { JsonValue } from '../../../src/checkpoint/types';
import type { CheckpointStore, ConversationEntry } from '../../../src/stores/checkpoint-store';

const PARTS = { namespace: 'default', tenant: 'acme', workflowId: 'wf-1', runChainId: 'chain-1' } as const;

function codeOf(fn: () => unknown): CheckpointErrorCode | 'no error' {
  try {
    fn();
  } catch (error) {
    if (isCheckpointError(error)) return error.code;
    throw error;
  }
  return 'no error';
}

/** A store that only records conversation writes. */
function recordingStore(): { store: CheckpointStore; puts: Array<{ logId: string; entries: readonly ConversationEntry[] }> } {
  const puts: Array<{ logId: string; entries: readonly ConversationEntry[] }> = [];
  const store = {
    async putConversationEntries(logId: string, entries: readonly ConversationEntry[]) {
      puts.push({ logId, entries });
    },
  } as unknown as CheckpointStore;
  return { store, puts };
}

describe('conversationLogId', () => {
  test('is the sha256 hex of the canonical JSON of its parts, stable across calls', () => {
    const expected = createHash('sha256').update('["ttc/conversation-log/1","default","acme","wf-1","chain-1"]').digest('hex');
    expect(conversationLogId(PARTS)).toBe(expected);
    expect(conversationLogId({ ...PARTS })).toBe(expected);
  });

  test('every part names a different log', () => {
    const ids = new Set(
      [PARTS, { ...PARTS, namespace: 'prod' }, { ...PARTS, tenant: 'globex' }, { ...PARTS, workflowId: 'wf-2' }, { ...PARTS, runChainId: 'chain-2' }].map(conversationLogId),
    );
    expect(ids.size).toBe(5);
    // No ambiguity from joining: parts are JSON strings, not concatenated text.
    expect(conversationLogId({ ...PARTS, tenant: 'a', workflowId: 'b/c' })).not.toBe(conversationLogId({ ...PARTS, tenant: 'a/b', workflowId: 'c' }));
  });

  test('a missing part is INVALID_ARGUMENT', () => {
    expect(codeOf(() => conversationLogId({ ...PARTS, tenant: '' }))).toBe('INVALID_ARGUMENT');
    expect(codeOf(() => conversationLogId({ ...PARTS, runChainId: undefined as unknown as string }))).toBe('INVALID_ARGUMENT');
    expect(codeOf(() => conversationLogId({ ...PARTS, runId: '' }))).toBe('INVALID_ARGUMENT');
  });

  test("a run's log: the chain's log for its first run, else the sha256 hex of the parts with the run id", () => {
    expect(conversationLogId({ ...PARTS, runId: 'chain-1' })).toBe(conversationLogId(PARTS));
    const expected = createHash('sha256').update('["ttc/conversation-log/1","default","acme","wf-1","chain-1","run-2"]').digest('hex');
    expect(conversationLogId({ ...PARTS, runId: 'run-2' })).toBe(expected);
    expect(conversationLogId({ ...PARTS, runId: 'run-3' })).not.toBe(expected);
  });

  test('in an activity, namespace, workflow id and run come from the context, never from the caller', async () => {
    const env = new MockActivityEnvironment({ workflowNamespace: 'ns-a', workflowExecution: { workflowId: 'wf-ctx', runId: 'run-ctx' } } as never);
    const inside: RunConversationLogs = await env.run(async () => activityConversationLogs('acme', 'chain-1', { namespace: 'other', workflowId: 'other-wf', runId: 'other-run' }));
    const ctxParts = { namespace: 'ns-a', tenant: 'acme', workflowId: 'wf-ctx', runChainId: 'chain-1' };
    expect(inside.chain).toBe(conversationLogId(ctxParts));
    expect(inside.runId).toBe('run-ctx');
    expect(inside.logOf('run-ctx')).toBe(conversationLogId({ ...ctxParts, runId: 'run-ctx' }));
    expect(inside.logOf('chain-1')).toBe(inside.chain);
    const defaultChain: RunConversationLogs = await env.run(async () => activityConversationLogs('acme', undefined));
    expect(defaultChain.chain).toBe(conversationLogId({ namespace: 'ns-a', tenant: 'acme', workflowId: 'wf-ctx', runChainId: 'run-ctx' }));
  });

  test('outside an activity the explicit scope is used (its run defaults to the chain); without one it is INVALID_ARGUMENT', () => {
    const logs = activityConversationLogs('acme', 'chain-1', { namespace: 'default', workflowId: 'wf-1' });
    expect(logs.chain).toBe(conversationLogId(PARTS));
    expect(logs.runId).toBe('chain-1');
    expect(activityConversationLogs('acme', 'chain-1', { namespace: 'default', workflowId: 'wf-1', runId: 'run-2' }).runId).toBe('run-2');
    expect(codeOf(() => activityConversationLogs('acme', 'chain-1'))).toBe('INVALID_ARGUMENT');
  });
});

describe('entry keys', () => {
  test('messages are m/ + the index zero-padded to 9 digits (keys sort in index order); outputs r/<callId>', () => {
    expect(messageKey(0)).toBe('m/000000000');
    expect(messageKey(12)).toBe('m/000000012');
    expect(messageKey(999_999_999)).toBe('m/999999999');
    expect([messageKey(10), messageKey(9)].sort()).toEqual([messageKey(9), messageKey(10)]);
    expect(outputKey('toolu_01')).toBe('r/toolu_01');
  });

  test('an index that is negative, fractional or over 9 digits is INVALID_ARGUMENT', () => {
    for (const bad of [-1, 1.5, 1_000_000_000, Number.NaN]) expect(codeOf(() => messageKey(bad))).toBe('INVALID_ARGUMENT');
  });
});

describe('outputRefFor', () => {
  test('bytes are the UTF-8 length of the canonical JSON; the digest is sha256:<hex> of it; key order does not matter', () => {
    const value = { b: 'ä€😀', a: 1 };
    const text = '{"a":1,"b":"ä€😀"}';
    const ref = outputRefFor('r/c1', value);
    expect(ref).toEqual({ key: 'r/c1', bytes: Buffer.byteLength(text, 'utf8'), digest: `sha256:${createHash('sha256').update(text).digest('hex')}` });
    expect(ref.bytes).toBe(23); // 14 ASCII + ä 2 + € 3 + 😀 4
    expect(outputRefFor('r/c1', { a: 1, b: 'ä€😀' })).toEqual(ref);
  });

  test('a value that is not JSON is NOT_JSON', () => {
    expect(codeOf(() => outputRefFor('r/c1', { n: Number.POSITIVE_INFINITY } as unknown as JsonValue))).toBe('NOT_JSON');
  });

  test('assertMatchesRef refuses a value of other bytes or digest: CONVERSATION_CONFLICT', () => {
    const ref = outputRefFor('r/c1', { a: 'x' });
    expect(codeOf(() => assertMatchesRef('log', ref, { a: 'x' }))).toBe('no error');
    expect(codeOf(() => assertMatchesRef('log', ref, { a: 'y' }))).toBe('CONVERSATION_CONFLICT'); // same length, other digest
    expect(codeOf(() => assertMatchesRef('log', { ...ref, bytes: ref.bytes + 1 }, { a: 'x' }))).toBe('CONVERSATION_CONFLICT');
  });
});

describe('deliverOutput', () => {
  const big = { text: 'x'.repeat(3_000) };
  const success: ToolOutcome = { ok: true, output: big, receipt: { id: 'R-1' } };

  test('an output over the threshold is written at r/<callId> and returned as a reference with the receipt inline', async () => {
    const { store, puts } = recordingStore();
    const delivered = await deliverOutput(store, 'log-1', 'toolu_1', success, 2_048);
    expect(delivered).toEqual({ ok: true, outputRef: outputRefFor('r/toolu_1', big), receipt: { id: 'R-1' } });
    expect(puts).toEqual([{ logId: 'log-1', entries: [{ key: 'r/toolu_1', value: big }] }]);
  });

  test('an output at or under the threshold, an error outcome and an encoded output stay inline and nothing is written', async () => {
    const { store, puts } = recordingStore();
    const exact = outputRefFor('x', big).bytes;
    expect(await deliverOutput(store, 'log-1', 'c', success, exact)).toBe(success);
    const error: ToolOutcome = { ok: false, error: { type: 'BUSINESS_REJECTION', message: 'x'.repeat(10_000) } };
    expect(await deliverOutput(store, 'log-1', 'c', error, 1)).toBe(error);
    const encoded: ToolOutcome = { ok: true, output: 'AAAA'.repeat(1_000), receipt: null, encoding: 'binary/plain' };
    expect(await deliverOutput(store, 'log-1', 'c', encoded, 1)).toBe(encoded);
    expect(puts).toEqual([]);
  });

  test('one byte over the threshold goes by reference', async () => {
    const { store, puts } = recordingStore();
    const exact = outputRefFor('x', big).bytes;
    expect(await deliverOutput(store, 'log-1', 'c', success, exact - 1)).toMatchObject({ ok: true, outputRef: { key: 'r/c', bytes: exact } });
    expect(puts).toHaveLength(1);
  });

  test('a threshold that is not a positive integer is INVALID_ARGUMENT', async () => {
    const { store } = recordingStore();
    for (const bad of [0, -1, 1.5]) {
      await expect(deliverOutput(store, 'log-1', 'c', success, bad)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    }
  });
});
