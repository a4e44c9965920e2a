/**
 * Removes the process-wide promise hook that `Worker.runReplayHistory` / `runReplayHistories`
 * leave installed.
 *
 * A replay worker runs its workflows on the calling thread (`debugMode`), and the SDK's
 * `GlobalHandlers` then install a `v8.promiseHooks` hook that compiles a function for every
 * promise the process creates and is never removed (@temporalio/worker 1.24,
 * lib/workflow/vm-shared.js: `uninstall()` "is not called anywhere"). In jest's one in-band
 * process it ran for every promise of every later suite: the interleaving explorers ran 3 to 10
 * times slower after a replay suite (batch explorer 4 s alone, 49 s after the integration
 * suites). Every test file that replays calls this after each test (`afterEach`); the next replay
 * installs the hook again. test/lint/replay-hooks-lint.test.ts checks that they do.
 *
 * Uses the module instance of the calling test file's module registry: the one its replays
 * installed the hook from.
 */
export function releaseReplayHooks(): void {
  // An SDK internal without types (the package has no exports map); the path holds for 1.24.
  const vmShared = require('@temporalio/worker/lib/workflow/vm-shared') as { globalHandlers?: { installed: boolean; uninstall(): void } };
  if (vmShared.globalHandlers?.installed === true) vmShared.globalHandlers.uninstall();
}
