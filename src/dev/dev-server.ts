/**
 * Start a real Temporal dev server (`temporal server start-dev`) as a child process.
 *
 * Used by the CLI `dev` command, the main job, integration tests and crash tests. We spawn the
 * CLI ourselves instead of using the SDK's `TestWorkflowEnvironment.createLocal`, because
 *  - the SDK downloads the CLI from the internet unless given a path,
 *  - the SDK waits only ~5 s for readiness, and
 *  - crash tests need to SIGKILL the server and restart it on the same database file.
 * Pair it with `TestWorkflowEnvironment.createFromExistingServer({ address, namespace })`,
 * `Connection.connect({ address })` or `NativeConnection.connect({ address })`.
 *
 * Node side only; never import from workflow code.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { Connection } from '@temporalio/client';
import { devServerSearchAttributeArgs } from '../visibility/namespace-search-attributes';
import { temporalCliPath } from './temporal-binaries';

export type DevServerLogLevel = 'debug' | 'info' | 'warn' | 'error' | 'never';

export interface DevServerOptions {
  /** SQLite file for persistent state (kept across restarts). Omit for an in-memory server. */
  dbFile?: string;
  /** gRPC frontend port. Default: a free port chosen at start. */
  port?: number;
  /** Web UI port. Default: no UI (`--headless`). */
  uiPort?: number;
  /** Namespace to use (created at launch; "default" always exists). Default "default". */
  namespace?: string;
  /** Address to bind. Default 127.0.0.1. */
  ip?: string;
  /** Server log level (`--log-level`). Default "error". */
  logLevel?: DevServerLogLevel;
  /** How long to wait for the server to answer for the namespace. Default 60 000 ms. */
  readyTimeoutMs?: number;
  /**
   * Register the run search attributes `TtcNeedsPerson` (Bool) and `TtcWaitingCalls`
   * (KeywordList) on every namespace the server creates (`--search-attribute`), so runs started
   * through `startAgentRun` carry them and `pending` lists waiting runs by visibility
   * (docs/visibility.md). `false` starts a server without them. @default true
   */
  searchAttributes?: boolean;
  /** Extra CLI arguments appended to `temporal server start-dev …`. */
  extraArgs?: string[];
  /** Path of the `temporal` CLI. Default: resolved by `temporalCliPath()`. */
  executable?: string;
  /** Let the server write to this process's stdout/stderr instead of capturing it. */
  inheritStdio?: boolean;
  /** Called with captured output (ignored with `inheritStdio`). */
  onOutput?: (text: string, stream: 'stdout' | 'stderr') => void;
  /** SIGKILL the server when this Node process exits (normally or via process.exit). Default true. */
  killOnParentExit?: boolean;
}

export interface DevServerExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface StopOptions {
  /** Signal to send first. Default SIGTERM (graceful, ~1 s). Use SIGKILL to simulate a crash. */
  signal?: NodeJS.Signals;
  /** After this long without exit, send SIGKILL. Default 10 000 ms. */
  timeoutMs?: number;
}

export interface DevServer {
  /** `host:port` of the gRPC frontend, e.g. "127.0.0.1:41234". */
  readonly address: string;
  readonly port: number;
  readonly namespace: string;
  readonly dbFile: string | undefined;
  /** `http://host:port` of the Web UI, when `uiPort` was given. */
  readonly uiUrl: string | undefined;
  readonly process: ChildProcess;
  /** Resolves when the server process exits (for whatever reason). */
  readonly exited: Promise<DevServerExit>;
  /** Milliseconds from spawn to ready. */
  readonly startupMs: number;
  /** Send a signal (SIGTERM by default) and wait for exit; escalates to SIGKILL after timeoutMs. Idempotent. */
  stop(options?: StopOptions): Promise<DevServerExit>;
  /** Recent captured output (empty with `inheritStdio`). */
  output(): string;
}

export class DevServerStartError extends Error {
  override readonly name = 'DevServerStartError';
}

const OUTPUT_TAIL_CHARS = 16_384;

const liveChildren = new Set<ChildProcess>();
let exitHookInstalled = false;
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const child of liveChildren) {
      try {
        child.kill('SIGKILL');
      } catch {
        // already gone
      }
    }
  });
}

/** A currently free TCP port on `host` (the OS picks it; small race until the server binds it). */
export function getFreePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.once('error', reject);
    srv.listen(0, host, () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr !== null ? addr.port : 0;
      srv.close((err) => (err ? reject(err) : resolve(port)));
    });
  });
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Whether something accepts TCP connections on host:port (cheap pre-check before gRPC). */
function tcpAccepts(host: string, port: number, timeoutMs = 500): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = net.connect({ host, port });
    const done = (ok: boolean) => {
      sock.destroy();
      resolve(ok);
    };
    sock.setTimeout(timeoutMs, () => done(false));
    sock.once('connect', () => done(true));
    sock.once('error', () => done(false));
  });
}

function buildArgs(opts: DevServerOptions, ip: string, port: number, namespace: string): string[] {
  const args = ['server', 'start-dev', '--ip', ip, '--port', String(port)];
  if (opts.uiPort !== undefined) args.push('--ui-port', String(opts.uiPort));
  else args.push('--headless');
  if (opts.dbFile !== undefined) args.push('--db-filename', path.resolve(opts.dbFile));
  if (namespace !== 'default') args.push('--namespace', namespace);
  args.push('--log-level', opts.logLevel ?? 'error');
  if (opts.searchAttributes ?? true) args.push(...devServerSearchAttributeArgs());
  args.push(...(opts.extraArgs ?? []));
  return args;
}

/**
 * Start `temporal server start-dev` and wait until it serves `namespace` (with the run search
 * attributes registered unless `searchAttributes: false`).
 *
 * With `dbFile`, state survives `stop({ signal: 'SIGKILL' })`; start again with the same
 * `dbFile` (and the same `port`, if clients should reconnect to the same address).
 */
