// Runs a TypeScript entry point (a benchmark) the way the CLI is built: bundled by esbuild into
// dist/run/, then executed with the remaining arguments.
//   node scripts/run-ts.mjs bench/tracking.ts --json
import { spawnSync } from 'node:child_process';
import { basename } from 'node:path';
import { build } from 'esbuild';
import { nodeEntryOptions } from './esbuild-node.mjs';

const [entry, ...args] = process.argv.slice(2);
if (!entry) {
  process.stderr.write('usage: node scripts/run-ts.mjs FILE.ts [args…]\n');
  process.exit(2);
}
const outfile = `dist/run/${basename(entry).replace(/\.ts$/, '.js')}`;
await build({ ...nodeEntryOptions, entryPoints: [entry], outfile });
const result = spawnSync(process.execPath, ['--enable-source-maps', outfile, ...args], { stdio: 'inherit' });
process.exit(result.status ?? 1);
