/**
 * Prebuilt workflow bundles: failures raised in workflow code are converted
 * inside the workflow sandbox by the failure converter the bundle was built with, so a worker with
 * the payload codec refuses a prebuilt bundle (TTC_WORKFLOW_BUNDLE) built without the codec's
 * failure converter (its workflow failures would reach Temporal in plaintext), before it connects.
 * `buildAgentWorkflowBundle({ encodeFailures: true })` builds one it accepts, sandbox-safe.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isCheckpointError } from '../../src/checkpoint/errors';
import { codecFromEnv } from '../../src/codec/codec-config';
import { codecDataConverter, ENCODED_FAILURE_CONVERTER_PATH } from '../../src/codec/data-converter';
import { ENCODED_FAILURE_CONVERTER_MARKER, failureConverter } from '../../src/codec/failure-converter';
import { assertWorkflowBundleEncodesFailures, buildAgentWorkflowBundle } from '../../src/codec/workflow-bundle';
import { resolveConfig } from '../../src/config';
import { createAgentWorker } from '../../src/worker';
import { ApplicationFailure, defaultPayloadConverter } from '@temporalio/common';

jest.setTimeout(120_000);

const quietLogger = { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} };

function caught(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  return null;
}

describe('prebuilt workflow bundles and the payload codec', () => {
  let dir: string;
  let withConverter: string;
  let withoutConverter: string;
  const codec = codecFromEnv({ TTC_PAYLOAD_CODEC_KEY: `hex:${randomBytes(32).toString('hex')}` })!;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-codec-bundle-'));
    [withConverter, withoutConverter] = await Promise.all([
      buildAgentWorkflowBundle({ encodeFailures: true, logger: quietLogger }),
      buildAgentWorkflowBundle({ encodeFailures: false, logger: quietLogger }),
    ]);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('items 7/8: the data converter of a codec loads the encoding failure converter by path (worker, client and bundler); none without a codec', () => {
    expect(codecDataConverter(codec)).toEqual({ payloadCodecs: [codec], failureConverterPath: ENCODED_FAILURE_CONVERTER_PATH });
    expect(codecDataConverter(null)).toBeUndefined();
    // What Temporal's loader requires from the path.
    const loaded = require(ENCODED_FAILURE_CONVERTER_PATH) as { failureConverter: unknown };
    expect(loaded.failureConverter).toBe(failureConverter);
  });

  it('items 7/8: the failure converter moves message and stack into a payload; ApplicationFailure details stay payloads (the codec encrypts both)', () => {
    const failure = failureConverter.errorToFailure(
      ApplicationFailure.create({ type: 'OUTCOME_UNKNOWN', message: 'ACME-SECRET-ERROR-TEXT', details: [{ reason: 'ACME-SECRET-DETAIL' }], cause: new Error('ACME-SECRET-CAUSE') }),
      defaultPayloadConverter,
    );
    expect([failure.message, failure.stackTrace]).toEqual(['Encoded failure', '']);
    expect([failure.cause?.message, failure.cause?.stackTrace]).toEqual(['Encoded failure', '']);
    expect(defaultPayloadConverter.fromPayload(failure.encodedAttributes!)).toMatchObject({ message: 'ACME-SECRET-ERROR-TEXT' });
    expect(failure.applicationFailureInfo?.details?.payloads).toHaveLength(1);
    const back = failureConverter.failureToError(failure, defaultPayloadConverter) as ApplicationFailure;
    expect([back.message, back.type, back.details, back.cause?.message]).toEqual([
      'ACME-SECRET-ERROR-TEXT',
      'OUTCOME_UNKNOWN',
      [{ reason: 'ACME-SECRET-DETAIL' }],
      'ACME-SECRET-CAUSE',
    ]);
  });

  it('items 7/8: buildAgentWorkflowBundle({ encodeFailures: true }) carries the converter and stays sandbox-safe; without it the bundle does not', () => {
    expect(withConverter).toContain(ENCODED_FAILURE_CONVERTER_MARKER);
    expect(withConverter).toContain('agentWorkflow');
    expect(withConverter).not.toMatch(/require\(["']node:crypto["']\)/);
    expect(withoutConverter).not.toContain(ENCODED_FAILURE_CONVERTER_MARKER);
    expect(caught(() => assertWorkflowBundleEncodesFailures('with.js', withConverter))).toBeNull();
  });

  it('items 7/8: a worker with the codec refuses a prebuilt bundle built without the converter: INVALID_CONFIG naming TTC_WORKFLOW_BUNDLE, before connecting', async () => {
    const file = join(dir, 'plain-bundle.js');
    writeFileSync(file, withoutConverter);
    // Nothing listens on port 1: a worker that got past the check would fail with TEMPORAL_UNAVAILABLE.
    const config = resolveConfig({}, { TEMPORAL_ADDRESS: '127.0.0.1:1', TTC_STORE_URL: `sqlite:${join(dir, 'checkpoints.db')}`, TTC_WORKFLOW_BUNDLE: file });
    const error = await createAgentWorker({ config, tools: [], models: [], payloadCodec: codec }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(isCheckpointError(error, 'INVALID_CONFIG')).toBe(true);
    expect((error as { details: unknown }).details).toEqual({ field: 'TTC_WORKFLOW_BUNDLE', reason: 'failure-converter-missing' });
    expect((error as Error).message).toMatch(/encodeFailures: true/);
  });

  it('items 7/8: an unreadable bundle file is INVALID_CONFIG naming TTC_WORKFLOW_BUNDLE', () => {
    const error = caught(() => assertWorkflowBundleEncodesFailures(join(dir, 'missing.js')));
    expect(isCheckpointError(error, 'INVALID_CONFIG')).toBe(true);
    expect((error as { details: unknown }).details).toEqual({ field: 'TTC_WORKFLOW_BUNDLE' });
  });
});
