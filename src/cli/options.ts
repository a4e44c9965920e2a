/** Parsers for command-line option values; each throws a typed error naming the option. */
import { msToNumber } from '@temporalio/common/lib/time';
import { CheckpointError } from '../checkpoint/errors';

/**
 * @throws {@link CheckpointError} INVALID_ARGUMENT unless `value` is a positive integer.
 */
export function positiveInteger(value: string, option: string): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 1) throw new CheckpointError('INVALID_ARGUMENT', `${option} must be a positive integer, got ${JSON.stringify(value)}`, { field: option });
  return n;
}

/**
 * @throws {@link CheckpointError} INVALID_ARGUMENT unless `value` is an integer ≥ 0 in decimal digits.
 */
export function nonNegativeInteger(value: string, option: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n))
    throw new CheckpointError('INVALID_ARGUMENT', `${option} must be a non-negative integer, got ${JSON.stringify(value)}`, { field: option });
  return n;
}

/**
 * A duration such as `500ms`, `10m` or `24h`, in ms.
 *
 * @throws {@link CheckpointError} INVALID_ARGUMENT unless it is a positive whole number of ms.
 */
export function durationMs(value: string, option: string): number {
  let ms = Number.NaN;
  try {
    ms = /^\d+$/.test(value) ? Number(value) : msToNumber(value as never);
  } catch {
    // reported below
  }
  // Whole milliseconds: the workflow's input validation refuses a fraction, but only once the run has started.
  if (!Number.isSafeInteger(ms) || ms <= 0)
    throw new CheckpointError('INVALID_ARGUMENT', `${option} must be a positive duration of whole milliseconds such as 30s, 10m or 24h, got ${JSON.stringify(value)}`, {
      field: option,
    });
  return ms;
}

/**
 * A comma-separated list of names such as `create_ticket,send_email` (whitespace around a name
 * ignored, a repeated name kept once).
 *
 * @throws {@link CheckpointError} INVALID_ARGUMENT (field `option`) when the list is empty or
 *   holds an empty name (`a,,b`, a trailing comma).
 */
export function nameList(value: string, option: string): string[] {
  const names = value.split(',').map((name) => name.trim());
  if (names.some((name) => name === ''))
    throw new CheckpointError('INVALID_ARGUMENT', `${option} must be a comma-separated list of names, got ${JSON.stringify(value)}`, { field: option });
  return [...new Set(names)];
}
