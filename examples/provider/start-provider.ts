/**
 * Start the demo provider (`server.ts`) as its own child process, for tests, the main job and
 * crash tests. The child is one `node` process (TypeScript loaded through tsx's CommonJS hook,
 * or the compiled `server.js` when running from `dist/`), so `kill()` really kills it: there
 * is no wrapper process to orphan a grandchild.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as readline from 'node:readline';
import { ProviderClient } from './client';

/** Options of {@link startProvider}. */
export interface StartProviderOptions {
  /** The provider's SQLite file (created if missing). Reuse it to restart the provider with its data. */
  readonly dbFile: string;
  /** Enable fault injection (`/_faults`). @default false */
  readonly faults?: boolean;
  /** Port to listen on; 0 picks a free one. Pass the old port to restart at the same URL. @default 0 */
  readonly port?: number;
  /** @default '127.0.0.1' */
  readonly host?: string;
  /** Give up if the listening line has not appeared by then. @default 30000 */
  readonly startTimeoutMs?: number;
  /** Log each request as a JSON line on the child's stderr. @default false */
  readonly logRequests?: boolean;
  /** Where the child's stderr goes: inherited (default), or ignored. */
  readonly stderr?: 'inherit' | 'ignore';
}

/** A running provider process. */
export interface RunningProvider {
  /** Base URL, e.g. `http://127.0.0.1:41234`. */
  readonly url: string;
  readonly port: number;
  /** Process id of the provider. */
  readonly pid: number;
  readonly dbFile: string;
  /** A client bound to {@link url}. */
  readonly client: ProviderClient;
  /** Resolves with the exit code (or signal name) once the process has exited. */
  readonly exited: Promise<number | string>;
  /** Graceful stop: SIGTERM, wait for exit (SIGKILL after `timeoutMs`, default 10 s). Idempotent. */
  stop(timeoutMs?: number): Promise<void>;
  /** Crash it: SIGKILL and wait for exit. Idempotent. */
  kill(): Promise<void>;
}

const live = new Set<ChildProcess>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // Never leave a provider behind when the parent exits without stopping it.
  process.on('exit', () => {
    for (const child of live) child.kill('SIGKILL');
  });
}

/** The command that runs the server in this layout (TypeScript source or compiled output). */
function serverCommand(): { file: string; execArgv: string[] } {
  const compiled = path.join(__dirname, 'server.js');
  if (__filename.endsWith('.js') && fs.existsSync(compiled)) return { file: compiled, execArgv: [] };
  return { file: path.join(__dirname, 'server.ts'), execArgv: ['--require', require.resolve('tsx/cjs')] };
}

/**
 * Spawn the provider and resolve once it printed `{"event":"listening",…}`. Rejects (and
 * kills the child) if it exits first or does not listen within `startTimeoutMs`.
 */
export async function startProvider(options: StartProviderOptions): Promise<RunningProvider> {
  installExitHook();
  const { file, execArgv } = serverCommand();
  const args = [...execArgv, file, '--port', String(options.port ?? 0), '--db', options.dbFile];
  args.push('--host', options.host ?? '127.0.0.1');
  if (options.faults) args.push('--faults');
  if (options.logRequests) args.push('--log-requests');

  const child = spawn(process.execPath, args, {
    stdio: ['ignore', 'pipe', options.stderr === 'ignore' ? 'ignore' : 'inherit'],
    env: { ...process.env, NODE_OPTIONS: '' },
  });
  live.add(child);
  const exited = new Promise<number | string>((resolve) => {
    child.once('exit', (code, signal) => {
      live.delete(child);
      resolve(code ?? signal ?? 'unknown');
    });
  });

  const lines = readline.createInterface({ input: child.stdout! });
  const listening = new Promise<{ port: number; url: string }>((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(new Error(`provider did not start within ${options.startTimeoutMs ?? 30_000} ms`));
    }, options.startTimeoutMs ?? 30_000);
    lines.on('line', (line) => {
      let event: { event?: unknown; port?: unknown; url?: unknown };
      try {
        event = JSON.parse(line) as typeof event;
      } catch {
        return;
      }
      if (event.event === 'listening' && typeof event.port === 'number' && typeof event.url === 'string') {
        clearTimeout(timer);
        resolve({ port: event.port, url: event.url });
      }
    });
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`provider exited (${code}) before listening`));
    });
  });

  let ready: { port: number; url: string };
  try {
    ready = await listening;
  } catch (error) {
    child.kill('SIGKILL');
    await exited;
    throw error;
  }

  const stop = async (timeoutMs = 10_000): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      await exited;
      clearTimeout(timer);
    }
    await exited;
  };
  const kill = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  };

  return {
    url: ready.url,
    port: ready.port,
    pid: child.pid!,
    dbFile: options.dbFile,
    client: new ProviderClient(ready.url),
    exited,
    stop,
    kill,
  };
}
