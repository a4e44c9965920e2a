/**
 * Where a SQLite store's database work runs, seen from the calling thread (docs/protocol.md#cost:
 * store work never blocks the worker's event loop for long). A file database gets its own worker
 * thread (`./sqlite-worker.js`) that owns the connection: fsyncs and busy waits for another
 * process's lock happen there, while this thread only posts requests and receives answers. A
 * private `:memory:` database (tests only) runs the same executor on this thread: it never fsyncs,
 * no other connection can lock it, and a thread costs 50–100 ms to start (the interleaving explorer
 * opens one store per schedule).
 *
 * The requests of one event-loop turn of this thread are sent together, at its end, as one
 * batch (so the writes of concurrent calls that resume in the same turn commit together, as
 * before the thread existed); batches that reach the worker while it commits join its next one.
 * The answers of a batch settle a few per turn (`TurnQueue`, `./turn-queue`), so the calls they
 * resume do not hold this thread's loop all at once.
 *
 * The worker file is plain JavaScript beside this module, loaded with no TypeScript loader
 * (`execArgv: []`), so it starts the same way under jest, tsx and the compiled package.
 *
 * An idle store keeps no process alive (the worker is unref'ed); while any request is pending
 * the worker is ref'ed, so pending work completes. If the worker thread stops unexpectedly,
 * pending reads fail STORE_UNAVAILABLE, pending writes STORE_OUTCOME_UNKNOWN, and every later
 * call STORE_UNAVAILABLE.
 */
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { CheckpointError } from '../checkpoint/errors';
import { closedError, storeError, unavailable, type SqliteErrorContext } from './sqlite-errors';
import { isWriteRequest, wireDriverError as wireOf, type SqliteExecutor } from './sqlite-executor';
import { openExecutor } from './sqlite-open';
import { setImmediateAtLoad, TurnQueue } from './turn-queue';
import type {
  SqliteBatchAnswer,
  SqliteClosedAnswer,
  SqliteCommitFault,
  SqliteControlRequest,
  SqliteExecutorOptions,
  SqliteOpenAnswer,
  SqliteReadRequest,
  SqliteRequest,
  SqliteResponse,
  SqliteWriteRequest,
  WireDriverError,
} from './sqlite-protocol';

/** The worker thread's entry: `src/stores/sqlite-worker.js` from the sources, `dist/src/stores/sqlite-worker.js` from the package. */
export const SQLITE_WORKER_FILE = join(__dirname, 'sqlite-worker.js');

/** One request of the store, before it is numbered. */
export type SqliteCall = SqliteReadRequest | SqliteWriteRequest | SqliteControlRequest;

/** Counters since open: group transactions that changed a row (one WAL fsync each), the writes that changed one, and the requests (reads and writes) sent to the database. */
export interface SqliteThreadStats {
  readonly commits: number;
  readonly writes: number;
  readonly requests: number;
}

interface Pending {
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
  readonly write: boolean;
}

/** Runs the executor somewhere: takes batches of requests, answers through the callback given at start. */
interface Host {
  post(batch: readonly SqliteRequest[]): void;
  /** Keeps the process alive (true) while requests are pending, or lets it exit (false). */
  hold(held: boolean): void;
  /** Runs the work already posted, closes the connection and ends the thread. Idempotent. */
  close(): Promise<void>;
}

type Deliver = (answer: SqliteBatchAnswer) => void;
type Died = (error: Error) => void;

/**
 * A SQLite connection on its own thread (or inline for `:memory:`), with numbered requests.
 */
export class SqliteThread {
  private host!: Host;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  /** Requests of this event-loop turn, sent together at its end (one message, one batch). */
  private outbox: SqliteRequest[] = [];
  /** Answers received and not yet settled, a few per turn. */
  private readonly answers = new TurnQueue();
  private closing: Promise<void> | null = null;
  private stopped: CheckpointError | null = null;
  private whenIdle: (() => void) | null = null;
  private commits = 0;
  private writes = 0;
  private requests = 0;

  private constructor(private readonly context: SqliteErrorContext) {}

  /**
   * Opens the database in a new worker thread (`:memory:`: on this thread) and runs the migrations.
   *
   * @throws {@link CheckpointError} STORE_UNAVAILABLE when the file cannot be opened or migrated
   *   (a directory that cannot be created, locked past the busy timeout, not a database) or the
   *   thread cannot start, with the driver error as `cause`; UNSUPPORTED_SCHEMA when the file was migrated by
   *   newer code.
   */
  static async open(options: SqliteExecutorOptions): Promise<SqliteThread> {
    const thread = new SqliteThread({ path: options.path, busyTimeoutMs: options.busyTimeoutMs });
    const deliver: Deliver = (answer) => thread.deliver(answer);
    const died: Died = (error) => thread.died(error);
    thread.host = options.path === ':memory:' ? openInline(options, thread.context, deliver) : await startWorker(options, thread.context, deliver, died);
    return thread;
  }

  /** Counters since open (see {@link SqliteThreadStats}). */
  stats(): SqliteThreadStats {
    return { commits: this.commits, writes: this.writes, requests: this.requests };
  }

