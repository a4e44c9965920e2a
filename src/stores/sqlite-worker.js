// @ts-check
/**
 * Entry point of a SQLite store's worker thread (started by `./sqlite-thread.ts` with
 * `workerData` = `SqliteExecutorOptions`). Opens the database (`./sqlite-open.js`), posts
 * `SqliteOpenAnswer`, then queues the batches it receives (the calling thread sends the
 * requests of each of its event-loop turns as one message) and, once per event-loop turn of
 * this thread, runs everything queued as one batch: requests that arrive while a commit (its
 * fsync, or a busy wait for another process's lock) is in flight wait in the port and form the
 * next batch, so they join the next transaction. `{ op: 'close' }` closes the connection after the
 * queued work, answers `{ closed: true }` and lets the thread exit.
 *
 * Plain JavaScript, loaded with no TypeScript loader (see `./sqlite-executor.js`).
 */
'use strict';

const { parentPort, workerData } = require('node:worker_threads');
const { openExecutor } = require('./sqlite-open');

/**
 * @typedef {import('./sqlite-protocol').SqliteRequest} SqliteRequest
 * @typedef {import('./sqlite-protocol').SqliteCloseRequest} SqliteCloseRequest
 * @typedef {import('./sqlite-protocol').SqliteExecutorOptions} SqliteExecutorOptions
 */

if (parentPort === null) throw new Error('sqlite-worker.js runs only as a worker thread of the SQLite store');
const port = parentPort;
const opened = openExecutor(/** @type {SqliteExecutorOptions} */ (workerData));

if (!opened.ok) {
  // Nothing listens on the port any more: the thread exits after this message.
  port.postMessage({ open: false, error: opened.error });
} else {
  const executor = opened.executor;
  /** @type {SqliteRequest[]} */
  let queue = [];
  let scheduled = false;

  const drain = () => {
    scheduled = false;
    const batch = queue;
    queue = [];
    if (batch.length > 0) executor.run(batch, (answer) => port.postMessage(answer));
  };

  port.on('message', (/** @type {readonly SqliteRequest[] | SqliteCloseRequest} */ message) => {
    if (!Array.isArray(message)) {
      // { op: 'close' }
      drain();
      executor.close();
      port.postMessage({ closed: true });
      port.close();
      return;
    }
    // One by one: spreading a large batch into push() overflows the stack.
    for (const request of message) queue.push(request);
    if (!scheduled) {
      scheduled = true;
      setImmediate(drain);
    }
  });
  port.postMessage({ open: true });
}
