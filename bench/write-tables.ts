/**
 * Writes the generated blocks of BENCHMARKS.md and docs/performance.md from bench/results/*.json
 * (bench/tables.ts says how; its DOCUMENTS names the files).
 *
 *   npm run bench:tables              rewrite the blocks
 *   npm run bench:tables -- --check   exit 1, naming the first block that differs from its JSON
 *                                     (and each document whose blocks cannot be written), or a
 *                                     simulation benchmark whose JSON is stale (bench/staleness.ts);
 *                                     a stale emulator benchmark is printed, not failed
 */
import { staleBenchmarks } from './staleness';
import { checkTables, DOCUMENTS, readResults, writeTables } from './tables';

const root = process.cwd();
try {
  const results = readResults(root);
  if (process.argv.includes('--check')) {
    const differences = checkTables(root, results);
    const stale = staleBenchmarks(results.freshness);
    for (const s of stale) process.stderr.write(`${s.fails ? 'FAIL' : 'note'}: ${s.message}\n`);
    // One line per document: its first difference, and how many more it has.
    const files = [...new Set(differences.map((d) => d.file))];
    for (const file of files) {
      const [first, ...rest] = differences.filter((d) => d.file === file);
      process.stderr.write(`${first?.message}\n${rest.length > 0 ? `(and ${rest.length} more in ${file})\n` : ''}`);
    }
    if (files.length > 0) process.stderr.write('Run `npm run bench:tables` to write the blocks from the JSON.\n');
    if (files.length > 0 || stale.some((s) => s.fails)) process.exit(1);
    process.stdout.write(`${Object.keys(DOCUMENTS).join(' and ')} agree with bench/results/*.json\n`);
  } else {
    const changed = writeTables(root, results);
    process.stdout.write(changed.length > 0 ? `rewrote ${changed.join(', ')}\n` : 'up to date\n');
  }
} catch (error) {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(2);
}
