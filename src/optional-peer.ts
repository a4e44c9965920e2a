/**
 * Optional peer dependencies: the store drivers (`better-sqlite3`, `pg`), the model SDKs
 * (`@anthropic-ai/sdk`, `openai`) and the console's web framework (`fastify` and its plugins).
 * A project installs the ones it uses; whatever needs one checks for it first, so a missing
 * package is a configuration error that names what to install, never a retryable outage.
 */
import { CheckpointError } from './checkpoint/errors';

/**
 * Throws unless every package in `packages` can be loaded from this package's location. An entry
 * is a package name, or `name@range` when the install line must pin a range (the range is only
 * printed, never checked).
 *
 * @param neededFor what needs them, for the message ("the SQLite store", "`ttc console`").
 * @throws {@link CheckpointError} INVALID_CONFIG naming the `npm install` line (`details.packages`).
 */
export function assertPeersInstalled(packages: readonly string[], neededFor: string): void {
  const missing = packages.filter((spec) => {
    const at = spec.lastIndexOf('@');
    try {
      require.resolve(at > 0 ? spec.slice(0, at) : spec);
      return false;
    } catch {
      return true;
    }
  });
  if (missing.length > 0) {
    throw new CheckpointError('INVALID_CONFIG', `${neededFor} needs ${missing.join(', ')}, not installed: run \`npm install ${missing.join(' ')}\` in your project`, {
      field: 'dependencies',
      packages: missing,
    });
  }
}
