/**
 * The demo provider as a real process over real HTTP: idempotency-key semantics, effect
 * counting that survives restarts, fault injection and the client's error classification.
 */
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { isProviderError, parseRetryAfter, ProviderClient, ProviderRejectedError, ProviderTransientError, ProviderUnknownOutcomeError } from '../../examples/provider/client';
import { startProvider, type RunningProvider } from '../../examples/provider/start-provider';

const ticket = { title: 'Printer on fire', body: 'Third floor, again.', queue: 'facilities' };

let dir: string;
let provider: RunningProvider;
let client: ProviderClient;

/** The rejection of `promise`, failing the test if it resolves. */
async function failure(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected the call to fail');
}

/** A local port nobody listens on. */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'provider-test-'));
  provider = await startProvider({ dbFile: path.join(dir, 'provider.sqlite'), faults: true });
  client = provider.client;
});

afterAll(async () => {
  await provider?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

afterEach(async () => {
  await client?.clearFaults().catch(() => undefined);
});

describe('POST /tickets with Idempotency-Key', () => {
  it('applies the first request once and replays the same response for the same key and body', async () => {
    const first = await client.createTicket(ticket, { idempotencyKey: 'idem-create-1' });
    const second = await client.createTicket(ticket, { idempotencyKey: 'idem-create-1' });

    expect(first.replayed).toBe(false);
    expect(second.replayed).toBe(true);
    expect(second.ticketId).toBe(first.ticketId);
    expect(second.receipt).toBe(first.receipt);
    expect(second.createdAt).toBe(first.createdAt);

    const effects = await client.effects();
    expect(effects.byIdempotencyKey['idem-create-1']).toBe(1);
    expect(effects.duplicates.filter((d) => d.logicalKey === 'idem-create-1')).toEqual([]);
  });

  it('answers 422 problem+json when the key is reused with another body, and applies nothing', async () => {
    await client.createTicket(ticket, { idempotencyKey: 'idem-reuse' });
    const before = await client.effects();

    const error = await failure(client.createTicket({ ...ticket, title: 'Something else' }, { idempotencyKey: 'idem-reuse' }));

    expect(error).toBeInstanceOf(ProviderRejectedError);
    expect(isProviderError(error, 'rejected')).toBe(true);
    const rejected = error as ProviderRejectedError;
    expect(rejected.status).toBe(422);
    expect(rejected.sent).toBe('yes');
    expect(rejected.problem?.type).toMatch(/idempotency-key-reused$/);
    expect(rejected.problem?.status).toBe(422);
    expect((await client.effects()).total).toBe(before.total);
  });

  it('answers 409 (transient) while a request with the same key is still in flight', async () => {
    await client.setFaults({ delayMs: 600, pathPrefix: '/tickets' });
    const slow = client.createTicket(ticket, { idempotencyKey: 'idem-in-flight' });
    await new Promise((resolve) => setTimeout(resolve, 150));

    const error = await failure(client.createTicket(ticket, { idempotencyKey: 'idem-in-flight' }));
    expect(error).toBeInstanceOf(ProviderTransientError);
    expect((error as ProviderTransientError).status).toBe(409);
    expect((error as ProviderTransientError).retryAfterMs).toBe(1000);
    const lookup = await failure(client.findTicketByKey('idem-in-flight'));
    expect(isProviderError(lookup, 'transient')).toBe(true);

    const created = await slow;
    expect(await client.findTicketByKey('idem-in-flight')).toEqual({
      ticketId: created.ticketId,
      receipt: created.receipt,
      createdAt: created.createdAt,
    });
    expect((await client.effects()).byIdempotencyKey['idem-in-flight']).toBe(1);
  });

  it('rejects a malformed body with 400 before touching the key', async () => {
    const error = await failure(client.createTicket({ title: '', body: 'x', queue: 'q' }, { idempotencyKey: 'idem-bad-body' }));
    expect(isProviderError(error, 'rejected')).toBe(true);
    expect((error as ProviderRejectedError).status).toBe(400);
    expect(await client.findTicketByKey('idem-bad-body')).toBeNull();
  });

  it('counts unkeyed creates of the same body as duplicates', async () => {
    const body = { title: 'No key', body: 'twice', queue: 'dup' };
    const a = await client.createTicket(body);
    const b = await client.createTicket(body);
    expect(a.ticketId).not.toBe(b.ticketId);
    const dup = (await client.effects()).duplicates.find((d) => d.kind === 'ticket.create' && d.logicalKey.startsWith('body:'));
    expect(dup?.count).toBe(2);
  });
});

describe('GET /tickets/by-idempotency-key/:key', () => {
  it('returns the stored receipt when the key was applied and null (404) when it was not', async () => {
    const created = await client.createTicket(ticket, { idempotencyKey: 'lookup/key with spaces' });
    expect(await client.findTicketByKey('lookup/key with spaces')).toEqual({
      ticketId: created.ticketId,
      receipt: created.receipt,
      createdAt: created.createdAt,
    });
    expect(await client.findTicketByKey('never-used')).toBeNull();
  });
});

describe('POST /tickets/:id/close', () => {
  it('counts an effect only when it changes state', async () => {
    const { ticketId } = await client.createTicket(ticket, { idempotencyKey: 'close-me' });
    const before = (await client.effects()).byKind['ticket.close'];

    const first = await client.closeTicket(ticketId);
    const second = await client.closeTicket(ticketId);

    expect(first).toMatchObject({ ticketId, status: 'closed', changed: true });
    expect(second).toMatchObject({ ticketId, status: 'closed', changed: false, closedAt: first.closedAt });
    expect((await client.effects()).byKind['ticket.close']).toBe(before + 1);
    expect((await client.getTicket(ticketId))?.status).toBe('closed');
  });

  it('rejects an unknown ticket with 404', async () => {
    const error = await failure(client.closeTicket('T-999999'));
    expect(isProviderError(error, 'rejected')).toBe(true);
    expect((error as ProviderRejectedError).status).toBe(404);
  });
});

describe('POST /emails (no idempotency support)', () => {
  it('sends on every call, so two sends are two effects and flagged as a duplicate', async () => {
    const email = { to: 'ops@example.com', subject: 'Ticket opened', body: 'We are on it.' };
    const before = (await client.effects()).byKind['email.send'];

    const a = await client.sendEmail(email);
    const b = await client.sendEmail(email);

    expect(a.messageId).not.toBe(b.messageId);
    const effects = await client.effects();
    expect(effects.byKind['email.send']).toBe(before + 2);
    expect(effects.duplicates).toContainEqual(expect.objectContaining({ kind: 'email.send', count: 2, email }));
  });
});

describe('fault injection and client error classification', () => {
  it('maps 429 with Retry-After in seconds to a transient error with retryAfterMs, applying nothing', async () => {
    await client.setFaults({ rateLimitNext: 1, retryAfterMs: 2000 });
    const before = (await client.effects()).total;

    const error = await failure(client.sendEmail({ to: 'a@example.com', subject: 's', body: 'b' }));

    expect(error).toBeInstanceOf(ProviderTransientError);
    const transient = error as ProviderTransientError;
    expect(transient.kind).toBe('transient');
    expect(transient.status).toBe(429);
    expect(transient.retryAfterMs).toBe(2000);
    expect((await client.effects()).total).toBe(before);
    // The fault fired once; the next call goes through.
    await client.sendEmail({ to: 'a@example.com', subject: 's', body: 'b' });
  });

  it('parses Retry-After given as an HTTP date', async () => {
    await client.setFaults({ rateLimitNext: 1, retryAfterMs: 5000, retryAfterFormat: 'http-date' });
    const error = (await failure(client.createTicket(ticket, { idempotencyKey: 'idem-429-date' }))) as ProviderTransientError;
    expect(error.status).toBe(429);
    // An HTTP date has one-second resolution.
    expect(error.retryAfterMs).toBeGreaterThanOrEqual(3000);
    expect(error.retryAfterMs).toBeLessThanOrEqual(5000);
    // The key was never reserved: the retry with the same key creates the ticket.
    expect(await client.findTicketByKey('idem-429-date')).toBeNull();
    expect((await client.createTicket(ticket, { idempotencyKey: 'idem-429-date' })).replayed).toBe(false);
  });

  it('maps 503 to a transient error', async () => {
    await client.setFaults({ fail5xxNext: 1, retryAfterMs: 0 });
    const error = await failure(client.closeTicket('T-000001'));
    expect(isProviderError(error, 'transient')).toBe(true);
    expect((error as ProviderTransientError).status).toBe(503);
    expect((error as ProviderTransientError).retryAfterMs).toBe(0);
  });

  it('classifies a connection dropped after the effect as unknown outcome; the lookup proves the effect', async () => {
    await client.setFaults({ dropAfterEffectNext: 1, pathPrefix: '/tickets' });
    const error = await failure(client.createTicket(ticket, { idempotencyKey: 'idem-dropped' }));

    expect(error).toBeInstanceOf(ProviderUnknownOutcomeError);
    expect((error as ProviderUnknownOutcomeError).sent).toBe('maybe');
    const found = await client.findTicketByKey('idem-dropped');
    expect(found?.ticketId).toMatch(/^T-/);
    // Repeating with the same key replays the receipt instead of creating a second ticket.
    const repeat = await client.createTicket(ticket, { idempotencyKey: 'idem-dropped' });
    expect(repeat).toEqual({ ...found, replayed: true });
    expect((await client.effects()).byIdempotencyKey['idem-dropped']).toBe(1);
  });

  it('classifies a client-side timeout after sending as unknown outcome', async () => {
    await client.setFaults({ delayMs: 500, pathPrefix: '/emails' });
    const error = await failure(client.sendEmail({ to: 'slow@example.com', subject: 's', body: 'b' }, { timeoutMs: 100 }));
    expect(isProviderError(error, 'unknown-outcome')).toBe(true);
  });

  it('classifies a refused connection as transient and not sent', async () => {
    const port = await closedPort();
    const offline = new ProviderClient(`http://127.0.0.1:${port}`);

    const error = await failure(offline.sendEmail({ to: 'a@example.com', subject: 's', body: 'b' }));

    expect(error).toBeInstanceOf(ProviderTransientError);
    expect((error as ProviderTransientError).sent).toBe('no');
    expect((error as ProviderTransientError).networkCode).toBe('ECONNREFUSED');
  });

  it('has no /_faults endpoint unless started with --faults', async () => {
    const plain = await startProvider({ dbFile: path.join(dir, 'plain.sqlite') });
    try {
      const error = await failure(plain.client.setFaults({ rateLimitNext: 1 }));
      expect((error as ProviderRejectedError).status).toBe(404);
    } finally {
      await plain.stop();
    }
  });
});

describe('persistence', () => {
  it('keeps effect counts and stored responses across a graceful restart and a SIGKILL', async () => {
    const dbFile = path.join(dir, 'restart.sqlite');
    let p = await startProvider({ dbFile });
    const created = await p.client.createTicket(ticket, { idempotencyKey: 'survives' });
    await p.client.sendEmail({ to: 'a@example.com', subject: 'once', body: 'b' });
    const before = await p.client.effects();
    expect(before.total).toBe(2);

    await p.stop();
    expect(await p.exited).toBe(0);
    p = await startProvider({ dbFile });
    expect(await p.client.effects()).toEqual(before);

    await p.kill();
    expect(await p.exited).toBe('SIGKILL');
    p = await startProvider({ dbFile, port: p.port });
    try {
      expect(await p.client.effects()).toEqual(before);
      const replay = await p.client.createTicket(ticket, { idempotencyKey: 'survives' });
      expect(replay).toEqual({ ...created, replayed: true });
      expect(await p.client.effects()).toEqual(before);
    } finally {
      await p.stop();
    }
  });

  it('drops a key left in flight by a provider killed before the effect, so a retry applies it once', async () => {
    const dbFile = path.join(dir, 'in-flight.sqlite');
    let p = await startProvider({ dbFile, faults: true, stderr: 'ignore' });
    await p.client.setFaults({ delayMs: 5000 });
    const pending = failure(p.client.createTicket(ticket, { idempotencyKey: 'killed-in-flight' }));
    await new Promise((resolve) => setTimeout(resolve, 200));
    await p.kill();
    expect(isProviderError(await pending, 'unknown-outcome')).toBe(true);

    p = await startProvider({ dbFile });
    try {
      expect(await p.client.findTicketByKey('killed-in-flight')).toBeNull();
      expect((await p.client.createTicket(ticket, { idempotencyKey: 'killed-in-flight' })).replayed).toBe(false);
      expect((await p.client.effects()).total).toBe(1);
    } finally {
      await p.stop();
    }
  });
});

describe('parseRetryAfter', () => {
  it('reads delay-seconds and HTTP dates and ignores garbage', () => {
    const now = Date.parse('2025-01-01T00:00:00Z');
    expect(parseRetryAfter('3', now)).toBe(3000);
    expect(parseRetryAfter(' 0 ', now)).toBe(0);
    expect(parseRetryAfter('Wed, 01 Jan 2025 00:00:07 GMT', now)).toBe(7000);
    expect(parseRetryAfter('Tue, 31 Dec 2024 23:59:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter(null, now)).toBeUndefined();
  });
});
