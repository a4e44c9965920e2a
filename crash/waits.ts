/** Small polling waits shared by the scenarios. */
import { existsSync, readFileSync } from 'node:fs';
import type { Repetition } from './repetition';

export const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));

/** Polls `probe` until it returns a value other than `undefined`, or `timeoutMs` passes (then `undefined`). */
export async function waitFor<T>(probe: () => T | undefined | Promise<T | undefined>, timeoutMs: number, intervalMs = 20): Promise<T | undefined> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() >= deadline) return undefined;
    await sleep(intervalMs);
  }
}

/** The content of `file` once it exists, or null after `timeoutMs`. */
export async function waitForFile(file: string, timeoutMs: number): Promise<string | null> {
  return (await waitFor(() => (existsSync(file) ? readFileSync(file, 'utf8') : undefined), timeoutMs)) ?? null;
}

/** Whether a worker of `rep` (by identity) printed a line matching `pattern` within `timeoutMs`. */
export async function waitForLine(rep: Repetition, identity: string, pattern: RegExp, timeoutMs: number): Promise<boolean> {
  return (await waitFor(() => (rep.lines.some((line) => line.startsWith(`${identity}: `) && pattern.test(line)) ? true : undefined), timeoutMs, 50)) === true;
}
