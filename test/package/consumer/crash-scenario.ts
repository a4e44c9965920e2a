/**
 * The installed-package crash scenario both package tests run (./run-worker.js in a consumer
 * project): a worker starts emailWorkflow and SIGKILLs itself right after the fenced sendEmail's
 * effect; a second worker finishes the run. Returns what the second worker printed and what the
 * ledger (the effects) holds; the caller asserts.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface CrashScenarioOutcome {
  /** How the first worker ended: 'SIGKILL' when it killed itself after the effect. */
  readonly firstWorker: string | undefined;
  readonly result: { readonly email: { readonly messageId: string }; readonly nothingAppliedCodes: number };
  readonly ledger: ReadonlyArray<{ readonly messageId: string; readonly idempotencyKey: string | null }>;
}

/** Runs the scenario in `consumer` against the server at `address` and the store at `storeUrl`; the ledger goes in `dir`. */
export async function runEmailCrashScenario(consumer: string, dir: string, address: string, storeUrl: string): Promise<CrashScenarioOutcome> {
  const id = `consumer-email-${Date.now()}`;
  const env: NodeJS.ProcessEnv = { ...process.env, TEMPORAL_ADDRESS: address, STORE_URL: storeUrl, LEDGER: join(dir, `${id}.jsonl`), WORKFLOW_ID: id, TASK_QUEUE: id };
  const firstWorker = await run(process.execPath, ['run-worker.js', 'start'], { cwd: consumer, env: { ...env, TTC_CRASH_AT: 'after-effect:sendEmail' } }).then(
    () => 'exited',
    (error: { signal?: string }) => error.signal,
  );
  const { stdout } = await run(process.execPath, ['run-worker.js', 'finish'], { cwd: consumer, env, maxBuffer: 64 << 20 });
  const { result } = JSON.parse(stdout.trim().split('\n').at(-1)!) as { result: CrashScenarioOutcome['result'] };
  const ledger = readFileSync(env.LEDGER!, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as CrashScenarioOutcome['ledger'][number]);
  return { firstWorker, result, ledger };
}
