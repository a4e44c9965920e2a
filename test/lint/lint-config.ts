/**
 * The repository's ESLint config for tests that lint text as a new file of a folder. Typed
 * linting needs the file in the TypeScript program, and such a file is not on disk, so its block
 * (no-floating-promises, `parserOptions.project`) is left out; every other rule is the
 * repository's own. test/lint/floating-promises-lint.test.ts tests the typed block.
 */
import type { Linter } from 'eslint';

/** eslint.config.js without the blocks that need type information. */
export function untypedLintConfig(): Linter.Config[] {
  const config = require('../../eslint.config.js') as Linter.Config[];
  return config.filter((block) => (block.languageOptions?.parserOptions as { project?: unknown } | undefined)?.project === undefined);
}
