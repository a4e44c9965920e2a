/**
 * Worker processes for the main job, the crash tests and the fleet tests: a real
 * `ttc worker` OS process (from the sources, Node with tsx's require hook, never the tsx launcher,
 * so a SIGKILL reaches the process that runs the activities; from the package, plain Node).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { formatCrashAt, type CrashPoint } from '../activities/fence/crash-points';

/** Options of {@link spawnWorker}. */
export interface SpawnWorkerOptions {
  /** Environment on top of this process's: TEMPORAL_ADDRESS, TEMPORAL_TASK_QUEUE, TTC_STORE_URL, TTC_PROVIDER_URL, … */
  readonly env: NodeJS.ProcessEnv;
  readonly identity: string;
  /** Arms the test-only crash hook: the worker SIGKILLs itself the `occurrence`-th time (default 1st) it reaches this point (for this tool). */
  readonly crashAt?: { readonly point: CrashPoint; readonly toolName?: string; readonly occurrence?: number };
  /** Module exporting the tools. @default the demo tools */
  readonly toolsModule?: string;
  /** Model adapters the worker offers (`--models`). @default 'scripted' (the main job and the crash and fleet tests replay transcripts) */
  readonly models?: string;
  /** Activities the worker runs at once (`--max-concurrent-activities`). @default the SDK's */
  readonly maxConcurrentActivities?: number;
  /** Called with each line the worker prints. */
  readonly onLine?: (line: string) => void;
  /** @default 60,000 ms */
  readonly readyTimeoutMs?: number;
}

/** A running worker process. */
export interface WorkerProcess {
  readonly identity: string;
  readonly process: ChildProcess;
  /** Resolves with the exit code or signal once the process has exited. */
  readonly exited: Promise<number | NodeJS.Signals | null>;
  /** Graceful stop (SIGTERM; SIGKILL after `timeoutMs`, default 15 s). */
  stop(timeoutMs?: number): Promise<void>;
  /** SIGKILL now. */
  kill(): Promise<void>;
}

/** Running from this repository's TypeScript sources (tsx): the worker needs tsx's require hook too; from the package's compiled JavaScript it needs nothing. */
const FROM_SOURCES = __filename.endsWith('.ts');
const CLI = resolve(__dirname, FROM_SOURCES ? '../cli/index.ts' : '../cli/index.js');

/**
 * Spawns a worker and resolves once it polls its task queue.
 *
 * @throws Error when the process exits or stays silent past `readyTimeoutMs`.
 */
export async function spawnWorker(options: SpawnWorkerOptions): Promise<WorkerProcess> {
  const args = [...(FROM_SOURCES ? ['--require', require.resolve('tsx/cjs')] : []), CLI, 'worker', '--identity', options.identity];
  if (options.toolsModule) args.push('--tools', options.toolsModule);
  args.push('--models', options.models ?? 'scripted');
  if (options.maxConcurrentActivities) args.push('--max-concurrent-activities', String(options.maxConcurrentActivities));
  const env: NodeJS.ProcessEnv = { ...process.env, ...options.env, NODE_OPTIONS: '' };
  if (options.crashAt) env.TTC_CRASH_AT = formatCrashAt(options.crashAt);
  else delete env.TTC_CRASH_AT;
  const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<number | NodeJS.Signals | null>((done) => child.once('exit', (code, signal) => done(signal ?? code)));
  const ready = new Promise<void>((done, fail) => {
    const timer = setTimeout(() => fail(new Error(`worker ${options.identity} did not start within ${options.readyTimeoutMs ?? 60_000} ms`)), options.readyTimeoutMs ?? 60_000);
    let buffered = '';
    const onData = (chunk: Buffer): void => {
      buffered += chunk.toString('utf8');
      let newline: number;
      while ((newline = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        options.onLine?.(line);
        if (line.includes('polling task queue')) {
          clearTimeout(timer);
          done();
        }
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    // `exited` never rejects (it resolves on the child's 'exit'); after `ready`, `fail` is a no-op.
    void exited.then((how) => {
      clearTimeout(timer);
      fail(new Error(`worker ${options.identity} exited (${String(how)}) before it was ready`));
    });
  });
  await ready;
  const signalAndWait = async (signal: NodeJS.Signals, timeoutMs: number): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    await exited;
    clearTimeout(timer);
  };
  return {
    identity: options.identity,
    process: child,
    exited,
    stop: (timeoutMs = 15_000) => signalAndWait('SIGTERM', timeoutMs),
    kill: () => signalAndWait('SIGKILL', 0),
  };
}
