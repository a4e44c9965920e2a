/**
 * `npm pack` of this checkout, once per content: the package tests each install the tarball, and
 * packing (a full `tsc` build through `prepack`) takes about 20 s. The tarball is kept under the
 * system temp folder, named by a SHA-256 over every file the build reads (src, examples,
 * README.md, LICENSE, CHANGELOG.md, package.json, the tsconfig files, scripts): a change to any of
 * them packs again.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const ROOT = resolve(__dirname, '../..');
const INPUTS = ['src', 'examples', 'scripts', 'README.md', 'LICENSE', 'CHANGELOG.md', 'package.json', 'tsconfig.json', 'tsconfig.build.json'];

/** SHA-256 (hex) over the paths and contents of the build's inputs, tracked and untracked (not ignored). */
async function buildInputsDigest(): Promise<string> {
  const { stdout } = await run('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard', '--', ...INPUTS], { cwd: ROOT, maxBuffer: 64 << 20 });
  const hash = createHash('sha256');
  for (const file of [...new Set(stdout.split('\0').filter(Boolean))].sort()) {
    const path = join(ROOT, file);
    hash
      .update(file)
      .update('\0')
      .update(existsSync(path) ? readFileSync(path) : 'deleted')
      .update('\0');
  }
  return hash.digest('hex');
}

/**
 * Copies this checkout's packed tarball into `destination` and returns its file name
 * (`temporal-tool-checkpoint-<version>.tgz`), packing only when no tarball of the same inputs is cached.
 */
export async function packInto(destination: string): Promise<string> {
  const cache = join(tmpdir(), 'ttc-packed', await buildInputsDigest());
  if (!existsSync(cache)) {
    const staging = mkdtempSync(join(tmpdir(), 'ttc-packing-'));
    await run('npm', ['pack', '--pack-destination', staging], { cwd: ROOT, maxBuffer: 64 << 20 });
    mkdirSync(join(tmpdir(), 'ttc-packed'), { recursive: true });
    try {
      renameSync(staging, cache);
    } catch {
      rmSync(staging, { recursive: true, force: true }); // another run cached the same inputs first
    }
  }
  const packed = readdirSync(cache).find((f) => f.endsWith('.tgz'));
  if (packed === undefined) throw new Error(`npm pack wrote no tarball into ${cache}`);
  copyFileSync(join(cache, packed), join(destination, packed));
  return packed;
}
