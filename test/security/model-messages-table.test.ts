/**
 * The table behind what the model reads (src/workflows/agent/model-errors.ts): every
 * failure the fence, the worker or the store produce reads as a fixed sentence that carries none
 * of the operators' text; a tool's own error result and the schema check of the model's own
 * arguments read as written.
 */
import { NOTHING_APPLIED_CODES } from '../../src/activities/contract/contract';
import { MAX_MODEL_ERROR_MESSAGE_LENGTH, MODEL_ERROR_FALLBACK, MODEL_ERROR_MESSAGES, modelErrorForFailure, modelErrorForResult } from '../../src/workflows/agent/model-errors';

const DETAIL =
  'STORE_UNAVAILABLE: PostgreSQL postgres://ledger_admin:***@db-7.internal:5432/ledger failed to insert: ECONNREFUSED; sqlite:/srv/acme/vault.db (known: admin_reset, transfer)';
const SECRETS = ['ledger_admin', 'db-7.internal', 'ledger', 'ECONNREFUSED', '/srv/acme', 'admin_reset'];

function expectNoSecret(message: string): void {
  for (const secret of SECRETS) expect({ secret, found: message.includes(secret) }).toEqual({ secret, found: false });
}

describe('the model-facing error table', () => {
  const fixed = NOTHING_APPLIED_CODES.filter((code) => code !== 'INVALID_TOOL_INPUT' && code !== 'TOOL_REJECTED');

  it.each(fixed)('a %s failure reads as its fixed sentence, never the detail', (code) => {
    const shown = modelErrorForFailure(code, DETAIL);
    expect(shown).toEqual({ type: code, message: `${code}: ${MODEL_ERROR_MESSAGES[code]}` });
    expectNoSecret(shown.message);
  });

  it.each(fixed)('a %s refusal the fence stored as the call result reads as its fixed sentence', (code) => {
    const shown = modelErrorForResult({ type: code, message: DETAIL });
    expect(shown).toEqual({ type: code, message: `${code}: ${MODEL_ERROR_MESSAGES[code]}` });
  });

  it('failure types the table does not name read as the fallback; a type that is not a code reads as UNCLASSIFIED', () => {
    expect(modelErrorForFailure('UNEXPECTED', DETAIL)).toEqual({ type: 'UNEXPECTED', message: `UNEXPECTED: ${MODEL_ERROR_FALLBACK}` });
    expect(modelErrorForFailure('TIMEOUT_START_TO_CLOSE', DETAIL).message).toBe(`TIMEOUT_START_TO_CLOSE: ${MODEL_ERROR_FALLBACK}`);
    for (const type of ['constructor', '__proto__', 'toString', 'x'.repeat(100), 'db-7.internal']) {
      expect(modelErrorForFailure(type, DETAIL)).toEqual({ type: 'UNCLASSIFIED', message: `UNCLASSIFIED: ${MODEL_ERROR_FALLBACK}` });
    }
  });

  it('results the fence could not store and exhausted transient retries read as fixed sentences (the tool ran, or nothing was applied)', () => {
    expect(modelErrorForResult({ type: 'PAYLOAD_TOO_LARGE', message: DETAIL })).toEqual({
      type: 'PAYLOAD_TOO_LARGE',
      message: 'PAYLOAD_TOO_LARGE: the tool ran, but its result is too large to deliver',
    });
    expect(modelErrorForResult({ type: 'NOT_JSON', message: DETAIL }).message).toMatch(/^NOT_JSON: the tool ran/);
    expect(modelErrorForResult({ type: 'TRANSIENT_EXHAUSTED', message: 'connect ECONNREFUSED 10.0.0.7:8443' })).toEqual({
      type: 'TRANSIENT_EXHAUSTED',
      message: `TRANSIENT_EXHAUSTED: ${MODEL_ERROR_MESSAGES.TRANSIENT_EXHAUSTED}`,
    });
  });

  it("a tool's own error result and the schema check of the model's arguments read as written (bounded)", () => {
    expect(modelErrorForResult({ type: 'BUSINESS_REJECTION', message: 'account A-9 is frozen' })).toEqual({ type: 'BUSINESS_REJECTION', message: 'account A-9 is frozen' });
    expect(modelErrorForResult({ type: 'PERMISSION_DENIED', message: 'not allowed' })).toEqual({ type: 'PERMISSION_DENIED', message: 'not allowed' });
    const schema = 'INVALID_TOOL_INPUT: input of transfer call "t1" does not match its schema: amount: expected number';
    expect(modelErrorForFailure('INVALID_TOOL_INPUT', schema)).toEqual({ type: 'INVALID_TOOL_INPUT', message: schema });
    const long = modelErrorForFailure('INVALID_TOOL_INPUT', 'x'.repeat(5_000)).message;
    expect(long).toHaveLength(MAX_MODEL_ERROR_MESSAGE_LENGTH);
    expect(long.endsWith('…')).toBe(true);
  });
});
