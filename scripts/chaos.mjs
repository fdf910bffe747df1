// npm run test:chaos [-- JEST ARGS]
//
// Runs the chaos suites (test/chaos/*.chaos.ts: crashes, a fan-in and dependencies in any order
// under kills, a starved core, SIGTERM and the memory guard, injected faults, the hostile-input
// corpus) one file at a time, then sums what each suite counted from the tables and queues it
// audited into one line:
//
//   chaos: published=N succeeded=N archived=N lost=0 duplicates=0
//
// Exits non-zero if jest failed, if a suite wrote no tally, or if anything was lost or completed
// twice. Extra arguments go to jest (e.g. --json --outputFile=FILE, or a file name to run one suite).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const SUITES = ['crash', 'flows', 'dependencies', 'starvation', 'sigterm', 'memory', 'faults', 'corpus'];
const args = process.argv.slice(2);
const dir = mkdtempSync(join(tmpdir(), 'taskworker-chaos-'));
const jest = createRequire(import.meta.url).resolve('jest/bin/jest');
const run = spawnSync(process.execPath, [jest, '-c', 'jest.chaos.config.js', ...args], {
  stdio: 'inherit',
  env: { ...process.env, TASKWORKER_CHAOS_DIR: dir },
});

const tallies = readdirSync(dir)
  .filter((f) => f.endsWith('.json'))
  .map((f) => JSON.parse(readFileSync(join(dir, f), 'utf8')));
rmSync(dir, { recursive: true, force: true });
const sum = (key) => tallies.reduce((n, t) => n + t[key], 0);

const rows = [['suite', 'published', 'succeeded', 'archived', 'lost', 'duplicates']];
for (const t of tallies.sort((a, b) => SUITES.indexOf(a.suite) - SUITES.indexOf(b.suite)))
  rows.push([t.suite, t.published, t.succeeded, t.archived, t.lost, t.duplicates].map(String));
const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
process.stdout.write('\n');
for (const [i, row] of rows.entries()) {
  process.stdout.write(`${row.map((cell, j) => (j === 0 ? cell.padEnd(widths[j]) : cell.padStart(widths[j]))).join('  ')}\n`);
  if (i === 0) process.stdout.write(`${widths.map((w) => '─'.repeat(w)).join('  ')}\n`);
}
for (const t of tallies) if (t.details) process.stdout.write(`${t.suite}: ${JSON.stringify(t.details)}\n`);

// One file given on the command line runs one suite; otherwise every suite must have reported.
const partial = args.some((a) => /\.chaos\.ts$|^-t$|--testNamePattern/.test(a));
const missing = partial ? [] : SUITES.filter((s) => !tallies.some((t) => t.suite === s));
if (missing.length > 0) process.stdout.write(`chaos: no tally from ${missing.join(', ')} (the suite failed before its audit)\n`);
process.stdout.write(
  `chaos: published=${sum('published')} succeeded=${sum('succeeded')} archived=${sum('archived')} lost=${sum('lost')} duplicates=${sum('duplicates')}\n`,
);
const failed = run.status !== 0 || missing.length > 0 || sum('lost') > 0 || sum('duplicates') > 0 || tallies.length === 0;
process.exit(failed ? 1 : 0);
