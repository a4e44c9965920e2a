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
   
  const mod = require(resolve(modulePath)) as { default?: unknown; tools?: unknown };
  const exported = mod.tools ?? mod.default;
  const tools = typeof exported === 'function' ? await (exported as () => unknown)() : exported;
  if (!Array.isArray(tools) || tools.length === 0) {
    throw new CheckpointError('INVALID_CONFIG', `--tools ${modulePath} must export \`tools\` or \`default\`: an array of defineTool(...) results or a function returning one`, { field: 'tools' });
  }
  return tools as ToolDefinition<any>[];
}
