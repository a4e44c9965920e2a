/**
 * The public surface: every entry of package.json's `exports` map has its export names (values
 * and types) snapshotted here, so any growth or removal is a reviewed diff (`npx jest
 * test/package/exports.test.ts -u` to accept one). The root entry stays small: what adopting the
 * library takes (README, "Adopt it in your own worker"), everything else on a named subpath.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import ts from 'typescript';

const ROOT = resolve(__dirname, '../..');
const ROOT_ENTRY_LIMIT = 40;

interface PackageJson {
  readonly exports: Record<string, string | { readonly types: string; readonly default: string }>;
}

/** The source file behind each subpath of the `exports` map (dist/src/x.js → src/x.ts). */
function entrySources(): Record<string, string> {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as PackageJson;
  const out: Record<string, string> = {};
  for (const [subpath, target] of Object.entries(pkg.exports)) {
    if (typeof target === 'string') continue; // ./package.json
    out[subpath] = join(ROOT, target.default.replace(/^\.\/dist\//, '').replace(/\.js$/, '.ts'));
  }
  return out;
}

const sources = entrySources();
const program = ts.createProgram(Object.values(sources), { allowJs: true, strict: true, esModuleInterop: true, resolveJsonModule: true, noEmit: true });
const checker = program.getTypeChecker();

/** `name (value)` / `name (type)` for every export of `file`, sorted. */
function exportsOf(file: string): string[] {
  const source = program.getSourceFile(file);
  if (source === undefined) throw new Error(`no source file ${file}`);
  const moduleSymbol = checker.getSymbolAtLocation(source);
  if (moduleSymbol === undefined) throw new Error(`${file} is not a module`);
  return checker
    .getExportsOfModule(moduleSymbol)
    .map((symbol) => {
      const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
      return `${symbol.name} (${target.flags & ts.SymbolFlags.Value ? 'value' : 'type'})`;
    })
    .sort();
}

describe('the public surface', () => {
  test.each(Object.keys(sources))('the export list of %s is the reviewed one', (subpath) => {
    expect(exportsOf(sources[subpath]!)).toMatchSnapshot();
  });

  test(`the root entry exports at most ${ROOT_ENTRY_LIMIT} names`, () => {
    expect(exportsOf(sources['.']!).length).toBeLessThanOrEqual(ROOT_ENTRY_LIMIT);
  });

  test('no entry but a provider adapter loads a provider SDK, a web framework or a store driver when imported', () => {
    // A fresh Node process: jest's own module registry would not show what Node loads.
    const files = Object.entries(sources)
      .filter(([subpath]) => !subpath.startsWith('./model/'))
      .map(([, file]) => file);
    const script = `for (const f of ${JSON.stringify(files)}) require(f); process.stdout.write(JSON.stringify(Object.keys(require.cache)));`;
    const loaded = JSON.parse(execFileSync(process.execPath, ['--require', 'tsx/cjs', '-e', script], { cwd: ROOT, encoding: 'utf8' })) as string[];
    expect(loaded.length).toBeGreaterThan(files.length);
    // Path fragments under node_modules of the optional peers (`@fastify/` covers the console's plugins).
    const optional = ['@anthropic-ai/sdk/', 'openai/', 'fastify/', '@fastify/', 'pg/', 'better-sqlite3/', '@temporalio/testing/'];
    expect(loaded.filter((path) => optional.some((fragment) => path.includes(`/node_modules/${fragment}`)))).toEqual([]);
  });
});
