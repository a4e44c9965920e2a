/**
 * What the `_ttc-call` activity header leaves in Temporal history when the payload codec
 * is on (real dev server, real SQLite store, worker and client with the AES-256-GCM codec; history
 * read raw by a client without it).
 *
 * The SDK does not pass headers through the payload codec (`@temporalio/worker`
 * `workflow-codec-runner.ts`, `encodeCompletion` visits the completion with `skipHeaders: true`),
 * so the header the plugin's workflow interceptor writes reaches history as `json/plain`: the call
 * id and run chain of every activity, and for a call run under `withApprovedIntent` the approved
 * intent digest and its expiry. Everything else but the labels of test/helpers/raw-history stays
 * `binary/encrypted`. The intent digest is an unkeyed SHA-256 over the canonical arguments
 * (`intentDigest` in src/checkpoint/digest.ts), also with `idempotencyKeySecret` set (which keys
 * only the idempotency key): whoever reads history confirms a guess of the arguments with it.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@temporalio/client';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { z } from 'zod';
import { openCheckpointStore, type CheckpointStore } from '../../src';
import { defineTool } from '../../src/activities';
import { intentDigest } from '../../src/checkpoint/digest';
import { codecDataConverter } from '../../src/codec/data-converter';
import { createPayloadCodec } from '../../src/codec/payload-codec';
import { buildAgentWorkflowBundle } from '../../src/codec/workflow-bundle';
import { CALL_HEADER, ToolCheckpointPlugin } from '../../src/plugin';
import type { ModelTurnInput, ModelTurnResult } from '../../src/model/types';
import { agentWorkflow } from '../../src/workflows';
import type { AgentWorkflowInput } from '../../src/workflows/agent/types';
import type { FencedCallDescription } from '../../src/workflow';
import { payloadsIn } from '../helpers/raw-history';
import { createLocalEnv, installQuietTemporalRuntime, type LocalTestEnv } from '../helpers/temporal';
import { LONG_RUNS_PATCH, CONVERSATION_BRANCHES_PATCH, RESET_SAFE_CALLS_PATCH, rawHistoryView, TOOL_ACTIVITY_TYPES_PATCH } from '../helpers/raw-history';
import { approveChargeUpdate, approvedCheckoutWorkflow, pendingChargeQuery, type ApprovedCheckoutResult } from './approval-workflows';
import { paymentActivities, readLedger } from './payment-activities';

installQuietTemporalRuntime();
jest.setTimeout(180_000);

const quietLogger = { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} };
const SECRET_PROMPT = 'SECRET-PROMPT-order-48213';
const SECRET_TITLE = 'SECRET-TITLE-refund-card-4242';

/** The `_ttc-call` header of each ActivityTaskScheduled event, removed from `history` (in place). */
function takeCallHeaders(history: temporal.api.history.v1.IHistory): { activityType: string; encoding: string; value: unknown; raw: Buffer }[] {
  return (history.events ?? []).flatMap((event) => {
    const attributes = event.activityTaskScheduledEventAttributes;
    const payload = attributes?.header?.fields?.[CALL_HEADER];
    if (!attributes || !payload) return [];
    delete attributes.header!.fields![CALL_HEADER];
    return [
      {
        activityType: attributes.activityType?.name ?? '(stripped)',
        encoding: Buffer.from(payload.metadata?.encoding ?? []).toString(),
        value: defaultPayloadConverter.fromPayload(payload),
        raw: Buffer.from(payload.data ?? []),
      },
    ];
  });
}

const encodingOf = (payload: Payload): string => Buffer.from(payload.metadata?.encoding ?? []).toString();

