/**
 * The benchmark figures in BENCHMARKS.md and docs/performance.md are what bench/results/*.json give
 * (bench/tables.ts writes them: `npm run bench:tables`); no simulation benchmark's JSON is older than
 * the code it measures (bench/staleness.ts: an emulator benchmark's may be, and its blocks say so);
 * and the deterministic simulation still gives what bench/results/selectors.json holds: one seed of
 * one cell of it is run again here, so a change to the model or the dispatcher that moves a figure
 * fails with the change that moved it.
 */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { selectorOut } from '../../bench/sim/figures';
import { runSimulation } from '../../bench/sim/run';
import { SELECTOR_CHECK_CELL, workloadFor } from '../../bench/sim/workloads';
import { staleBenchmarks } from '../../bench/staleness';
import { compareDocument, DOCUMENTS, type Results, readResults, renderDocument } from '../../bench/tables';
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

  it('leaves a block its JSON cannot give as it is, names it, and still writes the others', () => {
    const text = '<!-- bench:limits -->\nas it was\n<!-- /bench -->\n<!-- bench:flows -->\n<!-- /bench -->';
    const older = { ...results, limits: {} } as unknown as Results; // a JSON of an older shape
    const { text: written, failed } = renderDocument('x.md', text, older);
    expect(failed.map((f) => [f.block, f.line])).toEqual([['limits', 1]]);
    expect(written.startsWith('<!-- bench:limits -->\nas it was\n<!-- /bench -->\n<!-- bench:flows -->\n\n<sub>')).toBe(true);
    expect(compareDocument('x.md', text, older)[0]?.message).toMatch(/x\.md:1: block bench:limits cannot be written from its JSON/);
  });

  it('says in every block which file and commit its figures come from (or that it is not measured yet)', () => {
    for (const file of Object.keys(DOCUMENTS)) {
      const blocks = read(file).split('<!-- bench:').slice(1);
      for (const block of blocks)
        expect(block).toMatch(
          /from (\[`bench\/results\/\w+\.json`\].*: (measured at commit \w+|commit not recorded)|`bench\/results\/\w+\.json`: not measured yet)/,
        );
    }
    expect(results.selectors.measuredAt?.commit).toMatch(/^[0-9a-f]{7,}$/);
  });
});

describe('bench/results/*.json against the code they measured (bench/staleness.ts)', () => {
  it('holds no simulation benchmark measured before a change to what it measures (else: the command in the message)', () => {
    // A stale emulator benchmark is not a failure: its blocks say so (the tables above hold them to it).
    expect(
      staleBenchmarks(results.freshness)
        .filter((s) => s.fails)
        .map((s) => s.message),
    ).toEqual([]);
  });
});

describe('bench:mixed (measured on the emulators by hand: bench/results/mixed.json may be absent)', () => {
  const MIXED = '<!-- bench:mixed -->\n<!-- /bench -->';
  const waits = (p50: number, p99: number, max: number) => ({ samples: 40, p50, p99, max, met: p50 <= 1 && p99 <= 2 });
  /** A hand-written document of the shape bench/mixed.ts prints with --json (not a measurement). */
  const fixture = {
    benchmark: 'mixed',
    setup: 'taskworker dev on-demand; 2 slots per dispatcher',
    targets: { p50Seconds: 1, p99Seconds: 2 },
    rounds: 2,
    cases: [
      { case: 'backlog', description: 'six 8 s low tasks', ...waits(0.4, 1.6, 1.7), coldRound: waits(0.9, 3.1, 3.2) },
      { case: 'slow-high', ...waits(0.7, 2.5, 2.6), coldRound: waits(1.2, 2.9, 3) },
    ],
    measuredAt: { commit: 'abc1234', dirty: false },
    node: 'v24.0.0',
  };
  const withMixed = (mixed: unknown): Results =>
    ({ ...results, mixed, freshness: { ...results.freshness, mixed: { state: 'fresh', commit: 'abc1234' } } }) as Results;

  it('renders each case: its waits against the targets and its first round apart', () => {
    const text = renderDocument('BENCHMARKS.md', MIXED, withMixed(fixture)).text;
    expect(text).toContain('from [`bench/results/mixed.json`](bench/results/mixed.json): measured at commit abc1234, Node v24.0.0');
    expect(text).toContain('| backlog: six 8 s low tasks | 0.4 / 1.6 / 1.7 | 40 | met | 0.9 / 3.1 / 3.2 |');
    expect(text).toContain('| slow-high | 0.7 / 2.5 / 2.6 | 40 | **not met** | 1.2 / 2.9 / 3 |');
    expect(text).toContain('**Targets met in 1 of 2 cases.**');
    expect(text).not.toContain('**Stale:**');
  });

  it('says how to measure it while its JSON is absent', () => {
    const text = renderDocument('BENCHMARKS.md', MIXED, withMixed(undefined)).text;
    expect(text).toContain('from `bench/results/mixed.json`: not measured yet');
    expect(text).toContain('`npm run -s bench:mixed -- --json > bench/results/mixed.json && npm run bench:tables`');
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
