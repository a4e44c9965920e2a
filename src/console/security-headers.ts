/**
 * Response headers of every console response, errors included: no script at all (the page has
 * none: plain forms), styles from the console's own stylesheet only, forms may post only to the
 * console, no framing (clickjacking an Approve button), nothing cached (pages show tool arguments
 * and carry CSRF tokens), no Referer to other sites. The referrer policy is `same-origin`, not
 * `no-referrer`: under `no-referrer` a browser sends `Origin: null` with a form POST (Fetch
 * standard, "serializing a request origin"), and the origin check could not tell the console's
 * own page from anything else.
 *
 * @see https://owasp.org/www-project-secure-headers/
 */
import type { FastifyReply, FastifyRequest } from 'fastify';

/** The Content-Security-Policy: everything denied but the console's stylesheet and its own forms. */
export const CONTENT_SECURITY_POLICY = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/** Every header and its value. */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'x-frame-options': 'DENY',
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
};

/** `onRequest` hook setting {@link SECURITY_HEADERS} on the reply (register it first, so refusals carry them too). */
export async function setSecurityHeaders(_request: FastifyRequest, reply: FastifyReply): Promise<void> {
  reply.headers(SECURITY_HEADERS);
}
