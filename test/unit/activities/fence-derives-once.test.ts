/**
 * A fenced call canonicalises and hashes each value once (docs/performance.md, the CPU target):
 * the model's input once for its size bound and its fingerprint, the row key once for both of a
 * fresh call's writes, the completion once, and no stored body is hashed just to be remembered.
 * The schema parses a copy of the input, so the fingerprint is of the input the model sent.
 * Counted on the real `canonicalize` library and `node:crypto`, through `runFencedTool` on an
 * in-memory SQLite store: a text that reaches either of them twice in one call is work done twice.
 */
import { MockActivityEnvironment } from '@temporalio/testing';
import { z } from 'zod';
import { createToolActivities, defineTool } from '../../../src/activities';
import type { FencedToolResult } from '../../../src/activities/contract/contract';
import { fingerprintInput } from '../../../src/checkpoint/digest';
import { openCheckpointStore } from '../../../src/stores/open-checkpoint-store';
import type { CheckpointStore } from '../../../src/stores/checkpoint-store';

const canonicalised: string[] = [];
jest.mock('canonicalize', () => {
  const actual = jest.requireActual('canonicalize') as (value: unknown) => string | undefined;
  return (value: unknown) => {
    const text = actual(value);
    if (typeof text === 'string') canonicalised.push(text);
    return text;
  };
});

const hashed: string[] = [];
jest.mock('node:crypto', () => {
  const actual = jest.requireActual('node:crypto') as typeof import('node:crypto');
  return {
    ...actual,
    createHash: (algorithm: string, options?: import('node:crypto').HashOptions) => {
      const hash = actual.createHash(algorithm, options);
      const update = hash.update.bind(hash);
      hash.update = ((data: string | Uint8Array, encoding?: import('node:crypto').Encoding) => {
        hashed.push(typeof data === 'string' ? data : Buffer.from(data).toString('hex'));
        return encoding === undefined ? update(data) : update(data as string, encoding);
      }) as typeof hash.update;
      return hash;
    },
  };
});

let store: CheckpointStore;
beforeEach(async () => {
  store = await openCheckpointStore('sqlite::memory:');
});
afterEach(async () => {
  await store.close();
});

/** Texts that occur more than once in `texts`, each with its count. */
function repeated(texts: readonly string[]): Array<[string, number]> {
  const counts = new Map<string, number>();
  for (const text of texts) counts.set(text, (counts.get(text) ?? 0) + 1);
  return [...counts].filter(([, n]) => n > 1).map(([text, n]) => [text.slice(0, 120), n]);
}

/** The texts canonicalised and hashed while `run` ran. */
async function counted(run: () => Promise<void>): Promise<{ canonicalised: string[]; hashed: string[] }> {
  canonicalised.length = 0;
  hashed.length = 0;
  await run();
  return { canonicalised: [...canonicalised], hashed: [...hashed] };
}

describe('a fenced call derives each value once', () => {
  // The schema fills a default, so the validated arguments differ from the model's input: two values, two texts.
  const tool = defineTool({
    name: 'create_ticket',
    revision: '1',
    input: z.object({ title: z.string(), priority: z.number().int().default(3) }),
    async execute(input) {
      return { output: { ticket: `T-${input.title}` } };
    },
  });
  const call = { tenant: 't', callId: 'call-1', toolName: 'create_ticket', input: { title: 'printer on fire' } };
  const env = (attempt: number) => new MockActivityEnvironment({ attempt, heartbeatTimeoutMs: 30_000, workflowExecution: { workflowId: 'wf', runId: 'run' } } as never);

  it('a fresh call and its re-delivery canonicalise no text twice and hash no text twice', async () => {
    const { runFencedTool } = createToolActivities({ store, tools: [tool] });
    for (const [attempt, source] of [
      [1, 'executed'],
      [2, 'store'],
    ] as const) {
      const texts = await counted(async () => {
        expect(((await env(attempt).run(runFencedTool, call)) as FencedToolResult).source).toBe(source);
      });
      expect(repeated(texts.canonicalised)).toEqual([]);
      expect(repeated(texts.hashed)).toEqual([]);
      // The input fingerprint, the intent digest, the idempotency key and the row key: no stored body is hashed.
      expect(texts.hashed).toHaveLength(4);
    }
  });

  it('a schema that changes its input in place changes neither the model input nor the fingerprint taken of it', async () => {
    const trimming = defineTool({
      name: 'create_ticket',
      revision: '1',
      input: z.preprocess(
        (value) => {
          const input = value as { title: string };
          input.title = input.title.trim();
          return input;
        },
        z.object({ title: z.string() }),
      ),
      async execute(input) {
        return { output: { ticket: `T-${input.title}` } };
      },
    });
    const { runFencedTool } = createToolActivities({ store, tools: [trimming] });
    const spaced = { ...call, input: { title: '  printer on fire ' } };
    const result = (await env(1).run(runFencedTool, spaced)) as FencedToolResult;
    expect(result).toMatchObject({ source: 'executed', outcome: { output: { ticket: 'T-printer on fire' } } });
    expect(spaced.input).toEqual({ title: '  printer on fire ' });
    const [record] = await store.listByStatus(['delivered']);
    expect(record!.binding.inputFingerprint).toBe(fingerprintInput({ title: '  printer on fire ' }));
    expect(((await env(2).run(runFencedTool, spaced)) as FencedToolResult).source).toBe('store');
  });
});
