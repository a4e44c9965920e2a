/**
 * The activity input as the fence reads it: a strict zod schema over the
 * input's own properties only, and a result in which every field is an own property (absent
 * optional fields are own and `undefined`). So nothing the fence reads from an activity input
 * (`runChainId`, `expectedIntentDigest`, `approvalExpiresAt`, `intentGeneration(s)`, …) can come
 * from a polluted `Object.prototype`, and a misspelt field is refused instead of ignored.
 * The model's tool input (`input`) is checked separately (`assertToolInput` in `prepareCall`).
 */
import { z } from 'zod/v4';
import { isApprovalExpiryText, MAX_GRANT_LENGTH } from '../../checkpoint/approval';
import { CheckpointError } from '../../checkpoint/errors';
import type { JsonValue } from '../../checkpoint/types';
import type { FencedToolInput, ResolveToolCallInput, ToolOutcome } from '../contract/contract';
import type { CompensateToolCallInput, ResolveCompensationInput } from '../contract/compensation-contract';

const fencedToolInputShape = {
  tenant: z.string(),
  callId: z.string(),
  runChainId: z.string().optional(),
  toolName: z.string(),
  input: z.unknown(),
  expectedIntentDigest: z.string().optional(),
  approvedBy: z.string().min(1).max(256).optional(),
  // A signed approval grant (docs/protocol.md#approval-grants), verified by the fence when the worker holds grant keys.
  approvalGrant: z.string().min(1).max(MAX_GRANT_LENGTH).optional(),
  // An expiry that does not parse would never pass (Date.parse gives NaN): refused, fail closed.
  approvalExpiresAt: z.string().refine(isApprovalExpiryText, 'must be an ISO-8601 UTC timestamp like 2026-01-31T12:00:00.000Z').optional(),
  intentGeneration: z.number().optional(),
  // Keys are intent digests; the pattern keeps `__proto__` and friends out of the built record.
  intentGenerations: z.record(z.string().regex(/^sha256:[0-9a-f]{64}$/), z.number()).optional(),
  // Reruns of a businessKey tool's call: the earlier call ids of the run a person proved absent.
  provenAbsentCallIds: z.array(z.string().min(1).max(256)).max(100).optional(),
  // Agent runs: the occurrence scope of the call's intent, the live calls other runs made (16 hex digits each), the reset lineage's
  // earlier runs, where the scheduling run addresses its own calls, the segments whose start refuses the call, and the run that built it.
  occurrences: z
    .strictObject({
      scope: z.string().min(1).max(256),
      from: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional(),
      liveCalls: z
        .string()
        .max(16 * 100_000)
        .regex(/^(?:[0-9a-f]{16})*$/)
        .optional(),
      liveRuns: z.array(z.string().min(1).max(256)).max(1_000).optional(),
      earlierRuns: z.array(z.string().min(1).max(256)).max(10_000).optional(),
      ownCallsIn: z.string().min(1).max(256).optional(),
      refusedIfStarted: z.array(z.string().min(1).max(256)).max(100).optional(),
      notRun: z
        .string()
        .max(16 * 100_000)
        .regex(/^(?:[0-9a-f]{16})*$/)
        .optional(),
      builtInRun: z.string().min(1).max(256).optional(),
    })
    .optional(),
  // Claim check: outputs over inlineMaxBytes (UTF-8 bytes of their JSON) are returned by reference.
  resultByReference: z.strictObject({ inlineMaxBytes: z.number().int().positive().max(Number.MAX_SAFE_INTEGER) }).optional(),
  role: z.literal('compensation').optional(),
};

/** Zod schema of {@link FencedToolInput} (strict: unknown fields are refused). Parse {@link ownProperties} of a value, never the value. */
export const fencedToolInputSchema = z.strictObject(fencedToolInputShape);

/** A compensation's generation (`compensateToolCall`, `resolveToolCall` of a compensation): 1 to 1,000,000. */
const compensationGenerationSchema = z.number().int().min(1).max(1_000_000).optional();