  /**
   * Sends one request; settles with the executor's answer.
   * @throws {@link CheckpointError} as the executor answered (see `./sqlite-errors`); STORE_UNAVAILABLE
   *   (`details.reason` `closed`) after {@link close}.
   */
  request<T>(call: SqliteCall): Promise<T> {
    if (this.closing !== null) return Promise.reject(closedError(this.context.path));
    if (this.stopped !== null) return Promise.reject(this.stopped);
    const id = this.nextId++;
    if (call.op !== 'fault') this.requests += 1;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (value: unknown) => void, reject, write: isWriteRequest(call) });
      if (this.pending.size === 1) this.host.hold(true);
      this.outbox.push({ ...call, id });
      if (this.outbox.length === 1) setImmediateAtLoad(() => this.send());
    });
  }

  /** Sends this turn's requests as one batch: the writes among them commit together (or with more). */
  private send(): void {
    const batch = this.outbox;
    this.outbox = [];
    if (batch.length === 0) return;
    if (this.stopped !== null) {
      for (const request of batch) this.pending.get(request.id)?.reject(this.stopped);
      for (const request of batch) this.pending.delete(request.id);
      this.settleIdle();
      return;
    }
    this.host.post(batch);
  }

  /** Test hook: the next group commit fails as `fault` describes (see `SqliteCommitFault`). */
  injectCommitFault(fault: SqliteCommitFault): Promise<void> {
    return this.request({ op: 'fault', commit: fault });
  }

  /** Lets pending requests finish, then closes the connection and ends the thread. Idempotent. */
  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    if (this.pending.size > 0) await new Promise<void>((resolve) => (this.whenIdle = resolve));
    await this.host.close();
  }

  private deliver(answer: SqliteBatchAnswer): void {
    // A transaction that changed nothing (a re-delivery's insert-or-nothing, a lost compare-and-swap) writes no WAL frame: no fsync, no commit counted.
    if (answer.group?.committed === true && answer.group.changed > 0) {
      this.commits += 1;
      this.writes += answer.group.changed;
    }
    for (const response of answer.responses) this.answers.push(() => this.settle(response));
  }

  private settle(response: SqliteResponse): void {
    const pending = this.pending.get(response.id);
    if (pending === undefined) return;
    this.pending.delete(response.id);
    if (response.ok) pending.resolve(response.value);
    else pending.reject(storeError(this.context, response.error));
    this.settleIdle();
  }

  private died(error: Error): void {
    // Answers already received stand: a write the thread committed is stored, not unknown.
    this.answers.flush();
    const driver: WireDriverError = { name: error.name, message: `the SQLite worker thread stopped: ${error.message}` };
    this.stopped = unavailable(this.context, 'run', driver);
    const unsent = new Set(this.outbox.map((request) => request.id));
    this.outbox = [];
    for (const [id, pending] of this.pending) {
      pending.reject(
        pending.write && !unsent.has(id)
          ? new CheckpointError(
              'STORE_OUTCOME_UNKNOWN',
              `SQLite database ${this.context.path}: the worker thread stopped while a write was in flight (${error.message}); it may or may not be stored`,
              { path: this.context.path },
              { cause: error },
            )
          : this.stopped,
      );
    }
    this.pending.clear();
    this.settleIdle();
  }

  private settleIdle(): void {
    if (this.pending.size > 0) return;
    this.host?.hold(false);
    const idle = this.whenIdle;
    this.whenIdle = null;
    idle?.();
  }
}

/** The executor on this thread, one batch (the requests of one event-loop turn) at a time (`:memory:` only). */
function openInline(options: SqliteExecutorOptions, context: SqliteErrorContext, deliver: Deliver): Host {
  const opened = openExecutor(options);
  if (!opened.ok) throw storeError(context, opened.error);
  const executor: SqliteExecutor = opened.executor;
  return {
    post: (batch) => executor.run(batch, deliver),
    hold() {
      // nothing runs in the background: a pending batch is a pending setImmediate
    },
    async close() {
      executor.close();
    },
  };
}

/** Starts the worker thread and waits until it opened the database (or says why it could not). */
function startWorker(options: SqliteExecutorOptions, context: SqliteErrorContext, deliver: Deliver, died: Died): Promise<Host> {
  return new Promise<Host>((resolve, reject) => {
    let worker: Worker;
    try {
      worker = new Worker(SQLITE_WORKER_FILE, { workerData: options, execArgv: [] });
    } catch (error) {
      reject(unavailable(context, 'open', wireOf(error)));
      return;
    }
    let opened = false;
    let closing = false;
    let onClosed: (() => void) | null = null;
    const exited = new Promise<void>((done) => worker.once('exit', () => done()));
    const fail = (error: Error): void => {
      if (!opened) {
        opened = true;
        reject(unavailable(context, 'open', wireOf(error)));
      } else if (!closing) {
        closing = true;
        died(error);
      }
    };
    worker.on('message', (message: SqliteOpenAnswer | SqliteBatchAnswer | SqliteClosedAnswer) => {
      if (!opened) {
        opened = true;
        const answer = message as SqliteOpenAnswer;
        if (answer.open) {
          worker.unref();
          resolve(host);
        } else {
          // Not awaited: the open has failed and is rejected now; terminate() only resolves with the
          // exit code, and the thread's 'exit' reaches `fail`, a no-op once `opened` is set.
          void worker.terminate();
          reject(storeError(context, answer.error));
        }
      } else if ('closed' in message) {
        onClosed?.();
      } else {
        deliver(message as SqliteBatchAnswer);
      }
    });
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`the worker thread exited with code ${code}`)));
    let closed: Promise<void> | null = null;
    const host: Host = {
      post: (batch) => worker.postMessage(batch),
      hold: (held) => (held ? worker.ref() : worker.unref()),
      close() {
        closed ??= (async () => {
          if (closing) return; // it already stopped
          closing = true;
          worker.ref();
          await new Promise<void>((done) => {
            onClosed = done;
            void exited.then(done); // `exited` never rejects (it resolves on the thread's 'exit')
            worker.postMessage({ op: 'close' });
          });
          await worker.terminate();
        })();
        return closed;
      },
    };
  });
}
