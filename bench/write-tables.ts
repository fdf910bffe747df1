/**
 * Writes the generated blocks of BENCHMARKS.md and README.md from bench/results/*.json
 * (bench/tables.ts says how).
 *
 *   npm run bench:tables              rewrite the blocks
 *   npm run bench:tables -- --check   exit 1, naming the first block that differs from its JSON
 */
import { checkTables, writeTables } from './tables';

const root = process.cwd();
try {
  if (process.argv.includes('--check')) {
    const [first, ...rest] = checkTables(root);
    if (first) {
      process.stderr.write(
        `${first.message}\n${rest.length > 0 ? `(and ${rest.length} more)\n` : ''}Run \`npm run bench:tables\` to write the blocks from the JSON.\n`,
      );
      process.exit(1);
    }
    process.stdout.write('BENCHMARKS.md and README.md agree with bench/results/*.json\n');
  } else {
    const changed = writeTables(root);
    process.stdout.write(changed.length > 0 ? `rewrote ${changed.join(', ')}\n` : 'up to date\n');
  }
} catch (error) {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(2);
}
