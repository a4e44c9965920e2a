/**
 * Adversarial (envconfig, with the rule that no message shows a secret): no configuration message
 * carries an API key. The TOML parser quotes the offending line in its error; a malformed `api_key`
 * line must not reach the INVALID_CONFIG message or its cause chain.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveTemporalConnection } from '../../src/temporal-env-config';

const SECRET = 'sk-live-7f3a9c2e1b5d';

/** Every message in `error`'s cause chain, joined. */
function allText(error: unknown): string {
  const parts: string[] = [];
  for (
    let e = error as { message?: unknown; cause?: unknown; stack?: unknown } | undefined, depth = 0;
    e !== undefined && e !== null && depth < 10;
    e = e.cause as typeof e, depth += 1
  ) {
    parts.push(String(e.message), String(e.stack));
  }
  return parts.join('\n');
}

describe('envconfig errors never carry the API key', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-attack-env-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const malformed: Record<string, string> = {
    unquoted: `[profile.default]\naddress = "localhost:7233"\napi_key = ${SECRET}\n`,
    unterminated: `[profile.default]\naddress = "localhost:7233"\napi_key = "${SECRET}\n`,
    duplicated: `[profile.default]\napi_key = "${SECRET}"\napi_key = "${SECRET}"\n`,
  };

  it.each(Object.keys(malformed))('a TOML profile with a %s api_key line is refused as INVALID_CONFIG naming the variable and the line, without the key', (name) => {
    const file = join(dir, `${name}.toml`);
    writeFileSync(file, malformed[name]!);
    let caught: unknown;
    try {
      resolveTemporalConnection({}, { TEMPORAL_CONFIG_FILE: file });
    } catch (error) {
      caught = error;
    }
    expect(caught).toMatchObject({ code: 'INVALID_CONFIG', details: { field: 'TEMPORAL_CONFIG_FILE' } });
    expect((caught as Error).message).toMatch(/line \d+/);
    expect(allText(caught)).not.toContain(SECRET);
    expect(allText(caught)).not.toContain(SECRET.slice(0, 10));
  });
});
