/**
 * How a tool declares the compensation of its applied effect (issue 14, a saga step: the seed's
 * "reserve inventory → charge payment → create shipment"; compensation is a semantically
 * opposite action, not a rollback): another tool of the same worker, or a function with its own
 * revision. Either way it runs fenced, under its own checkpoint and an idempotency key derived
 * from the original call's, with the same lookup / key dedupe / pause rules as any call.
 */
import { CheckpointError } from '../checkpoint/errors';
import type { JsonValue } from '../checkpoint/types';
import type { LookupResult, ToolContext, ToolSuccess } from './define-tool';

/** What a compensation is given: the original call's validated arguments and the stored result of its applied effect. */
export interface AppliedEffect {
  readonly args: JsonValue;
  readonly output: JsonValue;
  readonly receipt: JsonValue;
}

/** Compensation by another tool of the worker: `input` maps the applied effect to that tool's input (validated by its schema). */
export interface CompensationByTool {
  readonly tool: string;
  input(applied: AppliedEffect): JsonValue;
}

/** Compensation by a function with its own revision (part of its binding, key and intent, like a tool's). */
export interface CompensationByFunction {
  readonly revision: string;
  execute(applied: AppliedEffect, ctx: ToolContext): Promise<ToolSuccess>;
  /** Finds an earlier compensation by `ctx.idempotencyKey`. */
  lookup?(ctx: ToolContext): Promise<LookupResult>;
  readonly dedupesByKey?: boolean;
  /** Required with `dedupesByKey`, ms. */
  readonly keyRetentionMs?: number;
  /** @default the original tool's `callDeadlineMs` */
  readonly callDeadlineMs?: number;
}

/** A tool's `compensation`. */
export type ToolCompensation = CompensationByTool | CompensationByFunction;

/**
 * Checks a tool's `compensation` field and returns it frozen (undefined when absent).
 * @throws {@link CheckpointError} INVALID_ARGUMENT (`details.field` `compensation`) for a value that is neither form.
 */
export function normalizeCompensation(toolName: string, value: unknown): ToolCompensation | undefined {
  if (value === undefined) return undefined;
  const bad = (what: string): CheckpointError => new CheckpointError('INVALID_ARGUMENT', `tool ${toolName}: compensation ${what}`, { field: 'compensation' });
  if (typeof value !== 'object' || value === null) throw bad('must be { tool, input } or { revision, execute }');
  const v = value as Record<string, unknown>;
  if (typeof v.tool === 'string') {
    if (typeof v.input !== 'function') throw bad('by tool needs an input(applied) function');
    return Object.freeze({ tool: v.tool, input: v.input.bind(value) as CompensationByTool['input'] });
  }
  if (typeof v.revision === 'string' && typeof v.execute === 'function') return Object.freeze({ ...(value as CompensationByFunction) });
  throw bad('must be { tool, input } or { revision, execute }');
}
