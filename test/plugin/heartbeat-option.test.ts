/**
 * The `heartbeatTimeoutMs` plugin option is read as it is validated: as an own property of the
 * options (`ownOption` in src/plugin/options.ts, like every plugin-wide option), never through the
 * prototype chain. A value on the options' prototype (a class getter) is neither validated nor
 * used, and a polluted `Object.prototype.heartbeatTimeoutMs` changes nothing: the default applies.
 * Found by a review: the plugin built its interceptor module's query from the prototype chain.
 */
import type { BundleOptions } from '@temporalio/worker';
import { openCheckpointStore, type CheckpointStore } from '../../src';
import { ToolCheckpointPlugin, type ToolCheckpointPluginOptions } from '../../src/plugin';
import { parseSchedulingDefaults } from '../../src/plugin/contract/scheduling-defaults';

/** The scheduling defaults the plugin hands its workflow interceptor module (null: none). */
const defaultsOf = (plugin: ToolCheckpointPlugin) => {
  const modules = plugin.configureBundler({ workflowsPath: 'workflows.js' } as BundleOptions).workflowInterceptorModules ?? [];
  return parseSchedulingDefaults(/(\?.*)?$/.exec(modules[0]!)![1]);
};

describe('heartbeatTimeoutMs is read as it is validated', () => {
  let store: CheckpointStore;
  beforeAll(async () => {
    store = await openCheckpointStore('sqlite::memory:');
  });
  afterAll(() => store.close());

  const fence = { chargeCard: { revision: 'v1' } };

  test("a heartbeatTimeoutMs from a getter on the options class is not the options' own: neither validated nor used, the default 10 s applies", () => {
    class Options {
      constructor(
        readonly store: CheckpointStore,
        readonly fence: ToolCheckpointPluginOptions['fence'],
      ) {}
      get heartbeatTimeoutMs(): number {
        return -5;
      }
    }
    expect(defaultsOf(new ToolCheckpointPlugin(new Options(store, fence)))).toEqual({ fencedTypes: ['chargeCard'], heartbeatTimeoutMs: 10_000 });
  });

  test('a polluted Object.prototype.heartbeatTimeoutMs is not used: the default 10 s applies', () => {
    const proto = Object.prototype as { heartbeatTimeoutMs?: unknown };
    proto.heartbeatTimeoutMs = 1; // 1 ms: every fenced call would time out at once
    try {
      expect(defaultsOf(new ToolCheckpointPlugin({ store, fence }))).toEqual({ fencedTypes: ['chargeCard'], heartbeatTimeoutMs: 10_000 });
    } finally {
      delete proto.heartbeatTimeoutMs;
    }
  });
});
