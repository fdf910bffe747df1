// Runs a TypeScript entry point (a benchmark) the way the CLI is built: bundled by esbuild into
// dist/run/, then executed with the remaining arguments.
//   node scripts/run-ts.mjs bench/tracking.ts --json
//   node scripts/run-ts.mjs --node 24 bench/e2e.ts --json
// `--node 24` runs it on that pinned Node (scripts/node-runtime.cjs, installed by `npm ci`): a
// benchmark of the dispatcher's own speed measures it on the runtime Lambda runs it on. Where that
// Node cannot be had (not linux-x64), it runs on this one and says so in one line.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { basename } from 'node:path';
import { build } from 'esbuild';
import { nodeEntryOptions } from './esbuild-node.mjs';

const argv = process.argv.slice(2);
const major = argv[0] === '--node' ? Number(argv[1]) : undefined;
const [entry, ...args] = major === undefined ? argv : argv.slice(2);
if (!entry || Number.isNaN(major)) {
  process.stderr.write('usage: node scripts/run-ts.mjs [--node 22|24] FILE.ts [args…]\n');
  process.exit(2);
}
const outfile = `dist/run/${basename(entry).replace(/\.ts$/, '.js')}`;
await build({ ...nodeEntryOptions, entryPoints: [entry], outfile });
const node = major === undefined ? process.execPath : runtime(major);
const result = spawnSync(node, ['--enable-source-maps', outfile, ...args], { stdio: 'inherit' });
process.exit(result.status ?? 1);

function runtime(wanted) {
  const { nodeBinary } = createRequire(import.meta.url)('./node-runtime.cjs');
  const path = nodeBinary(wanted, { install: true });
  if (path) return path;
  process.stderr.write(`run-ts: no Node ${wanted} for ${process.platform}-${process.arch}; running on ${process.version}\n`);
  return process.execPath;
}
