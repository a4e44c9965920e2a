/**
 * docs/protocol.md#keys-and-digests. Expected digests were computed independently of this code,
 * with `printf '%s' '<canonical text>' | sha256sum`; crypto is never mocked.
 */
import { fingerprintInput, FINGERPRINT_PATTERN, idempotencyKey, intentDigest, type IdempotencyKeyParts, type Intent } from '../../../src/protocol';
import { caught } from './fixtures';

describe('fingerprintInput', () => {
  it.each([
    [{ a: 1, b: { x: 1, y: 2 } }, '{"a":1,"b":{"x":1,"y":2}}', 'ca7a7c6cde8062a260c631854aab1e42e3510b86667e76b77ee42941495bdf07'],
    [{ b: { y: 2, x: 1 }, a: 1 }, '{"a":1,"b":{"x":1,"y":2}}', 'ca7a7c6cde8062a260c631854aab1e42e3510b86667e76b77ee42941495bdf07'],
    [[{ q: 2, p: 1 }], '[{"p":1,"q":2}]', 'f79870d824bb22a7b86d77618916c22e7884be2c1e9fd7878908676295c9b629'],
    [[1, 2], '[1,2]', '49a64717d5d4cb19952e6eac2946415cf6879adacf9908e7d872332d32c6e684'],
    [[2, 1], '[2,1]', 'af1a1fc110b6094c48582b0ef83553cb7908d7a4365424eef28e76ef6c88d630'],
    [{}, '{}', '44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a'],
  ])('fingerprints %j as sha256 of %s', (input, _canonical, hex) => {
    expect(fingerprintInput(input)).toBe(`sha256:${hex}`);
  });

  it('is "sha256:" followed by 64 lowercase hex digits', () => {
    expect(fingerprintInput({ any: ['thing', 1.5, null] })).toMatch(FINGERPRINT_PATTERN);
    expect(FINGERPRINT_PATTERN.source).toBe('^sha256:[0-9a-f]{64}$');
  });

  it('refuses undefined input with NOT_JSON instead of hashing "undefined" or "null"', () => {
    expect(caught(() => fingerprintInput(undefined))).toMatchObject({ code: 'NOT_JSON', details: { field: 'input', path: '$', kind: 'undefined' } });
  });
});

describe('idempotencyKey', () => {
  const parts: IdempotencyKeyParts = { namespace: 'ns', runChainId: 'chain-1', workflowId: 'wf-1', callId: 'call-1', toolName: 'tool', toolRevision: '1' };

  it('is ttc2- plus sha256 of the canonical JSON array of its parts (fixed vector)', () => {
    // printf '%s' '["ttc/idempotency-key/2","ns","chain-1","wf-1","call-1","tool","1"]' | sha256sum
    expect(idempotencyKey(parts)).toBe('ttc2-9fd7e711b5003afd96e4c6f35d8d5ecc161fb28e461bdf54ed2928928e195913');
  });

  it('is the same on every call with the same parts (never random)', () => {
    const keys = Array.from({ length: 5 }, () => idempotencyKey({ ...parts }));

    expect(new Set(keys)).toEqual(new Set(['ttc2-9fd7e711b5003afd96e4c6f35d8d5ecc161fb28e461bdf54ed2928928e195913']));
    expect(keys[0]).toHaveLength(69);
  });

  it.each(['namespace', 'runChainId', 'workflowId', 'callId', 'toolName', 'toolRevision'] as const)('differs when only %s differs', (field) => {
    expect(idempotencyKey({ ...parts, [field]: `${parts[field]}x` })).not.toBe(idempotencyKey(parts));
  });

  it('does not confuse parts that concatenate to the same text', () => {
    expect(idempotencyKey({ ...parts, namespace: 'ns-', workflowId: '1' })).not.toBe(idempotencyKey({ ...parts, namespace: 'ns', workflowId: '-1' }));
  });

  it.each(['namespace', 'runChainId', 'workflowId', 'callId', 'toolName', 'toolRevision'] as const)('a missing %s is INVALID_ARGUMENT naming it', (field) => {
    const { [field]: _omitted, ...rest } = parts;

    expect(caught(() => idempotencyKey(rest as IdempotencyKeyParts))).toMatchObject({ code: 'INVALID_ARGUMENT', details: { field, actual: 'undefined' } });
  });

  it('a workflowId over 1,000 characters is INVALID_ARGUMENT', () => {
    expect(caught(() => idempotencyKey({ ...parts, workflowId: 'w'.repeat(1_001) }))).toMatchObject({
      code: 'INVALID_ARGUMENT',
      details: { field: 'workflowId', limit: 1_000, actual: 1_001 },
    });
  });
});

describe('intentDigest', () => {
  const intent: Intent = { toolName: 'tool', toolRevision: '1', args: { to: 'acct-9', amount: 5 } };

  it('is sha256 over tool, revision, canonical args and a null target (fixed vector)', () => {
    // printf '%s' '["ttc/intent/1","tool","1",{"amount":5,"to":"acct-9"},null]' | sha256sum
    expect(intentDigest(intent)).toBe('sha256:0fde96599759303d62399e527cc91c49790e53f0a1e8cb43fa934d15362d4378');
  });

  it('covers the target (fixed vector)', () => {
    // printf '%s' '["ttc/intent/1","tool","1",{"amount":5,"to":"acct-9"},{"account":"acct-9"}]' | sha256sum
    expect(intentDigest({ ...intent, target: { account: 'acct-9' } })).toBe('sha256:a703c096b70bc5228953b4972e90a53e610d3c6a2eadedfe79581e97eb011d57');
  });

  it('is the same for the same arguments in a different key order', () => {
    expect(intentDigest({ ...intent, args: { amount: 5, to: 'acct-9' } })).toBe(intentDigest(intent));
  });

  it.each([
    ['the arguments', { args: { to: 'acct-9', amount: 6 } }],
    ['the target', { target: 'acct-10' }],
    ['the tool revision', { toolRevision: '2' }],
    ['the tool name', { toolName: 'other_tool' }],
  ])('changes when %s change', (_label, change) => {
    expect(intentDigest({ ...intent, ...change })).not.toBe(intentDigest(intent));
  });

  it('treats an absent target as null', () => {
    expect(intentDigest({ ...intent, target: null })).toBe(intentDigest(intent));
  });

  it('refuses missing args with INVALID_ARGUMENT (use {} for none)', () => {
    expect(caught(() => intentDigest({ toolName: 'tool', toolRevision: '1', args: undefined }))).toMatchObject({ code: 'INVALID_ARGUMENT', details: { field: 'args' } });
  });

  it('refuses args with NaN with NOT_JSON', () => {
    expect(caught(() => intentDigest({ ...intent, args: { amount: Number.NaN } }))).toMatchObject({ code: 'NOT_JSON', details: { field: 'intent', kind: 'NaN' } });
  });

  it('refuses an empty tool name with INVALID_ARGUMENT', () => {
    expect(caught(() => intentDigest({ ...intent, toolName: '' }))).toMatchObject({ code: 'INVALID_ARGUMENT', details: { field: 'toolName' } });
  });
});
