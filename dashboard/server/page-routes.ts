/** The page itself: its HTML shell (`/`), its prebuilt script and style (`/assets/*`), and no favicon. */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PAGE_META } from '../api-types';
import type { RouteContext } from './route-context';
import type { UiOptions } from './ui-options';

const ASSETS: Readonly<Record<string, string>> = {
  'app.js': 'text/javascript; charset=utf-8',
  'app.css': 'text/css; charset=utf-8',
};

/** The page: a shell with the token and mode; everything shown is fetched as JSON and set as text. */
function pageHtml(options: UiOptions): string {
  const meta = (name: string, value: string) => `<meta name="${name}" content="${value.replace(/[^A-Za-z0-9_-]/g, '')}">`;
  return [
    '<!doctype html>',
    '<html lang="en"><head><meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<title>taskworker · ${options.app.replace(/[^A-Za-z0-9_-]/g, '')}</title>`,
    meta(PAGE_META.token, options.token),
    meta(PAGE_META.mode, options.readOnly ? 'read-only' : 'read-write'),
    '<link rel="stylesheet" href="/assets/app.css">',
    '</head><body><div id="app"></div><script type="module" src="/assets/app.js"></script></body></html>',
  ].join('\n');
}

/** Registers the page's shell and its assets. */
export function registerPageRoutes({ app, options }: RouteContext): void {
  app.get('/', (c) => c.html(pageHtml(options)));
  app.get('/favicon.ico', (c) => c.body(null, 204));
  app.get('/assets/:file', async (c) => {
    const file = c.req.param('file');
    const type = ASSETS[file];
    if (!type || !options.assetsDir) return c.notFound();
    const content = await readFile(join(options.assetsDir, file)).catch(() => undefined);
    if (!content) return c.notFound();
    return c.body(content, 200, { 'content-type': type, 'cache-control': 'no-cache' });
  });
}
