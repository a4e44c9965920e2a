/**
 * Tool descriptions the real-model adapters send to the provider: a description and a JSON
 * Schema of the input object, per tool name.
 */
import { z } from 'zod/v4';
import { CheckpointError } from '../checkpoint/errors';
import type { JsonValue } from '../checkpoint/types';

/** What the model is told about one tool. `inputSchema` is a JSON Schema with `type: 'object'`. */
export interface ToolSpec {
  readonly description?: string;
  readonly inputSchema: { readonly type: 'object'; readonly [keyword: string]: JsonValue };
}

/** Tool name → {@link ToolSpec}. */
export type ToolSpecs = Readonly<Record<string, ToolSpec>>;

/**
 * Builds a {@link ToolSpec} from a zod object schema (the one `defineTool` validates with), via
 * zod's JSON Schema export; the `$schema` keyword is dropped.
 * @throws CheckpointError MISSING_TOOL_SPEC when the schema does not describe an object.
 */
export function toolSpecFromZod(schema: z.ZodType, description?: string): ToolSpec {
  const { $schema: _ignored, ...json } = z.toJSONSchema(schema) as Record<string, JsonValue>;
  if (json['type'] !== 'object') {
    throw new CheckpointError('MISSING_TOOL_SPEC', 'a tool input schema must describe a JSON object', { type: String(json['type']) });
  }
  const inputSchema = json as ToolSpec['inputSchema'];
  return description === undefined ? { inputSchema } : { description, inputSchema };
}

/**
 * The specs of the tools a turn offers, in the turn's order.
 * @throws CheckpointError MISSING_TOOL_SPEC naming the first tool without a spec.
 */
export function resolveToolSpecs(names: readonly string[], specs: ToolSpecs, adapter: string): Array<{ readonly name: string; readonly spec: ToolSpec }> {
  return names.map((name) => {
    const spec = Object.prototype.hasOwnProperty.call(specs, name) ? specs[name] : undefined;
    if (spec === undefined) {
      throw new CheckpointError('MISSING_TOOL_SPEC', `model adapter ${adapter} has no spec for tool ${name}`, { adapter, toolName: name });
    }
    return { name, spec };
  });
}
