// The run search attributes without a server: the client's registration check (asked once per
// client, any error is "not registered", a transient one is asked again), the `temporal` CLI lines
// for registering them, and the bound on TtcWaitingCalls (a value over the server's limit would
// fail the workflow task on every retry).
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { devServerSearchAttributeArgs, hasRunSearchAttributes, searchAttributeCreateCommands } from '../../../src/visibility/namespace-search-attributes';
import { MAX_WAITING_CALLS_BYTES, waitingCallsValue } from '../../../src/workflows/agent/search-attributes';

const { INDEXED_VALUE_TYPE_BOOL: BOOL, INDEXED_VALUE_TYPE_KEYWORD_LIST: KEYWORD_LIST, INDEXED_VALUE_TYPE_KEYWORD: KEYWORD } = temporal.api.enums.v1.IndexedValueType;

/** A gRPC error as @temporalio/client reports it (`isGrpcServiceError`). */
function grpcError(code: number, details: string): Error {
  return Object.assign(new Error(`${code} ${details}`), { code, details, metadata: {} });
}

/** A client whose operator service answers `listSearchAttributes` with each answer in turn. */
function fakeClient(...answers: (Record<string, number> | Error)[]) {
  const asked: string[] = [];
  const client = {
    options: { namespace: 'acme-prod' },
    connection: {
      withDeadline: <R>(_deadline: number, fn: () => Promise<R>) => fn(),
      operatorService: {
        async listSearchAttributes({ namespace }: { namespace: string }) {
          asked.push(namespace);
          const answer = answers[Math.min(asked.length - 1, answers.length - 1)]!;
          if (answer instanceof Error) throw answer;
          return { customAttributes: answer };
        },
      },
    },
  } as unknown as Client;
  return { client, asked };
}

describe('hasRunSearchAttributes: is the namespace ready for runs to carry them', () => {
  it('true when both are registered with their types; asked once per client, on its namespace', async () => {
    const { client, asked } = fakeClient({ TtcNeedsPerson: BOOL, TtcWaitingCalls: KEYWORD_LIST, Other: KEYWORD });
    expect([await hasRunSearchAttributes(client), await hasRunSearchAttributes(client)]).toEqual([true, true]);
    expect(asked).toEqual(['acme-prod']);
  });

  it.each([
    ['one is missing', { TtcNeedsPerson: BOOL }],
    ['one has another type', { TtcNeedsPerson: BOOL, TtcWaitingCalls: KEYWORD }],
    ['none is registered', {}],
  ])('false when %s', async (_why, registered) => {
    expect(await hasRunSearchAttributes(fakeClient(registered).client)).toBe(false);
  });

  it('an error the server will give again (UNIMPLEMENTED: the time-skipping test server) is "not registered", cached', async () => {
    const { client, asked } = fakeClient(grpcError(12, 'unknown service temporal.api.operatorservice.v1.OperatorService'), { TtcNeedsPerson: BOOL, TtcWaitingCalls: KEYWORD_LIST });
    expect([await hasRunSearchAttributes(client), await hasRunSearchAttributes(client)]).toEqual([false, false]);
    expect(asked).toHaveLength(1);
  });

  it('a transient error (UNAVAILABLE) is "not registered" this time and asked again next time', async () => {
    const { client, asked } = fakeClient(grpcError(14, 'connection refused'), { TtcNeedsPerson: BOOL, TtcWaitingCalls: KEYWORD_LIST });
    expect(await hasRunSearchAttributes(client)).toBe(false);
    expect([await hasRunSearchAttributes(client), await hasRunSearchAttributes(client)]).toEqual([true, true]);
    expect(asked).toHaveLength(2);
  });
});

describe('the temporal CLI lines that register them', () => {
  it('the dev server registers both at start', () => {
    expect(devServerSearchAttributeArgs()).toEqual(['--search-attribute', 'TtcNeedsPerson=Bool', '--search-attribute', 'TtcWaitingCalls=KeywordList']);
  });

  it('another server: one `temporal operator search-attribute create` per attribute, on the namespace', () => {
    expect(searchAttributeCreateCommands('acme-prod')).toEqual([
      'temporal operator search-attribute create --namespace acme-prod --name TtcNeedsPerson --type Bool',
      'temporal operator search-attribute create --namespace acme-prod --name TtcWaitingCalls --type KeywordList',
    ]);
  });
});

describe('waitingCallsValue: the TtcWaitingCalls value stays under the server limit', () => {
  it('keeps every id, in order, when they fit', () => {
    expect(waitingCallsValue(['toolu_1', 'call-é', 'r1~retry1'])).toEqual(['toolu_1', 'call-é', 'r1~retry1']);
  });

  it('leaves out the ids that do not fit (a 2,048-character id, ids past the bound); the JSON stays within MAX_WAITING_CALLS_BYTES', () => {
    const long = 'x'.repeat(2_048);
    const many = Array.from({ length: 200 }, (_, i) => `toolu_${String(i).padStart(3, '0')}`);
    const value = waitingCallsValue(['a', long, ...many]);
    expect(value[0]).toBe('a');
    expect(value).not.toContain(long);
    expect(value.slice(1)).toEqual(many.slice(0, value.length - 1));
    expect(value.length).toBeGreaterThan(50);
    const bytes = Buffer.byteLength(JSON.stringify(value), 'utf8');
    expect(bytes).toBeLessThanOrEqual(MAX_WAITING_CALLS_BYTES);
    expect(bytes + Buffer.byteLength(JSON.stringify(many[value.length - 1]), 'utf8') + 1).toBeGreaterThan(MAX_WAITING_CALLS_BYTES);
  });

  it('counts UTF-8 bytes, not characters', () => {
    const emoji = '😀'.repeat(200); // 800 UTF-8 bytes, 400 UTF-16 units
    expect(waitingCallsValue([emoji, emoji])).toEqual([emoji]);
  });
});
