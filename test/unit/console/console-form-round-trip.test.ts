/**
 * Property: whatever a workflow id or a call id holds (controls, zero-width and bidi characters,
 * surrounding whitespace, quotes, `<`, `&`, text that looks like an escape, lone surrogates), every
 * form the console renders for the call sends back, through the real form parser of the listening
 * console, exactly that workflow id and call id (and the intent digest the page showed); a call
 * whose id a browser cannot send back exactly (a line break, NUL, a lone surrogate) gets no form.
 * Each run also lists the call's near neighbours (the id trimmed, padded, or with its invisible
 * characters spelled `\uXXXX`) as other calls, so a form that sends a neighbour's id fails here.
 */
import fc from 'fast-check';
import { terminalSafe } from '../../../src/cli/terminal-safe';
import { formCarriesExactly } from '../../../src/console/forms';
import { html } from '../../../src/console/html';
import type { ConsoleOperations, ShownCall } from '../../../src/console/operations';
import { startConsoleServer, type RunningConsole } from '../../../src/console/server';
import type { WaitingRun } from '../../../src/operator/waiting-runs';
import type { PendingCallView } from '../../../src/workflows/agent/types';
import { awaitingCall, waitingRun } from './fixtures';
import { cookiesOf, decodeAttribute, formsOf, logIn, send } from '../../helpers/console-http';

const TOKEN = 'test-console-token-0123456789';

/** Pieces ids are made of: the characters that are escaped for display, trimmed, or special in HTML and in forms. */
const PIECE = fc.oneof(
  fc.constantFrom(
    ' ',
    '\t',
    '\u00a0',
    '\u3000',
    '\u200b',
    '\u200c',
    '\u200d',
    '\u2060',
    '\ufeff',
    '\u202e',
    '\u202a',
    '\u2066',
    '\u061c',
    '\u200f',
    '\u2028',
    '\u0085',
    '\u009b',
    '\u001b',
    '\u007f',
    '\u0001',
    '\u000c',
    '\u000b',
  ),
  fc.constantFrom('\r', '\n', '\r\n', '\u0000', '\ud800', '\udfff'),
  fc.constantFrom('"', "'", '<', '>', '&', '&amp;', '&#39;', '&quot', '\\u200b', '\\', '=', '%', '%20', '+', '`', '/', '😀', 'pay', 'wf-1', 'c1'),
  fc.string({ unit: 'binary', maxLength: 3 }),
  fc.string({ unit: 'grapheme-ascii', maxLength: 6 }),
);
const ID = fc
  .array(PIECE, { minLength: 1, maxLength: 8 })
  .map((pieces) => pieces.join(''))
  .filter((id) => id.length > 0);

/** The call's near neighbours that are other ids: what a lossy form would send instead. */
function neighbours(id: string, taken: readonly string[]): string[] {
  return [...new Set([id.trim(), `${id} `, ` ${id}`, terminalSafe(id), id.replace(/[\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]/g, '')])].filter(
    (n) => n !== '' && !taken.includes(n),
  );
}

