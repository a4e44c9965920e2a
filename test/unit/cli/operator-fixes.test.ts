/**
 * Operator-facing fixes found by a fresh user of the security features (pins, keys, codec, worker
 * log): the worker's pins are configuration errors naming the variable, the `ttc worker` banner
 * shows the pins, CLI errors carry a failed run's cause chain, an encrypted payload read without
 * the codec key is a typed error with a hint, and a malformed `hex:` key reports the right reason.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ActivityFailure, ApplicationFailure, WorkflowFailedError } from '@temporalio/client';
import { RetryState, ValueError } from '@temporalio/common';
import { z } from 'zod';
import { createToolActivities, defineTool, type ToolDefinition } from '../../../src/activities';
import { isCheckpointError, type CheckpointError } from '../../../src/checkpoint/errors';
import { describeError, explainUndecodable, runFailureOf } from '../../../src/cli/errors';
import { workerBanner } from '../../../src/cli/worker-banner';
import { terminalSafe } from '../../../src/cli/terminal-safe';
import { resolveConfig, type Config } from '../../../src/config';
import { parseKeyMaterial } from '../../../src/key-material';
import { openCheckpointStore } from '../../../src/stores/open-checkpoint-store';
import { createAgentWorker } from '../../../src/worker';

const tool = (name: string): ToolDefinition<any> =>
  defineTool({
    name,
    revision: 'v1',
    input: z.object({}),
    async execute() {
      return { output: {} };
    },
  });
const TOOLS = ['create_ticket', 'refund', 'lookup'].map(tool);

async function refusal(promise: Promise<unknown>): Promise<CheckpointError> {
  const error = await promise.then(
    () => new Error('expected a refusal'),
    (e: unknown) => e,
  );
  if (!isCheckpointError(error)) throw error;
  return error;
}

describe('pins naming unregistered tools are INVALID_CONFIG naming the variable, before connecting', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-pins-config-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  // Nothing listens on port 1: a check after connecting would report TEMPORAL_UNAVAILABLE instead.
  const config = (env: NodeJS.ProcessEnv): Config => resolveConfig({}, { TEMPORAL_ADDRESS: '127.0.0.1:1', TTC_STORE_URL: `sqlite:${join(dir, 'c.db')}`, ...env });

  it.each<[NodeJS.ProcessEnv, string, string]>([
    [{ TTC_TOOLS: 'nope' }, 'TTC_TOOLS', 'nope'],
    [{ TTC_TOOLS: 'create_ticket,nope' }, 'TTC_TOOLS', 'nope'],
    [{ TTC_REQUIRE_APPROVAL: 'wire_money' }, 'TTC_REQUIRE_APPROVAL', 'wire_money'],
    [{ TTC_TOOLS: 'refund,wire_money', TTC_REQUIRE_APPROVAL: 'wire_money' }, 'TTC_TOOLS', 'wire_money'],
  ])('item 3: %j is INVALID_CONFIG naming %s', async (env, variable, name) => {
    const error = await refusal(createAgentWorker({ config: config(env), tools: TOOLS, models: [], payloadCodec: null }));
    expect(error.code).toBe('INVALID_CONFIG');
    expect(error.details.field).toBe(variable);
    expect(error.message).toContain(`${variable} (or `);
    expect(error.message).toContain(`names ${name}, which this worker does not register; it registers create_ticket, refund, lookup`);
  });

  it('the library keeps INVALID_ARGUMENT for the same mistake made through the API', async () => {
    const store = await openCheckpointStore(`sqlite:${join(dir, 'api.db')}`);
    try {
      let error: unknown;
      try {
        createToolActivities({ store, tools: TOOLS, pinnedTools: ['nope'] });
      } catch (e) {
        error = e;
      }
      expect(isCheckpointError(error, 'INVALID_ARGUMENT')).toBe(true);
    } finally {
      await store.close();
    }
  });
});

describe('the worker banner shows the pins', () => {
  const base = resolveConfig({}, { TEMPORAL_TASK_QUEUE: 'q1', TEMPORAL_ADDRESS: 'temporal:7233' });
  const banner = (env: NodeJS.ProcessEnv): string =>
    workerBanner({
      identity: 'w1',
      config: resolveConfig({}, { TEMPORAL_TASK_QUEUE: 'q1', TEMPORAL_ADDRESS: 'temporal:7233', ...env }),
      tools: TOOLS.map((t) => t.name),
      models: ['scripted'],
    });

  it('pinned tenants, the pinned tools among the registered ones, and the approval-required tools', () => {
    const text = banner({ TTC_TENANTS: 'acme,initech', TTC_TOOLS: 'refund,create_ticket', TTC_REQUIRE_APPROVAL: 'refund' });
    expect(text).toContain('worker w1 polling task queue q1 on temporal:7233');
    expect(text).toContain('tenants: acme, initech');
    expect(text).toMatch(/tools: create_ticket, refund \(pinned by TTC_TOOLS; 3 registered\)/);
    expect(text).not.toContain('lookup');
    expect(text).toContain('approval required: refund');
    expect(text).toContain('models: scripted');
  });

  it('unpinned: any tenant, every registered tool, no approval', () => {
    expect(base.pins.tenants).toBeNull();
    const text = banner({});
    expect(text).toContain('tenants: any');
    expect(text).toContain('tools: create_ticket, refund, lookup;');
    expect(text).toContain('approval required: none (unsigned: TTC_APPROVAL_GRANT_KEYS unset)');
  });

  it('signed approvals: the key ids the worker verifies grants with, never the keys', () => {
    const hex = '0f1e2d3c4b5a69788796a5b4c3d2e1f00112233445566778899aabbccddeeff1';
    const text = banner({ TTC_REQUIRE_APPROVAL: 'refund', TTC_APPROVAL_GRANT_KEYS: `ops:hmac:hex:${hex}` });
    expect(text).toContain('approval required: refund (signed grants, keys ops)');
    expect(text).not.toContain(hex);
  });
});

describe('CLI errors carry the cause chain', () => {
  const notPinned = ApplicationFailure.create({
    type: 'NOT_PINNED',
    message: 'NOT_PINNED: this worker does not serve tenant "globex"\u001b[2J; the model was not called',
    nonRetryable: true,
  });
  const activity = new ActivityFailure('Activity task failed', 'runModelTurn', '1', RetryState.NON_RETRYABLE_FAILURE, 'worker-1', notPinned);
  const failed = new WorkflowFailedError('Workflow execution failed', activity, RetryState.RETRY_POLICY_NOT_SET);

  it('a WorkflowFailedError prints its ActivityFailure and the NOT_PINNED ApplicationFailure, escaped when printed', () => {
    const text = describeError(failed);
    expect(text).toBe(
      'WorkflowFailedError: Workflow execution failed; caused by ActivityFailure: Activity task failed; caused by ApplicationFailure: NOT_PINNED: this worker does not serve tenant "globex"\u001b[2J; the model was not called',
    );
    expect(terminalSafe(text)).toContain('"globex"\\u001b[2J');
  });

  it('the run failure is the innermost ApplicationFailure (type and message)', () => {
    expect(runFailureOf(failed)).toEqual({ type: 'NOT_PINNED', message: notPinned.message });
  });

  it('a CheckpointError prints as before; a cycle or a plain value does not hang', () => {
    const a = new Error('a') as Error & { cause?: unknown };
    a.cause = a;
    expect(describeError(a)).toBe('a');
    expect(describeError('text')).toBe('text');
    const typed = explainUndecodable(new ValueError('Unknown encoding: binary/encrypted'));
    expect(describeError(typed)).toBe((typed as Error).message);
  });
});

describe('an encrypted payload read without the codec key', () => {
  it('is DECRYPTION_FAILED naming TTC_PAYLOAD_CODEC_KEY with the hint (never a key); other errors pass through', () => {
    const typed = explainUndecodable(new ValueError('Unknown encoding: binary/encrypted'), "run w1's status");
    expect(isCheckpointError(typed, 'DECRYPTION_FAILED')).toBe(true);
    expect((typed as CheckpointError).details).toMatchObject({ field: 'TTC_PAYLOAD_CODEC_KEY', reason: 'no-codec-key' });
    expect((typed as Error).message).toBe(
      "DECRYPTION_FAILED: cannot read run w1's status: payloads are encrypted by the payload codec (binary/encrypted); set TTC_PAYLOAD_CODEC_KEY (and TTC_PAYLOAD_CODEC_KEYS) to read them",
    );
    const wrapped = new Error('query failed', { cause: new ValueError('Unknown encoding: binary/encrypted') });
    expect(isCheckpointError(explainUndecodable(wrapped), 'DECRYPTION_FAILED')).toBe(true);
    const other = new ValueError('Unknown encoding: binary/zstd');
    expect(explainUndecodable(other)).toBe(other);
  });
});

describe('a malformed hex key reports the right reason', () => {
  const digits = 'ab'.repeat(31);
  const reasonOf = (text: string): string => {
    try {
      parseKeyMaterial('TTC_ENCRYPTION_KEY', text, { bytes: 32 });
    } catch (error) {
      if (isCheckpointError(error, 'INVALID_CONFIG')) return error.message;
      throw error;
    }
    throw new Error('expected INVALID_CONFIG');
  };

  it('a non-hex character is named as such (with its position), not as an odd count', () => {
    const message = reasonOf(`hex:ZZ${digits}`);
    expect(message).not.toContain('even number');
    expect(message).toBe('INVALID_CONFIG: TTC_ENCRYPTION_KEY has a character that is not a hex digit (0-9, a-f, A-F) at position 1 of its hex digits after "hex:"');
    expect(message).not.toContain(digits.slice(0, 8));
    expect(reasonOf(`hex:${digits.slice(0, 20)} ${digits.slice(20)}`)).toContain('has whitespace at position 21');
  });

  it('an odd number of hex digits and an empty hex: say so', () => {
    expect(reasonOf(`hex:${digits}a`)).toContain('must be an even number of hex digits, got 63 digits after "hex:"');
    expect(reasonOf('hex:')).toContain('has no hex digits after "hex:"');
    expect(reasonOf(`${digits}a`)).toContain('must be an even number of hex digits, got 63 digits');
  });
});
