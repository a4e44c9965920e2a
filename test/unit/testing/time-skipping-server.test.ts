/**
 * How `createTimeSkippingEnv` finds the test server: as the CLI finds its binaries
 * (src/dev/temporal-binaries.ts). A variable that names no executable is an error naming it,
 * never a silent download; the SDK downloads a server only when nothing names or holds one.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TemporalBinaryNotFoundError } from '../../../src/dev/temporal-binaries';
import { createTimeSkippingEnv } from '../../../src/testing/time-skipping';

const saved = { ...process.env };
let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'ttc-test-server-'));
});
afterEach(() => {
  process.env = { ...saved };
  rmSync(dir, { recursive: true, force: true });
});

test.each(['TEMPORAL_TEST_SERVER', 'TEMPORAL_TEST_SERVER_PATH'])('%s naming a file that is not executable is an error naming the variable, not a download', async (name) => {
  const file = join(dir, 'temporal-test-server');
  writeFileSync(file, 'not a binary', { mode: 0o644 });
  delete process.env.TEMPORAL_TEST_SERVER;
  delete process.env.TEMPORAL_TEST_SERVER_PATH;
  process.env[name] = file;
  const failure = await createTimeSkippingEnv().then(
    () => null,
    (error: unknown) => error,
  );
  expect(failure).toBeInstanceOf(TemporalBinaryNotFoundError);
  expect((failure as Error).message).toContain(name);
});
