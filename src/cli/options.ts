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
 * A duration such as `500ms`, `10m` or `24h`, in ms.
 *
 * @throws {@link CheckpointError} INVALID_ARGUMENT unless it is a positive duration.
 */
export function durationMs(value: string, option: string): number {
  let ms = Number.NaN;
  try {
    ms = /^\d+$/.test(value) ? Number(value) : msToNumber(value as never);
  } catch {
    // reported below
  }
  if (!Number.isFinite(ms) || ms <= 0) throw new CheckpointError('INVALID_ARGUMENT', `${option} must be a positive duration such as 30s, 10m or 24h, got ${JSON.stringify(value)}`, { field: option });
  return ms;
}
