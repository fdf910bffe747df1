/**
 * Writes the generated blocks of BENCHMARKS.md and docs/performance.md from bench/results/*.json
 * (bench/tables.ts says how; its DOCUMENTS names the files).
 *
 *   npm run bench:tables              rewrite the blocks
 *   npm run bench:tables -- --check   exit 1, naming the first block that differs from its JSON
 *                                     (and each document whose blocks cannot be written)
 */
import { checkTables, DOCUMENTS, writeTables } from './tables';

const root = process.cwd();
try {
  if (process.argv.includes('--check')) {
    const differences = checkTables(root);
    // One line per document: its first difference, and how many more it has.
    const files = [...new Set(differences.map((d) => d.file))];
    if (files.length > 0) {
      for (const file of files) {
        const [first, ...rest] = differences.filter((d) => d.file === file);
        process.stderr.write(`${first?.message}\n${rest.length > 0 ? `(and ${rest.length} more in ${file})\n` : ''}`);
      }
      process.stderr.write('Run `npm run bench:tables` to write the blocks from the JSON.\n');
      process.exit(1);
    }
    process.stdout.write(`${Object.keys(DOCUMENTS).join(' and ')} agree with bench/results/*.json\n`);
  } else {
    const changed = writeTables(root);
    process.stdout.write(changed.length > 0 ? `rewrote ${changed.join(', ')}\n` : 'up to date\n');
  }
} catch (error) {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(2);
}
