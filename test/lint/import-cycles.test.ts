/**
 * No import cycles between source files, type-only imports included. `import-x/no-cycle` in
 * eslint.config.js ignores `import type`, so a cycle through shared types would pass lint; madge
 * here reads every import (value and type, and require() calls) of src (and packages/, when the repository has one)
 * and must find no cycle.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';

const madge = require('madge') as (paths: string[], config: object) => Promise<{ circular(): string[][] }>;

const ROOT = join(__dirname, '..', '..');

describe('import cycles', () => {
  jest.setTimeout(120_000);

  it('no source file reaches itself through its imports, type-only imports included', async () => {
    const roots = ['src', 'packages'].map((dir) => join(ROOT, dir)).filter((dir) => existsSync(dir));
    const graph = await madge(roots, {
      fileExtensions: ['ts', 'js'],
      tsConfig: join(ROOT, 'tsconfig.json'),
      // mixedImports: require() calls are edges too (a cycle through require() is still a cycle).
      detectiveOptions: { ts: { skipTypeImports: false, mixedImports: true }, es6: { skipTypeImports: false, mixedImports: true } },
    });
    expect(graph.circular()).toEqual([]);
  });
});
