/**
 * jest `setupFilesAfterEnv`: before each test file, disables every AsyncLocalStorage the files
 * before it enabled (at the next file's start, so that no teardown of theirs loses its context).
 *
 * jest loads each test file's modules afresh, so every file creates new AsyncLocalStorage
 * instances (@temporalio/activity's context, one per @temporalio/client Connection, the plugin's
 * scopes), and Node 20 keeps each enabled one in a process-wide list that it walks for every
 * async resource the process creates (`_propagate`), until `disable()`. In the one in-band
 * process the list grew with every file and promise-heavy suites ran slower the later they came
 * (after the integration suites, `_propagate` took a third of the explorers' CPU profile: the
 * single-call explorer ran 43 s there, 12.5 s with this release, as alone). Disabling an instance only drops its stores; `run()` / `enterWith()` enable it
 * again.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

type Storage = AsyncLocalStorage<unknown>;
/** Kept on the class: core modules are shared by all test files (jest gives each its own `process` and globals). */
const REGISTRY = Symbol.for('ttc.test.enabledAsyncLocalStorages');
const holder = AsyncLocalStorage as unknown as { [REGISTRY]?: Set<Storage> };

function enabledStorages(): Set<Storage> {
  if (holder[REGISTRY] === undefined) {
    const enabled = new Set<Storage>();
    holder[REGISTRY] = enabled;
    const proto = AsyncLocalStorage.prototype as Storage;
    const { run, enterWith } = proto;
    proto.run = function (this: Storage, ...args: Parameters<Storage['run']>) {
      enabled.add(this);
      return run.apply(this, args);
    } as Storage['run'];
    proto.enterWith = function (this: Storage, store: unknown) {
      enabled.add(this);
      enterWith.call(this, store);
    };
  }
  return holder[REGISTRY];
}

const enabled = enabledStorages();
for (const storage of enabled) storage.disable();
enabled.clear();
