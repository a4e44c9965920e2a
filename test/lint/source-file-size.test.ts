/**
 * No source file over 500 lines: a file that grows past it holds more than one job and is split
 * by job (docs/architecture.md). Every .ts and .js file under src (and packages/, when the
 * repository has one) is counted.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

const ROOT = join(__dirname, '..', '..');
const MAX_LINES = 500;

/** Every .ts and .js file under `dir`, recursively. */
function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((file) => /\.(ts|js)$/.test(file))
    .map((file) => join(dir, file));
}

/** Lines of `text` as an editor numbers them (a final newline ends the last line, it starts none). */
function lineCount(text: string): number {
  if (text.length === 0) return 0;
  return text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
}

describe('source file size', () => {
  const files = ['src', 'packages']
    .map((dir) => join(ROOT, dir))
    .filter((dir) => existsSync(dir))
    .flatMap(sourceFiles);

  it('finds the source files', () => {
    expect(files.length).toBeGreaterThan(100);
  });

  it(`no source file has more than ${MAX_LINES} lines`, () => {
    const over = files.map((file) => ({ file: relative(ROOT, file), lines: lineCount(readFileSync(file, 'utf8')) })).filter(({ lines }) => lines > MAX_LINES);
    expect(over).toEqual([]);
  });
});
