/**
 * The benchmark figures in BENCHMARKS.md and docs/performance.md are what bench/results/*.json give
 * (bench/tables.ts writes them: `npm run bench:tables`), and the deterministic simulation still
 * gives what bench/results/selectors.json holds: one seed of one cell of it is run again here, so a
 * change to the model or the dispatcher that moves a figure fails with the change that moved it.
 */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { selectorOut } from '../../bench/sim/figures';
import { runSimulation } from '../../bench/sim/run';
import { SELECTOR_CHECK_CELL, workloadFor } from '../../bench/sim/workloads';
import { compareDocument, DOCUMENTS, readResults, renderDocument } from '../../bench/tables';
import { DISPATCHER_DEFAULTS } from '../../lib/config/app-config';

const ROOT = resolve(__dirname, '../..');
const results = readResults(ROOT);
const read = (file: string) => readFileSync(join(ROOT, file), 'utf8');

describe('benchmark tables (bench/tables.ts)', () => {
  it.each(Object.keys(DOCUMENTS))('%s holds exactly what bench/results/*.json give (else: npm run bench:tables)', (file) => {
    const differences = compareDocument(file, read(file), results);
    expect(differences.map((d) => d.message)).toEqual([]);
  });

  it('names the block whose figure was edited by hand', () => {
    const text = read('BENCHMARKS.md');
    const edited = text.replace('| **sla-aware** (default) | ', '| **sla-aware** (default) | 9');
    expect(edited).not.toBe(text);
    const [first] = compareDocument('BENCHMARKS.md', edited, results);
    expect(first?.block).toBe('selectors:steady-0.7');
    // Writing the blocks again restores the generated text.
    expect(renderDocument('BENCHMARKS.md', edited, results).text).toBe(text);
  });

  it('refuses a block it cannot generate and a block left open', () => {
    expect(() => renderDocument('x.md', '<!-- bench:no-such-block -->\n<!-- /bench -->', results)).toThrow(/no generated block/);
    expect(() => renderDocument('x.md', '<!-- bench:limits -->\nstale', results)).toThrow(/has no <!-- \/bench -->/);
  });

  it('says in every block which file and commit its figures come from', () => {
    for (const file of Object.keys(DOCUMENTS)) {
      const blocks = read(file).split('<!-- bench:').slice(1);
      for (const block of blocks)
        expect(block).toMatch(/from \[`bench\/results\/\w+\.json`\].*: (measured at commit \w+|commit not recorded)/);
    }
    expect(results.selectors.measuredAt?.commit).toMatch(/^[0-9a-f]{7,}$/);
  });
});

describe('bench/results/selectors.json against the simulation as it is now', () => {
  it('runs its check cell again (the first 10 minutes of steady-0.7 × the default selector, one seed) and gets every figure of it', async () => {
    const doc = results.selectors;
    expect(doc.default).toBe(DISPATCHER_DEFAULTS.selector);
    const stored = doc.check;
    expect(stored).toMatchObject({ ...SELECTOR_CHECK_CELL, selector: doc.default });
    const workload = workloadFor(SELECTOR_CHECK_CELL.workload, SELECTOR_CHECK_CELL.minutes);
    if (!workload || !stored) throw new Error('no check cell');
    const now = selectorOut(
      await runSimulation({ workload, selector: DISPATCHER_DEFAULTS.selector, seeds: [...SELECTOR_CHECK_CELL.seeds] }),
    );
    // A difference here means the model or the dispatcher moved the benchmark's figures: run
    // `npm run -s bench:selectors -- --json > bench/results/selectors.json` and `npm run bench:tables`.
    expect(now).toEqual(stored.figures);
    // A hang guard, not a speed figure: the simulation is CPU-bound and a busy machine slows it many times.
  }, 600_000);
});
