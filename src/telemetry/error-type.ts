/**
 * The `error.type` of a failure (OpenTelemetry: a low-cardinality class of the error, `_OTHER`
 * when none fits). Never the message: messages may quote a tool's or provider's error text.
 */
import { isCheckpointError } from '../checkpoint/errors';
import { isolated } from './isolated';

/** An identifier-like type or name, at most 64 characters (anything else would make `error.type` unbounded). */
const IDENTIFIER = /^[A-Za-z][A-Za-z0-9_.-]{0,63}$/;

/**
 * The class of `error`: the CheckpointError code; else its `type` (an `ApplicationFailure`'s, a
 * tool error's) or its `name` (`CancelledFailure`, `TypeError`) when identifier-like; else `_OTHER`.
 */
export function errorType(error: unknown): string {
  // Isolated: an error whose fields throw when read (a proxy, a getter) is `_OTHER`, never a new error.
  return isolated('error.type', () => typeOf(error)) ?? '_OTHER';
}

function typeOf(error: unknown): string {
  if (isCheckpointError(error)) return error.code;
  if (typeof error === 'object' && error !== null) {
    const { type, name } = error as { type?: unknown; name?: unknown };
    if (typeof type === 'string' && IDENTIFIER.test(type)) return type;
    if (typeof name === 'string' && IDENTIFIER.test(name)) return name;
  }
  return '_OTHER';
}
