/**
 * The ErrorResponse ('E') message with these fields (PostgreSQL protocol field codes: S severity,
 * V non-localized severity, C SQLSTATE, M message, ...), parsed by `pg-protocol`, the parser the
 * `pg` driver uses: the error object the store really receives.
 */
import { PassThrough } from 'node:stream';
import { parse, type DatabaseError } from 'pg-protocol';

export async function errorResponse(fields: Record<string, string>): Promise<DatabaseError> {
  const body = Buffer.concat([
    ...Object.entries(fields).map(([type, value]) => Buffer.concat([Buffer.from(type), Buffer.from(value, 'utf8'), Buffer.from([0])])),
    Buffer.from([0]),
  ]);
  const header = Buffer.alloc(5);
  header.write('E', 0);
  header.writeInt32BE(body.length + 4, 1);
  const stream = new PassThrough();
  const messages: unknown[] = [];
  const done = parse(stream, (message) => messages.push(message));
  stream.end(Buffer.concat([header, body]));
  await done;
  if (messages.length !== 1) throw new Error(`expected one parsed message, got ${messages.length}`);
  return messages[0] as DatabaseError;
}
