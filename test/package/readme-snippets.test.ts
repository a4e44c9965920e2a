/**
 * The README's TypeScript blocks are files: each block a user runs or pastes is marked
 * `<!-- file: examples/readme/<name>.ts -->` and must be byte-identical to that file, which
 * test/package/pack.test.ts compiles and runs from the installed package under CommonJS and ESM.
 * A block that is only a fragment says so (`<!-- fragment: … -->`); an unmarked block fails.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const ROOT = resolve(__dirname, '../..');
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');

interface Block {
  readonly line: number;
  readonly marker: string | null;
  readonly body: string;
}

/** The ```ts / ```typescript blocks of `markdown`, with the HTML comment on the line above each. */
function typescriptBlocks(markdown: string): Block[] {
  const lines = markdown.split('\n');
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const fence = /^(`{3,})(\S*)\s*$/.exec(lines[i]!);
    if (fence === null) continue;
    const end = lines.findIndex((l, j) => j > i && l === fence[1]);
    if (end < 0) throw new Error(`README.md:${i + 1}: a code block that never closes`);
    if (['ts', 'typescript', 'tsx'].includes(fence[2]!)) {
      const above = /^<!-- (.*) -->$/.exec(lines[i - 1] ?? '');
      blocks.push({
        line: i + 1,
        marker: above?.[1] ?? null,
        body: lines
          .slice(i + 1, end)
          .map((l) => `${l}\n`)
          .join(''),
      });
    }
    i = end;
  }
  return blocks;
}

const blocks = typescriptBlocks(README);
const fileBlocks = blocks.filter((b) => b.marker?.startsWith('file: '));

test('every TypeScript block of the README is marked as a file of examples/readme or as a fragment', () => {
  expect(
    blocks
      .filter((b) => b.marker === null || !/^(file: examples\/readme\/[\w.-]+\.ts|fragment: .+)$/.test(b.marker))
      .map((b) => `README.md:${b.line} ${b.marker ?? '(no marker)'}`),
  ).toEqual([]);
});

test('each file block is byte-identical to its file', () => {
  expect(fileBlocks.length).toBeGreaterThan(0);
  for (const block of fileBlocks) {
    const path = block.marker!.slice('file: '.length);
    expect({ path, body: block.body }).toEqual({ path, body: readFileSync(join(ROOT, path), 'utf8') });
  }
});

test('every file of examples/readme is shown in the README exactly once', () => {
  const files = readdirSync(join(ROOT, 'examples/readme'))
    .filter((f) => f.endsWith('.ts'))
    .map((f) => `examples/readme/${f}`)
    .sort();
  expect(fileBlocks.map((b) => b.marker!.slice('file: '.length)).sort()).toEqual(files);
});