/**
 * Zod schema of {@link ResolveToolCallInput} (strict), with the compensation fields of
 * {@link ResolveCompensationInput}. `resolution` and `result` are checked where they are used.
 */
export const resolveToolCallInputSchema = z.strictObject({
  ...fencedToolInputShape,
  resolution: z.string(),
  result: z.unknown().optional(),
  reason: z.string(),
  decidedBy: z.string().min(1).max(256).optional(),
  item: z.strictObject({ key: z.string().min(1).max(256), generation: z.number().int().min(1).max(1_000_000) }).optional(),
  compensationGeneration: compensationGenerationSchema,
});

/** Zod schema of {@link CompensateToolCallInput} (strict; `role` must be `compensation`). */
export const compensateToolCallInputSchema = z.strictObject({
  ...fencedToolInputShape,
  role: z.literal('compensation'),
  compensationGeneration: compensationGenerationSchema,
});

// The schemas name exactly the contract's fields: adding a field to the contract without the schema fails to compile.
type SameKeys<A, B> = [Exclude<keyof A, keyof B>, Exclude<keyof B, keyof A>] extends [never, never] ? true : false;
const fencedKeysMatch: SameKeys<z.infer<typeof fencedToolInputSchema>, FencedToolInput> = true;
const resolveKeysMatch: SameKeys<z.infer<typeof resolveToolCallInputSchema>, ResolveCompensationInput> = true;
const compensateKeysMatch: SameKeys<z.infer<typeof compensateToolCallInputSchema>, CompensateToolCallInput> = true;
void fencedKeysMatch;
void resolveKeysMatch;
void compensateKeysMatch;

/**
 * A null-prototype copy of `value`'s own enumerable properties (`{}` for a non-object): what
 * zod parses, since zod reads absent keys through the prototype chain. Also what the failure
 * path of `runFencedTool` locates a call by when the input does not parse.
 */
export function ownProperties(value: unknown): Record<string, unknown> {
  const copy = Object.create(null) as Record<string, unknown>;
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    for (const [key, v] of Object.entries(value)) copy[key] = v;
  }
  return copy;
}

function parseStrict<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new CheckpointError('INVALID_ARGUMENT', `${what} must be an object`, { field: '$' });
  }
  const parsed = schema.safeParse(ownProperties(value));
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const field = issue.path.map(String).join('.') || ((issue as { keys?: string[] }).keys ?? []).join(', ') || '$';
    throw new CheckpointError('INVALID_ARGUMENT', `${what}: ${field}: ${issue.message}`, { field });
  }
  return parsed.data;
}

/**
 * Reads a `runFencedTool` / `describeToolCall` input strictly.
 *
 * @returns a frozen {@link FencedToolInput} with every field an own property.
 * @throws {@link CheckpointError} INVALID_ARGUMENT naming the field: not an object, a field of
 *   the wrong type, an unknown field, an `intentGenerations` key that is not an intent digest,
 *   an `approvalExpiresAt` that is not an ISO-8601 UTC timestamp.
 */
export function readFencedToolInput(value: unknown): FencedToolInput {
  const d = parseStrict(fencedToolInputSchema, value, 'tool activity input');
  return Object.freeze(fencedFields(d));
}

/**
 * Reads a `resolveToolCall` input strictly, as {@link readFencedToolInput} does: a call's, an
 * item's (`item`) or a compensation's (`role: 'compensation'`, `compensationGeneration`).
 *
 * @throws {@link CheckpointError} INVALID_ARGUMENT naming the field; also for
 *   `compensationGeneration` without `role: 'compensation'`.
 */
