/**
 * The plugin's scheduling defaults for its workflow interceptor module (the module request's
 * query, `src/plugin/contract/scheduling-defaults`) and the `heartbeatTimeoutMs` option: what the
 * plugin writes the interceptor reads back unchanged; anything else reads as no defaults, and a
 * bad option is refused when the plugin is built.
 */
import fc from 'fast-check';
import type { BundleOptions } from '@temporalio/worker';
import { openCheckpointStore, type CheckpointStore } from '../../../src';
import { ToolCheckpointPlugin } from '../../../src/plugin';
import { parseSchedulingDefaults, schedulingDefaultsQuery } from '../../../src/plugin/contract/scheduling-defaults';

/** The workflow interceptor module the plugin adds to a workflow bundle. */
const moduleOf = (plugin: ToolCheckpointPlugin): string => {
  const modules = plugin.configureBundler({ workflowsPath: 'workflows.js' } as BundleOptions).workflowInterceptorModules ?? [];
  expect(modules).toHaveLength(1);
  return modules[0]!;
};

describe('scheduling defaults in the interceptor module request', () => {
  test('property: any fenced types and heartbeat timeout round-trip through the query', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ unit: 'binary' })), fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }), (fencedTypes, heartbeatTimeoutMs) => {
        const query = schedulingDefaultsQuery({ fencedTypes, heartbeatTimeoutMs });
        expect(query).toMatch(/^\?ttc=[^&?#]*$/);
        expect(parseSchedulingDefaults(query)).toEqual({ fencedTypes, heartbeatTimeoutMs });
      }),
    );
  });

  test('no query, another query, or one that does not hold the defaults: no defaults', () => {
    const bad = [
      undefined,
      '',
      '?',
      '?other=1',
      '?ttc=',
      '?ttc=%7B',
      '?ttc=%ZZ',
      `?ttc=${encodeURIComponent(JSON.stringify({ fencedTypes: ['a'], heartbeatTimeoutMs: 0 }))}`,
      `?ttc=${encodeURIComponent(JSON.stringify({ fencedTypes: ['a'], heartbeatTimeoutMs: 1.5 }))}`,
      `?ttc=${encodeURIComponent(JSON.stringify({ fencedTypes: [1], heartbeatTimeoutMs: 1000 }))}`,
      `?ttc=${encodeURIComponent(JSON.stringify({ fencedTypes: 'a', heartbeatTimeoutMs: 1000 }))}`,
      `?ttc=${encodeURIComponent('null')}`,
      `${schedulingDefaultsQuery({ fencedTypes: ['a'], heartbeatTimeoutMs: 1000 })}&x=1`,
    ];
    for (const query of bad) expect([query, parseSchedulingDefaults(query)]).toEqual([query, null]);
  });
});

describe('ToolCheckpointPlugin heartbeatTimeoutMs', () => {
  let store: CheckpointStore;
  beforeAll(async () => {
    store = await openCheckpointStore('sqlite::memory:');
  });
  afterAll(() => store.close());

  test('the interceptor module carries the fenced types (fence entries and tools) and the timeout: 10 s by default, none with null or nothing fenced', () => {
    const fence = { chargeCard: { revision: 'v1' }, refund: { revision: 'v1' } };
    const query = (plugin: ToolCheckpointPlugin) => parseSchedulingDefaults(/(\?.*)?$/.exec(moduleOf(plugin))![1]);
    expect(query(new ToolCheckpointPlugin({ store, fence }))).toEqual({ fencedTypes: ['chargeCard', 'refund'], heartbeatTimeoutMs: 10_000 });
    expect(query(new ToolCheckpointPlugin({ store, fence, heartbeatTimeoutMs: 2_500 }))).toEqual({ fencedTypes: ['chargeCard', 'refund'], heartbeatTimeoutMs: 2_500 });
    expect(moduleOf(new ToolCheckpointPlugin({ store, fence, heartbeatTimeoutMs: null }))).not.toContain('?');
    expect(moduleOf(new ToolCheckpointPlugin({ store }))).not.toContain('?');
  });

  test('a bad heartbeatTimeoutMs is refused when the plugin is built (INVALID_ARGUMENT naming the field)', () => {
    for (const bad of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53, '10000' as never]) {
      expect(() => new ToolCheckpointPlugin({ store, fence: { chargeCard: { revision: 'v1' } }, heartbeatTimeoutMs: bad })).toThrow(
        expect.objectContaining({ code: 'INVALID_ARGUMENT', details: expect.objectContaining({ field: 'heartbeatTimeoutMs' }) }),
      );
    }
  });
});
