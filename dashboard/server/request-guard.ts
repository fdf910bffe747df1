/**
 * What every request of the dashboard's server passes before its route: security headers, the
 * Host check, the token (on reads too when bound beyond loopback; always on actions), read-only
 * mode and the body's size; and how every failure is answered.
 */
import { timingSafeEqual } from 'node:crypto';
import type { Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { secureHeaders } from 'hono/secure-headers';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { TaskworkerError } from '../../lib/errors';
import { explainAwsError } from '../../lib/operate/aws-errors';
import { BadCursorError } from '../../lib/operate/job-pages';
import { VersionNotFoundError } from '../../lib/operate/operator-context';
import { type ApiErrorBody, TOKEN_HEADER } from '../api-types';
import { RequestError } from './request-params';
import type { RouteContext } from './route-context';

/** The cookie a browser on another host keeps the token in once it opened the printed URL. */
const TOKEN_COOKIE = 'taskworker_token';

/** A refusal as the page reads it ({@link ApiErrorBody}): the status, and one sentence. */
function refuse(c: Context, error: string, status: ContentfulStatusCode): Response {
  const body: ApiErrorBody = { error };
  return c.json(body, status);
}

/** An error as one line: its name and message (anything else as text). */
export const describeError = (error: unknown) => (error instanceof Error ? `${error.name}: ${error.message}` : String(error));

function sameToken(given: string | undefined, token: string): boolean {
  if (given === undefined) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

function cookieToken(c: Context): string | undefined {
  const header = c.req.header('cookie') ?? '';
  for (const part of header.split(';')) {
    const [name, ...value] = part.trim().split('=');
    if (name === TOKEN_COOKIE) return decodeURIComponent(value.join('='));
  }
  return undefined;
}

/** Registers the checks every request passes (before any route) and the answer to every failure. */
export function guardRequests({ app, options }: RouteContext): void {
  app.use(
    '*',
    secureHeaders({
      contentSecurityPolicy: {
        defaultSrc: ["'self'"],
        scriptSrc: ["'self'"],
        styleSrc: ["'self'"],
        imgSrc: ["'self'", 'data:'],
        connectSrc: ["'self'"],
        objectSrc: ["'none'"],
        baseUri: ["'none'"],
        frameAncestors: ["'none'"],
        formAction: ["'self'"],
      },
      referrerPolicy: 'no-referrer',
    }),
  );
  app.use('*', async (c, next) => {
    if (options.acceptsHost && !options.acceptsHost(c.req.header('host') ?? '')) {
      return refuse(c, `host ${JSON.stringify(c.req.header('host') ?? '')} is not this dashboard's`, 403);
    }
    if (options.tokenForReads) {
      const fromQuery = c.req.query('token');
      if (c.req.method === 'GET' && c.req.path === '/' && sameToken(fromQuery, options.token)) {
        c.header('set-cookie', `${TOKEN_COOKIE}=${options.token}; HttpOnly; SameSite=Strict; Path=/`);
        return c.redirect('/', 303);
      }
      if (!sameToken(cookieToken(c), options.token) && !sameToken(c.req.header(TOKEN_HEADER), options.token)) {
        return refuse(c, 'this dashboard needs its token: open the URL taskworker ui printed', 401);
      }
    }
    if (c.req.method !== 'GET' && c.req.method !== 'HEAD') {
      if (!sameToken(c.req.header(TOKEN_HEADER), options.token)) return refuse(c, `missing or wrong ${TOKEN_HEADER} header`, 403);
      if (options.readOnly) return refuse(c, 'read-only: this dashboard was started with --read-only', 403);
    }
    await next();
    return undefined;
  });
  app.use('/api/*', bodyLimit({ maxSize: 512 * 1024, onError: (c) => refuse(c, 'the request body is over 512 KiB', 413) }));
  app.onError((error, c) => {
    if (error instanceof RequestError) return refuse(c, error.message, error.status);
    if (error instanceof VersionNotFoundError) return refuse(c, error.message, 404);
    if (error instanceof BadCursorError || error instanceof TaskworkerError) return refuse(c, `${error.name}: ${error.message}`, 400);
    // The AWS failures an operator meets first, in the CLI's plain words (no region, no credentials, …).
    const text = explainAwsError(error) ?? describeError(error);
    options.log(`error: ${text}`);
    return refuse(c, text, 500);
  });
}