describe('the console sends back exactly the ids the page showed (property)', () => {
  let server: RunningConsole;
  let host: string;
  let runs: WaitingRun[] = [];
  const sent: Array<[string, string, unknown, ShownCall?]> = [];
  const operations: ConsoleOperations = {
    listWaitingRuns: async () => runs,
    approveCall: async (workflowId, request) => {
      sent.push(['approve', workflowId, request]);
      return { callId: request.callId, decision: 'approved', decidedAt: '2030-01-01T00:01:00.000Z', approvalExpiresAt: '2030-01-01T00:15:00.000Z' };
    },
    rejectCall: async (workflowId, request, shown) => {
      sent.push(['reject', workflowId, request, shown]);
      return { callId: request.callId, decision: 'rejected', decidedAt: '2030-01-01T00:01:00.000Z', approvalExpiresAt: '2030-01-01T00:15:00.000Z' };
    },
    resolveCall: async (workflowId, request, shown) => {
      sent.push(['resolve', workflowId, request, shown]);
      return { callId: request.callId, pauseId: request.pauseId, resolution: request.resolution, status: 'resolved-absent', retryCallId: null };
    },
  };

  beforeAll(async () => {
    server = await startConsoleServer({ operations, token: TOKEN, port: 0, namespace: 'default', nowMs: () => Date.parse('2030-01-01T00:00:00.000Z') });
    host = new URL(server.url).host;
  });
  afterAll(() => server.close());

  const port = () => Number(new URL(server.url).port);

  it('a value in a quoted attribute parses back to exactly itself; in element content it is shown with its invisible characters spelled out', () => {
    fc.assert(
      fc.property(ID, (id) => {
        const markup = html`<input type="hidden" name="callId" value="${id}"><code>${id}</code><span class="a ${id} b" data-x='${id}'>`.text;
        const [, attribute, content, inClass, inSingle] =
          /^<input type="hidden" name="callId" value="([^"]*)"><code>([^<]*)<\/code><span class="a ([^"]*) b" data-x='([^']*)'>$/.exec(markup) ?? [];
        expect([decodeAttribute(attribute!), decodeAttribute(inClass!), decodeAttribute(inSingle!)]).toEqual([id, id, id]);
        expect(decodeAttribute(content!)).toBe(terminalSafe(id));
      }),
      { numRuns: 2_000 },
    );
  });

  it('every form of a call sends back exactly its workflow id, call id, pause id and intent digest, whatever they hold; a call whose id no form can carry gets none', async () => {
    const tokenCookie = await logIn(port(), host, TOKEN);
    let cookie = tokenCookie;
    await fc.assert(
      fc.asyncProperty(ID, ID, ID, async (workflowId, awaitingId, pausedId) => {
        fc.pre(awaitingId !== pausedId);
        const ids = [awaitingId, ...neighbours(awaitingId, [awaitingId, pausedId]), pausedId];
        const calls: PendingCallView[] = ids.map((callId, i) =>
          callId === pausedId
            ? awaitingCall({ callId, modelCallId: callId, status: 'paused', approvalExpiresAt: null, intentDigest: `sha256:${i}`, errorType: 'OUTCOME_UNKNOWN' })
            : awaitingCall({ callId, modelCallId: callId, intentDigest: `sha256:${i}` }),
        );
        const run = waitingRun(calls, {
          paused: { pauseId: `${pausedId}#1`, callId: pausedId, toolName: 'transfer', errorType: 'OUTCOME_UNKNOWN', reason: 'timed out', pausedAt: '2030-01-01T00:00:00.000Z' },
        } as never);
        runs = [{ ...run, workflowId } as WaitingRun];
        const list = await send(port(), 'GET', '/', { host, cookie });
        expect(list.statusCode).toBe(200);
        if (list.setCookies.length > 0) cookie = `${tokenCookie}; ${cookiesOf(list)}`;

        sent.length = 0;
        const posted: number[] = [];
        for (const form of formsOf(list.body)) {
          const extra: Record<string, string> =
            form.action === '/resolve' ? { resolution: 'absent', reason: 'not in the ledger' } : form.action === '/reject' ? { reason: 'no' } : {};
          const body = new URLSearchParams({ ...form.fields, ...extra }).toString();
          posted.push((await send(port(), 'POST', form.action, { host, origin: `http://${host}`, cookie, 'content-type': 'application/x-www-form-urlencoded' }, body)).statusCode);
        }

        const expected = calls
          .filter((c) => formCarriesExactly(workflowId) && formCarriesExactly(c.callId))
          .flatMap((c): Array<[string, string, unknown, ShownCall?]> =>
            c.status === 'paused'
              ? [['resolve', workflowId, { callId: c.callId, pauseId: `${c.callId}#1`, resolution: 'absent', reason: 'not in the ledger' }, { intentDigest: c.intentDigest }]]
              : [
                  ['approve', workflowId, { callId: c.callId, intentDigest: c.intentDigest, stateVersion: 7 }],
                  ['reject', workflowId, { callId: c.callId, reason: 'no' }, { intentDigest: c.intentDigest }],
                ],
          );
        expect(posted.every((code) => code === 200)).toBe(true);
        expect(sent).toEqual(expected);
      }),
      { numRuns: 150 },
    );
  });
});
