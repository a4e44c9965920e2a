/**
 * Loads the tools a worker runs from a module: its `default` or `tools` export, either an
 * array of tool definitions or a function returning one (it may read the environment).
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { CheckpointError } from '../checkpoint/errors';
import type { ToolDefinition } from '../activities/tools/define-tool';

/** The demo tools, used when no `--tools` module is given. */
export const DEFAULT_TOOLS_MODULE = resolve(__dirname, '../../examples/demo-tools');

/**
 * @param modulePath a path relative to the working directory, or absolute.
 * @throws {@link CheckpointError} INVALID_CONFIG when the module cannot be loaded (a TypeScript file
 *   without a loader registered is named as such) or exports no tools.
 */
export async function loadTools(modulePath: string = DEFAULT_TOOLS_MODULE): Promise<ToolDefinition<any>[]> {
  let mod: { default?: unknown; tools?: unknown };
  // Node 20 loads no TypeScript: without a loader (tsx, ts-node) registered, say what to do instead of a syntax error.
  if (/\.[cm]?tsx?$/.test(modulePath) && existsSync(resolve(modulePath)) && require.extensions?.['.ts'] === undefined) {
    throw new CheckpointError(
      'INVALID_CONFIG',
      `--tools ${modulePath} is TypeScript, which Node does not load by itself: compile it (tsc) and pass the .js file, or run the command under a TypeScript loader (npx tsx ./node_modules/.bin/ttc …)`,
      { field: 'tools' },
    );
  }
  try {
    mod = require(resolve(modulePath)) as typeof mod;
  } catch (error) {
    throw new CheckpointError('INVALID_CONFIG', `--tools ${modulePath} cannot be loaded: ${(error as Error).message.split('\n')[0]}`, { field: 'tools' }, { cause: error });
  }
  const exported = mod.tools ?? mod.default;
  const tools = typeof exported === 'function' ? await (exported as () => unknown)() : exported;
  if (!Array.isArray(tools)) {
    throw new CheckpointError('INVALID_CONFIG', `--tools ${modulePath} must export \`tools\` or \`default\`: an array of defineTool(...) results or a function returning one`, {
      field: 'tools',
    });
  }
  if (tools.length === 0) throw new CheckpointError('INVALID_CONFIG', `--tools ${modulePath} exports no tools (an empty array)`, { field: 'tools' });
  tools.forEach((tool: unknown, i: number) => {
    const t = tool as Partial<ToolDefinition<unknown>> | null;
    if (typeof t?.execute !== 'function' || typeof (t.input as { safeParse?: unknown } | undefined)?.safeParse !== 'function') {
      throw new CheckpointError(
        'INVALID_CONFIG',
        `--tools ${modulePath}: tool ${i} (${JSON.stringify(t?.name ?? null)}) is not a defineTool(...) result (it needs a zod \`input\` schema and an \`execute\` function)`,
        { field: 'tools' },
      );
    }
  });
  return tools as ToolDefinition<any>[];
}
