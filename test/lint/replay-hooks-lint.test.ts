/**
 * Every test file that replays a history releases the SDK's replay promise hook after each test
 * (test/helpers/replay-hooks.ts): left installed, it slows every later suite of jest's one
 * in-band process several times over.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';

const TEST_ROOT = resolve(__dirname, '..');

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return testFiles(path);
    return entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

test('every test file that calls Worker.runReplayHistory/runReplayHistories runs afterEach(releaseReplayHooks)', () => {
  const replaying = testFiles(TEST_ROOT).filter((file) => /\.runReplayHistor(y|ies)\(/.test(readFileSync(file, 'utf8')));
  expect(replaying.length).toBeGreaterThan(0);
  const missing = replaying.filter((file) => !readFileSync(file, 'utf8').includes('afterEach(releaseReplayHooks)')).map((file) => relative(TEST_ROOT, file));
  expect(missing).toEqual([]);
});
