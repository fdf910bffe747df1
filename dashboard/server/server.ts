import { Hono } from 'hono';
import { registerJobActions, registerPublish, registerQueueActions } from './action-routes';
import { registerPageRoutes } from './page-routes';
import { registerJobReads, registerVersionReads } from './read-routes';
import { guardRequests } from './request-guard';
import { routeContext } from './route-context';
import type { UiOptions } from './ui-options';

/**
 * The dashboard's HTTP server: the page, its assets and a JSON API over the operator library
 * (the same functions the CLI's status, jobs, archive and dlq commands call). Reads are GETs;
 * every action is a POST that needs the per-process token in a header (another site's page can
 * neither read the token nor send that header without a CORS answer this server never gives), is
 * refused in read-only mode, and is logged.
 */
export function createUiApp(options: UiOptions): Hono {
  const app = new Hono();
  const ui = routeContext(app, options);
  guardRequests(ui);
  registerPageRoutes(ui);
  registerVersionReads(ui);
  registerJobReads(ui);
  registerJobActions(ui);
  registerQueueActions(ui);
  registerPublish(ui);
  return app;
}
