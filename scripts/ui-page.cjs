// Builds the dashboard's page (dashboard/page/: app.tsx, app.css) into a directory: app.js and
// app.css, what `taskworker ui` serves. Used by scripts/build.mjs (into dist/ui) and by the browser tests.
const { copyFileSync, mkdirSync } = require('node:fs');
const { join } = require('node:path');

const root = join(__dirname, '..');

/** @param {string} outdir */
async function buildUiPage(outdir) {
  const { build } = require('esbuild');
  mkdirSync(outdir, { recursive: true });
  await build({
    absWorkingDir: root,
    entryPoints: ['dashboard/page/app.tsx'],
    outfile: join(outdir, 'app.js'),
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    jsx: 'automatic',
    jsxImportSource: 'preact',
    minify: true,
    logLevel: 'warning',
  });
  copyFileSync(join(root, 'dashboard', 'page', 'app.css'), join(outdir, 'app.css'));
}

module.exports = { buildUiPage };