export function readResolveToolCallInput(value: unknown): ResolveToolCallInput | ResolveCompensationInput {
  const d = parseStrict(resolveToolCallInputSchema, value, 'resolveToolCall input');
  const item = Object.hasOwn(d, 'item') ? d.item : undefined;
  const generation = Object.hasOwn(d, 'compensationGeneration') ? d.compensationGeneration : undefined;
  if (generation !== undefined && d.role !== 'compensation') {
    throw new CheckpointError('INVALID_ARGUMENT', 'resolveToolCall input: compensationGeneration is only for role compensation', { field: 'compensationGeneration' });
  }
  return Object.freeze({
    ...fencedFields(d),
    resolution: d.resolution as ResolveToolCallInput['resolution'],
    result: (Object.hasOwn(d, 'result') ? d.result : undefined) as ToolOutcome,
    reason: d.reason,
    decidedBy: Object.hasOwn(d, 'decidedBy') ? d.decidedBy : undefined,
    item: item === undefined ? undefined : Object.freeze({ key: item.key, generation: item.generation }),
    compensationGeneration: generation,
  });
}

/**
 * Reads a `compensateToolCall` input strictly, as {@link readFencedToolInput} does.
 *
 * @returns a frozen {@link CompensateToolCallInput} with every field an own property.
 * @throws {@link CheckpointError} INVALID_ARGUMENT naming the field (`role` when it is not `compensation`).
 */
export function readCompensateToolCallInput(value: unknown): CompensateToolCallInput {
  const d = parseStrict(compensateToolCallInputSchema, value, 'compensateToolCall input');
  return Object.freeze({
    ...fencedFields(d),
    role: 'compensation' as const,
    compensationGeneration: Object.hasOwn(d, 'compensationGeneration') ? d.compensationGeneration : undefined,
  });
}

function fencedFields(d: z.infer<typeof fencedToolInputSchema>): FencedToolInput {
  // zod leaves absent optional fields out of its output: read them as own properties only.
  const own = <K extends keyof typeof d>(key: K): (typeof d)[K] | undefined => (Object.hasOwn(d, key) ? d[key] : undefined);
  const generations = own('intentGenerations');
  const byReference = own('resultByReference');
  const provenAbsent = own('provenAbsentCallIds');
  const occurrences = own('occurrences');
  return {
    tenant: d.tenant,
    callId: d.callId,
    runChainId: own('runChainId'),
    toolName: d.toolName,
    input: own('input') as JsonValue,
    expectedIntentDigest: own('expectedIntentDigest'),
    approvedBy: own('approvedBy'),
    approvalGrant: own('approvalGrant'),
    approvalExpiresAt: own('approvalExpiresAt'),
    intentGeneration: own('intentGeneration'),
    intentGenerations: generations === undefined ? undefined : Object.freeze({ ...generations }),
    provenAbsentCallIds: provenAbsent === undefined ? undefined : Object.freeze([...provenAbsent]),
    occurrences: occurrences === undefined ? undefined : occurrencesOf(occurrences),
    resultByReference: byReference === undefined ? undefined : Object.freeze({ inlineMaxBytes: byReference.inlineMaxBytes }),
    role: own('role'),
  };
}

/** The occurrence scope of an input, every field own (see the module comment). */
function occurrencesOf(d: {
  scope: string;
  from?: number;
  liveCalls?: string;
  liveRuns?: string[];
  earlierRuns?: string[];
  ownCallsIn?: string;
  refusedIfStarted?: string[];
  notRun?: string;
  builtInRun?: string;
}): NonNullable<FencedToolInput['occurrences']> {
  const own = <K extends keyof typeof d>(key: K): (typeof d)[K] | undefined => (Object.hasOwn(d, key) ? d[key] : undefined);
  const list = (key: 'liveRuns' | 'earlierRuns' | 'refusedIfStarted'): readonly string[] | undefined => {
    const value = own(key);
    return value === undefined ? undefined : Object.freeze([...value]);
  };
  return Object.freeze({
    scope: d.scope,
    from: own('from'),
    liveCalls: own('liveCalls'),
    liveRuns: list('liveRuns'),
    earlierRuns: list('earlierRuns'),
    ownCallsIn: own('ownCallsIn'),
    refusedIfStarted: list('refusedIfStarted'),
    notRun: own('notRun'),
    builtInRun: own('builtInRun'),
  });
}
