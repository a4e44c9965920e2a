/**
 * Loads the tools a worker runs from a module: its `default` or `tools` export, either an
 * array of tool definitions or a function returning one (it may read the environment).
 */
import { resolve } from 'node:path';
import { CheckpointError } from '../checkpoint/errors';
import type { ToolDefinition } from '../activities/define-tool';

/** The demo tools, used when no `--tools` module is given. */
export const DEFAULT_TOOLS_MODULE = resolve(__dirname, '../../examples/demo-tools');

/**
 * @param modulePath a path relative to the working directory, or absolute.
 * @throws {@link CheckpointError} INVALID_CONFIG when the module exports no tools.
 */
export async function loadTools(modulePath: string = DEFAULT_TOOLS_MODULE): Promise<ToolDefinition<any>[]> {
  let mod: { default?: unknown; tools?: unknown };
  try {
    mod = require(resolve(modulePath)) as typeof mod;
  } catch (error) {
    throw new CheckpointError('INVALID_CONFIG', `--tools ${modulePath} cannot be loaded: ${(error as Error).message.split('\n')[0]}`, { field: 'tools' }, { cause: error });
  }
  const exported = mod.tools ?? mod.default;
  const tools = typeof exported === 'function' ? await (exported as () => unknown)() : exported;
  if (!Array.isArray(tools)) {
    throw new CheckpointError('INVALID_CONFIG', `--tools ${modulePath} must export \`tools\` or \`default\`: an array of defineTool(...) results or a function returning one`, { field: 'tools' });
  }
  if (tools.length === 0) throw new CheckpointError('INVALID_CONFIG', `--tools ${modulePath} exports no tools (an empty array)`, { field: 'tools' });
  tools.forEach((tool: unknown, i: number) => {
    const t = tool as Partial<ToolDefinition<unknown>> | null;
    if (typeof t?.execute !== 'function' || typeof (t.input as { safeParse?: unknown } | undefined)?.safeParse !== 'function') {
      throw new CheckpointError('INVALID_CONFIG', `--tools ${modulePath}: tool ${i} (${JSON.stringify(t?.name ?? null)}) is not a defineTool(...) result (it needs a zod \`input\` schema and an \`execute\` function)`, { field: 'tools' });
    }
  });
  return tools as ToolDefinition<any>[];
}
