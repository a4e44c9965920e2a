/** Parsers for command-line option values; each throws a typed error naming the option. */
import { CheckpointError } from '../checkpoint/errors';

/**
 * @throws {@link CheckpointError} INVALID_ARGUMENT unless `value` is a positive integer.
 */
export function positiveInteger(value: string, option: string): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 1) throw new CheckpointError('INVALID_ARGUMENT', `${option} must be a positive integer, got ${JSON.stringify(value)}`, { field: option });
  return n;
}
