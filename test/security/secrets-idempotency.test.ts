/**
 * Keyed idempotency keys: with a secret configured, a call's idempotency key is an
 * HMAC-SHA-256 (`ttc3-…`) a third party on the same provider account cannot compute from the
 * call's public parts; without one, keys are exactly today's (`ttc2-…`, existing checkpoints keep
 * their keys). Activities run in MockActivityEnvironment against a real SQLite store.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { z } from 'zod';
import { createToolActivities, defineTool } from '../../src/activities';
import type { FencedToolInput, ToolCallDescription } from '../../src/activities/contract/contract';
import { idempotencyKey, type IdempotencyKeyParts } from '../../src/checkpoint/digest';
import { resolveConfig } from '../../src/config';
import type { CheckpointStore } from '../../src/stores/checkpoint-store';
import { openCheckpointStore } from '../../src/stores/open-checkpoint-store';

const SECRET = randomBytes(32);
const PARTS: IdempotencyKeyParts = { namespace: 'default/acme', runChainId: 'run-1', workflowId: 'wf-1', callId: 'c1', toolName: 'create_ticket', toolRevision: 'v1' };

describe('keyed idempotency keys', () => {
  test('with a secret the key is HMAC-SHA-256 of the parts (ttc3-), not computable from the parts alone; without one it is unchanged', () => {
    const text = JSON.stringify(['ttc/idempotency-key/2', 'default/acme', 'run-1', 'wf-1', 'c1', 'create_ticket', 'v1']);
    const unkeyed = `ttc2-${createHash('sha256').update(text).digest('hex')}`;

    expect(idempotencyKey(PARTS)).toBe(unkeyed);
    const keyed = idempotencyKey(PARTS, SECRET);
    expect(keyed).toMatch(/^ttc3-[0-9a-f]{64}$/);
    expect(keyed).not.toBe(unkeyed);
    expect(idempotencyKey(PARTS, SECRET)).toBe(keyed);
    expect(idempotencyKey(PARTS, randomBytes(32))).not.toBe(keyed);
    expect(() => idempotencyKey(PARTS, Buffer.alloc(16, 1))).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT', details: expect.objectContaining({ field: 'idempotencyKeySecret' }) }),
    );
  });

  test('TTC_IDEMPOTENCY_KEY_SECRET is read with the key rules (trimmed, >= 32 bytes, low entropy refused, never shown)', () => {
    expect(resolveConfig({}, {}).keys.idempotencyKeySecret).toBeNull();
    expect(resolveConfig({}, { TTC_IDEMPOTENCY_KEY_SECRET: `hex:${SECRET.toString('hex')}\n` }).keys.idempotencyKeySecret).toEqual(SECRET);
    expect(() => resolveConfig({}, { TTC_IDEMPOTENCY_KEY_SECRET: '00'.repeat(32) })).toThrow(
      expect.objectContaining({ code: 'INVALID_CONFIG', details: { field: 'TTC_IDEMPOTENCY_KEY_SECRET', reason: 'low-entropy' } }),
    );
  });

  describe('the activities', () => {
    let dir: string;
    let store: CheckpointStore;
    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'ttc-idem-'));
      store = await openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`);
    });
    afterAll(async () => {
      await store?.close();
      rmSync(dir, { recursive: true, force: true });
    });

    function activities(seen: string[], secret?: Uint8Array): ReturnType<typeof createToolActivities> {
      const tool = defineTool({
        name: 'create_ticket',
        revision: 'v1',
        input: z.object({}),
        async execute(_args, ctx) {
          seen.push(ctx.idempotencyKey);
          return { output: { ok: true } };
        },
      });
      return createToolActivities({ store, tools: [tool], ...(secret === undefined ? {} : { idempotencyKeySecret: secret }) });
    }
    const env = (workflowId: string): MockActivityEnvironment => new MockActivityEnvironment({ workflowExecution: { workflowId, runId: 'run-1' }, attempt: 1 } as never);
    const call: FencedToolInput = { tenant: 'acme', callId: 'c1', toolName: 'create_ticket', input: {} };

    test('a worker with idempotencyKeySecret hands the tool (and describeToolCall) the keyed key; without it, the unkeyed key', async () => {
      const keyedSeen: string[] = [];
      const keyed = activities(keyedSeen, SECRET);
      await env('wf-keyed').run(keyed.runFencedTool, call);
      const described = (await env('wf-keyed').run(keyed.describeToolCall, call)) as ToolCallDescription;
      const plainSeen: string[] = [];
      await env('wf-plain').run(activities(plainSeen).runFencedTool, call);

      expect(keyedSeen).toEqual([idempotencyKey({ ...PARTS, workflowId: 'wf-keyed' }, SECRET)]);
      expect(keyedSeen[0]).toMatch(/^ttc3-[0-9a-f]{64}$/);
      expect(keyedSeen[0]).not.toBe(idempotencyKey({ ...PARTS, workflowId: 'wf-keyed' }));
      expect(described.idempotencyKey).toBe(keyedSeen[0]);
      expect(plainSeen).toEqual([idempotencyKey({ ...PARTS, workflowId: 'wf-plain' })]);
    });

    test('a secret shorter than 32 bytes is refused when the activities are built', () => {
      expect(() => activities([], Buffer.alloc(16, 7))).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    });
  });
});