export async function startDevServer(options: DevServerOptions = {}): Promise<DevServer> {
  const fixedPort = options.port !== undefined;
  // A port chosen by us can be grabbed by someone else before the server binds it: retry.
  const attempts = fixedPort ? 1 : 3;
  let lastError: unknown;
  for (let i = 0; i < attempts; i++) {
    try {
      return await startOnce(options, options.port ?? (await getFreePort(options.ip ?? '127.0.0.1')));
    } catch (err) {
      lastError = err;
      if (!(err instanceof DevServerStartError) || !/address already in use|bind/i.test(err.message)) throw err;
    }
  }
  throw lastError;
}

async function startOnce(options: DevServerOptions, port: number): Promise<DevServer> {
  const ip = options.ip ?? '127.0.0.1';
  const namespace = options.namespace ?? 'default';
  const executable = options.executable ?? temporalCliPath();
  const readyTimeoutMs = options.readyTimeoutMs ?? 60_000;
  if (options.dbFile !== undefined) fs.mkdirSync(path.dirname(path.resolve(options.dbFile)), { recursive: true });

  const args = buildArgs(options, ip, port, namespace);
  const started = Date.now();
  const child = spawn(executable, args, {
    stdio: options.inheritStdio ? ['ignore', 'inherit', 'inherit'] : ['ignore', 'pipe', 'pipe'],
  });

  let tail = '';
  const capture = (stream: 'stdout' | 'stderr') => (buf: Buffer) => {
    const text = buf.toString('utf8');
    tail = (tail + text).slice(-OUTPUT_TAIL_CHARS);
    options.onOutput?.(text, stream);
  };
  child.stdout?.on('data', capture('stdout'));
  child.stderr?.on('data', capture('stderr'));

  let exitInfo: DevServerExit | undefined;
  let spawnError: Error | undefined;
  const exited = new Promise<DevServerExit>((resolve) => {
    child.once('error', (err) => {
      // spawn failure (ENOENT, EACCES): no 'exit' event follows
      spawnError = err;
      liveChildren.delete(child);
      exitInfo = { code: null, signal: null };
      resolve(exitInfo);
    });
    child.once('exit', (code, signal) => {
      liveChildren.delete(child);
      exitInfo = { code, signal };
      resolve(exitInfo);
    });
  });
  if (options.killOnParentExit ?? true) {
    installExitHook();
    liveChildren.add(child);
  }

  const address = `${ip}:${port}`;
  const describe = () => `\`${executable} ${args.join(' ')}\`` + (tail.trim() ? `\n--- server output (tail) ---\n${tail.trim()}` : '');

  const kill = async (stopOpts: StopOptions = {}): Promise<DevServerExit> => {
    if (exitInfo) return exitInfo;
    const timeoutMs = stopOpts.timeoutMs ?? 10_000;
    child.kill(stopOpts.signal ?? 'SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const escalate = new Promise<void>((r) => {
      timer = setTimeout(r, timeoutMs);
    });
    const first = await Promise.race([exited, escalate.then(() => undefined)]);
    clearTimeout(timer);
    if (first) return first;
    child.kill('SIGKILL');
    return exited;
  };

  /** true when ready; false when the port is closed; otherwise the gRPC error. */
  const probe = async (attemptMs: number): Promise<boolean | unknown> => {
    // Poll the port first: a gRPC connect to a closed port backs off ~1 s before retrying.
    if (!(await tcpAccepts(ip, port))) return false;
    if (exitInfo) return false; // something else owns the port
    let conn: Connection | undefined;
    try {
      conn = await Connection.connect({ address, connectTimeout: attemptMs });
      const c = conn;
      await c.withDeadline(Date.now() + attemptMs, () => c.workflowService.describeNamespace({ namespace }));
      return true;
    } catch (err) {
      return err;
    } finally {
      // Not awaited, and a failed close is dropped: this probe connection is done either way, and
      // the probe's answer (ready or the error above) does not depend on it.
      void conn?.close().catch(() => undefined);
    }
  };

  // Wait until the frontend answers DescribeNamespace for our namespace.
  const deadline = started + readyTimeoutMs;
  let lastErr: unknown;
  let ready = false;
  while (!ready) {
    if (exitInfo) {
      const why = spawnError ? `could not be spawned: ${spawnError.message}` : `exited early (code ${exitInfo.code}, signal ${exitInfo.signal})`;
      throw new DevServerStartError(`Temporal dev server ${why}: ${describe()}`);
    }
    const remaining = deadline - Date.now();
    if (remaining <= 0) {
      await kill({ signal: 'SIGKILL' });
      throw new DevServerStartError(
        `Temporal dev server at ${address} not ready after ${readyTimeoutMs} ms` + (lastErr instanceof Error ? ` (last error: ${lastErr.message})` : '') + `: ${describe()}`,
      );
    }
    const attemptMs = Math.max(100, Math.min(1_000, remaining));
    // Race every probe against the process exiting, so a failed start is reported at once.
    const outcome = await Promise.race([probe(attemptMs), exited.then(() => 'exited' as const)]);
    if (outcome === true) ready = true;
    else if (outcome !== 'exited') {
      lastErr = outcome;
      await sleep(outcome === false ? 50 : 100);
    }
  }
  const startupMs = Date.now() - started;

  return {
    address,
    port,
    namespace,
    dbFile: options.dbFile === undefined ? undefined : path.resolve(options.dbFile),
    uiUrl: options.uiPort === undefined ? undefined : `http://${ip}:${options.uiPort}`,
    process: child,
    exited,
    startupMs,
    stop: kill,
    output: () => tail,
  };
}