describe('the _ttc-call header in Temporal history with the payload codec', () => {
  const codec = createPayloadCodec({ keyId: 'hdr-1', key: randomBytes(32) });
  const dataConverter = codecDataConverter(codec)!;
  let env: LocalTestEnv;
  let dir: string;
  let store: CheckpointStore;
  let withCodec: Client;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-header-history-'));
    [env, store] = await Promise.all([createLocalEnv(), openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`)]);
    withCodec = new Client({ connection: env.connection, namespace: env.namespace ?? 'default', dataConverter });
  });

  afterAll(async () => {
    await store?.close();
    await env?.teardown();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  /** The raw history of `workflowId` (env.client has no codec), with the `_ttc-call` headers taken out. */
  async function rawHistory(workflowId: string) {
    const history = await env.client.workflow.getHandle(workflowId).fetchHistory();
    const wire = Buffer.from(temporal.api.history.v1.History.encode(history).finish());
    const headers = takeCallHeaders(history);
    return { wire, headers, ...rawHistoryView(history) };
  }

  it('agentWorkflow from buildAgentWorkflowBundle({ encodeFailures: true, plugins }): each activity header is json/plain { callId, runChainId }; every other payload is binary/encrypted', async () => {
    const tool = defineTool({
      name: 'create_ticket',
      revision: 'v1',
      input: z.object({ title: z.string() }).strict(),
      async execute() {
        return { output: { ticketId: 'T-000001' } };
      },
    });
    const plugin = new ToolCheckpointPlugin({ store, tools: [tool] });
    const code = await buildAgentWorkflowBundle({ encodeFailures: true, plugins: [plugin], logger: quietLogger });
    const runModelTurn = async (input: ModelTurnInput): Promise<ModelTurnResult> =>
      input.turn > 0
        ? { stopReason: 'end_turn', text: 'done', toolCalls: [] }
        : { stopReason: 'tool_use', text: '', toolCalls: [{ callId: 'toolu_1', toolName: 'create_ticket', input: { title: SECRET_TITLE } }] };
    const taskQueue = 'header-history-agent';
    const workflowId = 'header-history-agent';
    const worker = await Worker.create({ connection: env.nativeConnection, taskQueue, workflowBundle: { code }, dataConverter, activities: { runModelTurn }, plugins: [plugin] });
    const input: AgentWorkflowInput = {
      tenant: 'acme',
      model: 'scripted',
      prompt: SECRET_PROMPT,
      tools: ['create_ticket'],
      budget: { maxTurns: 4, maxToolCalls: 4, deadlineMs: 60_000 },
    };
    const { result, firstRunId } = await worker.runUntil(async () => {
      const handle = await withCodec.workflow.start(agentWorkflow, { taskQueue, workflowId, args: [input] });
      return { result: await handle.result(), firstRunId: handle.firstExecutionRunId };
    });
    expect(result.calls.map((c) => [c.toolName, c.status])).toEqual([['create_ticket', 'completed']]);

    const { wire, headers, history, bytes, labels } = await rawHistory(workflowId);
    expect(headers.map(({ activityType, encoding, value }) => ({ activityType, encoding, value }))).toEqual([
      { activityType: 'runModelTurn', encoding: 'json/plain', value: { callId: 'act-1', runChainId: firstRunId } },
      { activityType: 'create_ticket', encoding: 'json/plain', value: { callId: 'act-2', runChainId: firstRunId, occurrence: { scope: `first:${firstRunId}`, index: 0 } } },
      { activityType: 'runModelTurn', encoding: 'json/plain', value: { callId: 'act-3', runChainId: firstRunId } },
    ]);
    // In the bytes Temporal stores, the header is readable as is.
    expect(wire.includes(Buffer.from(`"callId":"act-2","runChainId":"${firstRunId}","occurrence":{"scope":"first:${firstRunId}","index":0}`))).toBe(true);
    expect(labels.activityTypes).toEqual(['runModelTurn', 'create_ticket', 'runModelTurn']);
    expect(new Set(labels.patchIds)).toEqual(new Set([LONG_RUNS_PATCH, TOOL_ACTIVITY_TYPES_PATCH, CONVERSATION_BRANCHES_PATCH, RESET_SAFE_CALLS_PATCH]));
    for (const text of [SECRET_PROMPT, SECRET_TITLE, 'T-000001', 'json/plain']) expect([text, bytes.includes(Buffer.from(text))]).toEqual([text, false]);
    const payloads = payloadsIn(history);
    expect(payloads.length).toBeGreaterThanOrEqual(7);
    expect(new Set(payloads.map(encodingOf))).toEqual(new Set(['binary/encrypted']));
  });

  it('an approved call: the header carries the approved intent digest and expiry in json/plain, and the digest confirms a guess of the arguments although idempotencyKeySecret is set', async () => {
    const customer = `cus_SECRET_${randomBytes(4).toString('hex')}`;
    const amountCents = 4_200;
    const workflowId = 'header-history-approved';
    const ledger = join(dir, `${workflowId}.jsonl`);
    const plugin = new ToolCheckpointPlugin({ store, fence: { chargeCard: { revision: 'v1' } }, idempotencyKeySecret: randomBytes(32) });
    const worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue: workflowId,
      workflowsPath: require.resolve('./approval-workflows'),
      dataConverter,
      activities: { chargeCard: paymentActivities(ledger).chargeCard },
      plugins: [plugin],
    });
    const expiresAt = new Date(Date.now() + 3_600_000).toISOString();
    const { result, firstRunId } = await worker.runUntil(async () => {
      const handle = await withCodec.workflow.start(approvedCheckoutWorkflow, { workflowId, taskQueue: workflowId, args: [customer, amountCents] });
      let shown: FencedCallDescription | null = null;
      while (shown === null) {
        shown = await handle.query(pendingChargeQuery);
        if (shown === null) await new Promise((r) => setTimeout(r, 100));
      }
      await handle.executeUpdate(approveChargeUpdate, { args: [{ intentDigest: shown.intentDigest, expiresAt }] });
      return { result: (await handle.result()) as ApprovedCheckoutResult, firstRunId: handle.firstExecutionRunId };
    });
    expect(result.failureType).toBeNull();
    const digest = result.description.intentDigest;
    // The secret keys the idempotency key the provider got (ttc3-), not the intent digest.
    expect(readLedger(ledger).map((e) => e.idempotencyKey?.slice(0, 5))).toEqual(['ttc3-']);

    const { wire, headers, history, bytes } = await rawHistory(workflowId);
    expect(headers.map(({ activityType, encoding, value }) => ({ activityType, encoding, value }))).toEqual([
      { activityType: 'describeFencedCall', encoding: 'json/plain', value: { callId: 'act-1', runChainId: firstRunId } },
      {
        activityType: 'chargeCard',
        encoding: 'json/plain',
        value: { callId: 'act-2', runChainId: firstRunId, occurrence: { scope: `first:${firstRunId}`, index: 0 }, approvedIntentDigest: digest, approvalExpiresAt: expiresAt },
      },
    ]);
    expect(wire.includes(Buffer.from(digest))).toBe(true);
    expect(wire.includes(Buffer.from(expiresAt))).toBe(true);
    // The arguments themselves are encrypted: the customer appears nowhere in history...
    expect(wire.includes(Buffer.from(customer))).toBe(false);
    expect(new Set(payloadsIn(history).map(encodingOf))).toEqual(new Set(['binary/encrypted']));
    expect(bytes.includes(Buffer.from('json/plain'))).toBe(false);
    // ...but the digest in the header is SHA-256 over the canonical arguments, unkeyed: a right guess matches it, a wrong one does not.
    const guess = (who: string, cents: number) => intentDigest({ toolName: 'chargeCard', toolRevision: 'v1', args: { args: [who, cents] } });
    expect(guess(customer, amountCents)).toBe(digest);
    expect(guess(customer, amountCents + 1)).not.toBe(digest);
  });
});
