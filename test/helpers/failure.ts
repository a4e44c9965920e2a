/** Runs `run` and returns the CheckpointError it throws (sync or async); any other outcome fails the test. */
import { isCheckpointError, type CheckpointError } from '../../src/checkpoint/errors';

export async function failure(run: () => Promise<unknown> | unknown): Promise<CheckpointError> {
  try {
    await run();
  } catch (error) {
    if (isCheckpointError(error)) return error;
    throw error;
  }
  throw new Error('expected a CheckpointError');
}
