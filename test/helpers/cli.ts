/**
 * Runs the `ttc` command line as a user would: a child process of `src/cli/index.ts` under tsx,
 * from the project root, with the given environment (nothing of the test process's `NODE_OPTIONS`).
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';

export const ROOT = join(__dirname, '../..');

/** Exit code (0 on success), stdout and stderr of one CLI invocation. */
export interface CliOutput {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `ttc <args>` with `env` (the whole environment of the child); gives up after `timeoutMs` (default 60,000 ms). */
export function runCli(args: readonly string[], env: NodeJS.ProcessEnv, timeoutMs = 60_000): Promise<CliOutput> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      ['--require', require.resolve('tsx/cjs'), join(ROOT, 'src/cli/index.ts'), ...args],
      { cwd: ROOT, env: { ...env, NODE_OPTIONS: '' }, timeout: timeoutMs },
      (error, stdout, stderr) => {
        done({ code: error ? Number((error as { code?: unknown }).code ?? 1) : 0, stdout, stderr });
      },
    );
  });
}
