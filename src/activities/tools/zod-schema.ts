/**
 * The tool author's input schema: a zod 4 schema (zod 4, or `zod/v4` of zod 3.25.76+), which the
 * fence validates with and offers to models as JSON Schema. A zod 3 schema also has `safeParse`
 * but none of zod 4's internals, so it is told apart here and refused with a message that says
 * how to get a zod 4 one.
 */

/** Why a value is not a zod 4 schema, or undefined when it is one. */
export function zodSchemaRefusal(value: unknown): string | undefined {
  if (typeof (value as { safeParse?: unknown } | null)?.safeParse !== 'function') return 'must be a zod schema';
  if (typeof (value as { _zod?: unknown })._zod !== 'object')
    return "must be a zod 4 schema: with zod 3.25.76+, import { z } from 'zod/v4' (a zod 3 schema has no JSON Schema for the model)";
  return undefined;
}
