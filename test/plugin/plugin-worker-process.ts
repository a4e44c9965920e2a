/**
 * `plugin-worker.ts` in its own process (the plugin fencing `chargeCard`), for tests that SIGKILL
 * a real worker: optionally armed with `TTC_CRASH_AT=<crashAt>:chargeCard`.
 */
import { spawn } from 'node:child_process';
import { formatCrashAt, type CrashPoint } from '../../src/activities/fence/crash-points';
import type { PluginWorkerOptions } from './plugin-worker';

/** A spawned plugin worker: its pid, its exit (signal or code), and SIGKILL. */
export interface Spawned {
  readonly pid: number;
  readonly exited: Promise<number | NodeJS.Signals | null>;
  kill(): void;
}

/** Starts `plugin-worker.ts` in its own process and resolves once it polls. */
export async function spawnPluginWorker(options: PluginWorkerOptions, crashAt?: CrashPoint): Promise<Spawned> {
  const env: NodeJS.ProcessEnv = { ...process.env, NODE_OPTIONS: '' };
  if (crashAt === undefined) delete env.TTC_CRASH_AT;
  else env.TTC_CRASH_AT = formatCrashAt({ point: crashAt, toolName: 'chargeCard' });
  const child = spawn(process.execPath, ['--require', require.resolve('tsx/cjs'), require.resolve('./plugin-worker'), JSON.stringify(options)], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | NodeJS.Signals | null>((done) => child.once('exit', (code, signal) => done(signal ?? code)));
  let output = '';
  await new Promise<void>((ready, fail) => {
    const timer = setTimeout(() => fail(new Error(`plugin worker did not start: ${output}`)), 60_000);
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('ready\n')) {
        clearTimeout(timer);
        ready();
      }
    });
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    void exited.then((how) => {
      clearTimeout(timer);
      fail(new Error(`plugin worker exited (${String(how)}) before it was ready: ${output}`));
    });
  });
  return { pid: child.pid!, exited, kill: () => child.kill('SIGKILL') };
}
