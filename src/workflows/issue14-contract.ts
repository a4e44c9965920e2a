/**
 * The issue-14 activity contract types the agent workflow uses (batch cancellation report,
 * compensateToolCall input and result, resolveToolCall input for a compensation), re-exported
 * from one place. Type-only: both source files hold types only and are sandbox-safe, but the
 * sandbox lint rule (eslint.config.js) allows only `activities/contract` and
 * `activities/error-classes` so far; once it also allows `activities/batch-items` and
 * `activities/compensation-contract`, import from them directly and delete this file.
 */
// eslint-disable-next-line no-restricted-imports -- type-only import of a types-only file (see above)
export type { BatchCancellationReport } from '../activities/batch-items';
// eslint-disable-next-line no-restricted-imports -- type-only import of a types-only file (see above)
export type { CompensateToolCallInput, CompensateToolCallResult, ResolveCompensationInput } from '../activities/compensation-contract';
