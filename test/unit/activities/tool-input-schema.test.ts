/**
 * A tool's input schema must be a zod 4 schema (zod 4, or `zod/v4` of zod 3.25.76+): the fence
 * validates with it and offers it to models as JSON Schema, which a zod 3 schema cannot give.
 * A zod 3 schema (here zod 4's bundled `zod/v3`, the same API) is refused with INVALID_ARGUMENT
 * saying how to get a zod 4 one, by defineTool and by the plugin's fence entries alike.
 */
import * as z3 from 'zod/v3';
import { z } from 'zod/v4';
import { defineTool } from '../../../src/activities/tools/define-tool';
import { resolveFencedActivities } from '../../../src/plugin/options';
import type { CheckpointStore } from '../../../src/stores/checkpoint-store';

const execute = async (): Promise<{ output: null }> => ({ output: null });
const ZOD3_REFUSAL = { code: 'INVALID_ARGUMENT', message: expect.stringMatching(/must be a zod 4 schema: with zod 3\.25\.76\+, import \{ z \} from 'zod\/v4'/) };

test('defineTool refuses a zod 3 schema, naming the zod/v4 import', () => {
  expect(() => defineTool({ name: 'charge', revision: 'v1', input: z3.z.object({ orderId: z3.z.string() }) as never, execute })).toThrow(expect.objectContaining(ZOD3_REFUSAL));
  expect(() => defineTool({ name: 'charge', revision: 'v1', input: { parse: () => null } as never, execute })).toThrow(
    expect.objectContaining({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/must be a zod schema/) }),
  );
  expect(defineTool({ name: 'charge', revision: 'v1', input: z.object({ orderId: z.string() }), execute }).name).toBe('charge');
});

test('the plugin refuses a fenced activity whose input is a zod 3 schema, naming the zod/v4 import', () => {
  const store = {} as CheckpointStore;
  expect(() => resolveFencedActivities({ store, fence: { chargeCard: { revision: 'v1', input: z3.z.tuple([z3.z.string()]) as never } } })).toThrow(
    expect.objectContaining(ZOD3_REFUSAL),
  );
  expect(resolveFencedActivities({ store, fence: { chargeCard: { revision: 'v1', input: z.tuple([z.string()]) } } }).has('chargeCard')).toBe(true);
});
