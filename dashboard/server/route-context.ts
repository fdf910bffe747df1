/**
 * What every route family of the dashboard's server registers with: the app, the options, a
 * version's operator context and the shared table's routes.
 */
import type { Context, Hono } from 'hono';
import type { OperatorContext } from '../../lib/operate/operator-context';
import { API_ROUTES, type Api, type ApiPath, type ApiRequest, type ApiResponse } from '../api-types';
import { RequestError } from './request-params';
import type { UiOptions } from './ui-options';

const VERSION_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

/**
 * What a route's handler reads, by the field names the shared table gives its request, not yet
 * checked (the handler checks each): a GET's query strings, a POST's JSON body fields.
 */
export type RouteInput<P extends ApiPath> = Api[P]['method'] extends 'GET'
  ? { readonly [K in keyof ApiRequest<P>]?: string }
  : { readonly [K in keyof ApiRequest<P>]?: unknown };

/** The one context each route family takes (guardRequests, registerPageRoutes, the reads and the actions). */
export interface RouteContext {
  readonly app: Hono;
  readonly options: UiOptions;
  /** A version's operator context, the default version's when none is named; made once, and made again after a failure. */
  readonly context: (version: string | undefined) => Promise<OperatorContext>;
  /** The queues a request names: every queue of the version when none, else the one (refused when there is no such queue). */
  readonly queueNames: (ctx: OperatorContext, queue: string | undefined) => string[];
  /**
   * Registers a route of the shared table: the method {@link API_ROUTES} gives it, its request
   * read by the table's field names, and its answer held by tsc to the table's response type.
   */
  readonly route: <P extends ApiPath>(path: P, answer: (input: RouteInput<P>) => Promise<ApiResponse<P>>) => void;
}

/** The context of one app's routes: its operator contexts are kept per version for as long as the app lives. */
export function routeContext(app: Hono, options: UiOptions): RouteContext {
  const contexts = new Map<string, Promise<OperatorContext>>();

  const context = async (version: string | undefined): Promise<OperatorContext> => {
    const wanted = version === undefined || version === '' ? options.defaultVersion : version;
    if (!VERSION_PATTERN.test(wanted)) throw new RequestError(`version ${JSON.stringify(wanted)}: not a version name`);
    let found = contexts.get(wanted);
    if (!found) {
      found = options.contextFor(wanted);
      contexts.set(wanted, found);
      found.catch(() => contexts.delete(wanted));
    }
    return found;
  };
  const queueNames = (ctx: OperatorContext, queue: string | undefined) => {
    if (queue === undefined || queue === '') return ctx.config.queues.map((q) => q.name);
    if (!ctx.config.queues.some((q) => q.name === queue)) throw new RequestError(`queue ${JSON.stringify(queue)}: no such queue`);
    return [queue];
  };
  const body = async (c: Context): Promise<Record<string, unknown>> => {
    const parsed: unknown = await c.req.json().catch(() => {
      throw new RequestError('the request body is not JSON');
    });
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
      throw new RequestError('the request body must be a JSON object');
    return parsed as Record<string, unknown>;
  };
  const route = <P extends ApiPath>(path: P, answer: (input: RouteInput<P>) => Promise<ApiResponse<P>>): void => {
    app.on(API_ROUTES[path], path, async (c) => {
      const input = API_ROUTES[path] === 'GET' ? c.req.query() : await body(c);
      return c.json(await answer(input as RouteInput<P>));
    });
  };
  return { app, options, context, queueNames, route };
}
