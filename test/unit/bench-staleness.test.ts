/**
 * bench/staleness.ts: a benchmark's JSON is stale once code it measures differs from the commit it
 * was measured at; a stale simulation fails the check, a stale emulator benchmark's blocks say so.
 * And the declarations themselves hold: every file a benchmark runs is under its paths.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import * as ts from 'typescript';
import { measuredAt } from '../../bench/results';
import {
  type BenchmarkName,
  type ChangedSince,
  type Freshness,
  freshness,
  gitChangedSince,
  MEASURED,
  measures,
  RECORDS_ONLY,
  sameCode,
  staleBenchmarks,
} from '../../bench/staleness';
import { readResults, renderDocument } from '../../bench/tables';

const ROOT = resolve(__dirname, '../..');
const NAMES = Object.keys(MEASURED) as BenchmarkName[];
const clean = (commit: string) => ({ commit, dirty: false });
/** A diff that reports `files` changed since any commit. */
const diff =
  (...files: string[]): ChangedSince =>
  () =>
    files;
const allFresh = (): Record<BenchmarkName, Freshness> =>
  Object.fromEntries(NAMES.map((n) => [n, { state: 'fresh', commit: 'abc1234' }])) as Record<BenchmarkName, Freshness>;

describe('the staleness rule', () => {
  it('fails a simulation benchmark when a lib file it measures changed after its commit, naming it, the commit, the file and the command', () => {
    const f = freshness('selectors', clean('abc1234'), diff('lib/select/sla-aware.ts', 'docs/performance.md'));
    expect(f).toEqual({ state: 'stale', reason: 'changed', commit: 'abc1234', files: ['lib/select/sla-aware.ts'] });

    const [stale, ...others] = staleBenchmarks({ ...allFresh(), selectors: f });
    expect(others).toEqual([]);
    expect(stale?.fails).toBe(true);
    expect(stale?.message).toContain('bench/results/selectors.json is stale');
    expect(stale?.message).toContain('measured at commit abc1234; 1 file it measures changed since: lib/select/sla-aware.ts');
    expect(stale?.message).toContain('npm run -s bench:selectors -- --json > bench/results/selectors.json && npm run bench:tables');
  });

  it('leaves a benchmark fresh when only files outside its paths changed', () => {
    // The Markdown, the table writer and what records measuredAt are not what a benchmark measures;
    // the simulation does not run the AWS adapters or the local stack.
    const outside = diff(
      'BENCHMARKS.md',
      'bench/tables.ts',
      'bench/results.ts',
      'lib/adapters/sqs.ts',
      'lib/local/dev.ts',
      'lib/run/worker-thread.ts',
    );
    expect(freshness('selectors', clean('abc1234'), outside)).toEqual({ state: 'fresh', commit: 'abc1234' });
    expect(freshness('e2e', clean('abc1234'), diff('lib/operate/queries.ts', 'lib/testing/index.ts', 'bench/tables.ts')).state).toBe(
      'fresh',
    );
    // …but the emulator benchmarks run the adapters, and the dev stack's run the built handler.
    expect(freshness('e2e', clean('abc1234'), diff('lib/adapters/sqs.ts')).state).toBe('stale');
    expect(freshness('idle', clean('abc1234'), diff('functions/dispatcher-handler.ts')).state).toBe('stale');
    expect(freshness('mixed', clean('abc1234'), diff('functions/dispatcher-handler.ts')).state).toBe('stale');
    expect(freshness('e2e', clean('abc1234'), diff('functions/dispatcher-handler.ts')).state).toBe('fresh');
  });

  it('counts a JSON with no commit, measured on uncommitted changes, or at a commit this checkout lacks as stale', () => {
    const never: ChangedSince = () => {
      throw new Error('not asked: nothing to compare with');
    };
    expect(freshness('selectors', undefined, never)).toMatchObject({ state: 'stale', reason: 'no commit' });
    expect(freshness('selectors', { commit: null, dirty: null }, never)).toMatchObject({ state: 'stale', reason: 'no commit' });
    expect(freshness('selectors', { commit: 'abc1234', dirty: true }, never)).toMatchObject({ state: 'stale', reason: 'dirty' });
    expect(freshness('selectors', clean('abc1234'), () => null)).toMatchObject({ state: 'stale', reason: 'unknown commit' });
  });

  it('reports a stale emulator benchmark without failing, simulations first', () => {
    const stale = staleBenchmarks({
      ...allFresh(),
      limits: freshness('limits', undefined, diff()),
      e2e: freshness('e2e', clean('abc1234'), diff('lib/dispatch/loop.ts')),
      selectors: freshness('selectors', clean('abc1234'), diff('lib/dispatch/loop.ts')),
      mixed: { state: 'absent' },
    });
    expect(stale.map((s) => [s.name, s.fails])).toEqual([
      ['selectors', true],
      ['e2e', false],
      ['limits', false],
      ['mixed', false],
    ]);
    expect(stale.find((s) => s.name === 'limits')?.message).toContain('its JSON records no commit');
  });

  it('names at most 20 changed files and counts the rest', () => {
    const files = Array.from({ length: 23 }, (_, i) => `lib/dispatch/f${String(i).padStart(2, '0')}.ts`);
    const [stale] = staleBenchmarks({ ...allFresh(), selectors: freshness('selectors', clean('abc1234'), diff(...files)) });
    expect(stale?.message).toContain('23 files it measures changed since: lib/dispatch/f00.ts');
    expect(stale?.message).toContain('lib/dispatch/f19.ts, and 3 more');
    expect(stale?.message).not.toContain('f20');
  });
});

describe('sameCode: what a formatter or a comment changes is not a change', () => {
  const code = [
    '/** The order. */',
    'export const order = [...drawn.filter(overdue), ...drawn.filter((q) => !overdue(q) && first(q))];',
    `const pause = (q: Q) => Math.max(1, \`\${q.name} a b\`.length, /a b/.source.length, 0x10);`,
  ].join('\n');

  it('holds line breaks, indentation, comments and a trailing comma to be the same program', () => {
    const reformatted = [
      '// The order, looked at first.',
      'export const order = [',
      '  ...drawn.filter(overdue),',
      '  ...drawn.filter((q) => !overdue(q) && first(q)), // then the rest',
      '];',
      'const pause = (q: Q) =>',
      `  Math.max(1, \`\${q.name} a b\`.length, /a b/.source.length, 0x10,);`,
    ].join('\n');
    expect(sameCode('lib/select/sla-aware.ts', code, reformatted)).toBe(true);
  });

  it.each([
    ['an operator', code.replace('!overdue(q) &&', '!overdue(q) ||')],
    ['a name', code.replace('first(q)', 'second(q)')],
    ['a number', code.replace('0x10', '0x11')],
    ["a template literal's spaces", code.replace('a b`', 'a  b`')],
    ["a regular expression's spaces", code.replace('/a b/', '/a  b/')],
    ['an elision', code.replace('first(q))]', 'first(q)),,]')],
    ['a statement', `${code}\nrun();`],
  ])('counts a change of %s', (_what, changed) => {
    expect(sameCode('lib/select/sla-aware.ts', code, changed)).toBe(false);
  });
});

describe("a stale benchmark's generated blocks", () => {
  const block = (name: string, changedSince: ChangedSince) =>
    renderDocument('x.md', `<!-- bench:${name} -->\n<!-- /bench -->`, readResults(ROOT, changedSince)).text;

  it('say so, with the commit and the command that re-measures it, once a file it measures changed', () => {
    const flows = JSON.parse(readFileSync(join(ROOT, 'bench/results/flows.json'), 'utf8')) as { measuredAt: { commit: string } };
    const fresh = block('flows', diff());
    const stale = block('flows', diff('lib/settle/dependents.ts'));
    expect(fresh).not.toContain('**Stale:**');
    expect(stale).toContain(
      `**Stale:** files it measures have changed since commit ${flows.measuredAt.commit} (\`npm run bench:tables -- --check\` names them). ` +
        'Re-measure: `npm run -s bench:flows -- --json > bench/results/flows.json && npm run bench:tables`.',
    );
    // The figures are still there, under the line: stale is said, not hidden.
    expect(stale.replace(/\n\*\*Stale:\*\*.*\n/, '')).toBe(fresh);
  });

  it('say so for a JSON that records no commit, whatever changed', () => {
    // The limits JSON as one written before commits were recorded (its own records one).
    const results = readResults(ROOT, diff());
    const old = { ...results, freshness: { ...results.freshness, limits: freshness('limits', undefined, diff()) } };
    const text = renderDocument('x.md', '<!-- bench:limits -->\n<!-- /bench -->', old).text;
    expect(text).toContain('**Stale:** its JSON records no commit');
  });
});

/** A temporary git repository: its folder, git run in it, and a file written in it (folders made). */
function temporaryRepository(prefix: string) {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const git = (...args: string[]) =>
    execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', '-c', 'commit.gpgsign=false', ...args], {
      cwd: dir,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    }).trim();
  const write = (file: string, text: string) => {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    writeFileSync(join(dir, file), text);
  };
  return { dir, git, write };
}

describe('gitChangedSince (a temporary git repository)', () => {
  const { dir, git, write } = temporaryRepository('tw-bench-staleness-');

  it('lists what was committed since the commit and what is not committed yet, not untracked files or a file put back', () => {
    git('init', '-q');
    write('lib/dispatch/loop.ts', 'a');
    write('lib/select/sla-aware.ts', 'a');
    write('lib/settle/settle.ts', 'a');
    write('docs/performance.md', 'a');
    git('add', '.');
    git('commit', '-q', '-m', 'measured here');
    const measured = git('rev-parse', '--short', 'HEAD');

    write('lib/dispatch/loop.ts', 'b');
    write('docs/performance.md', 'b');
    write('lib/settle/settle.ts', 'b');
    git('commit', '-q', '-am', 'a change after the measurement');
    write('lib/select/sla-aware.ts', 'b'); // not committed
    write('lib/settle/settle.ts', 'a'); // put back as it was measured
    write('lib/new.ts', 'b'); // untracked

    const changed = gitChangedSince(dir);
    expect([...(changed(measured) ?? [])].sort()).toEqual(['docs/performance.md', 'lib/dispatch/loop.ts', 'lib/select/sla-aware.ts']);
    expect(changed('0123456')).toBeNull();

    const f = freshness('selectors', clean(measured), changed);
    expect(f).toEqual({ state: 'stale', reason: 'changed', commit: measured, files: ['lib/dispatch/loop.ts', 'lib/select/sla-aware.ts'] });

    // Committed, re-measured at the new commit: fresh again.
    git('commit', '-q', '-am', 'the selector change');
    const remeasured = git('rev-parse', '--short', 'HEAD');
    expect(freshness('selectors', clean(remeasured), gitChangedSince(dir))).toMatchObject({ state: 'fresh' });

    // A formatter's line breaks and a new comment, committed or not, leave it fresh; a new token does not.
    write('lib/select/sla-aware.ts', '// why\nb\n');
    git('commit', '-q', '-am', 'formatted');
    write('lib/dispatch/loop.ts', '\n  b // unchanged\n');
    expect(gitChangedSince(dir)(remeasured)).toEqual([]);
    write('lib/dispatch/loop.ts', 'b; c');
    expect(gitChangedSince(dir)(remeasured)).toEqual(['lib/dispatch/loop.ts']);
  });

  it('records a run as dirty for uncommitted code, not for other benchmarks’ JSON or the tables written from it', () => {
    const { dir: repo, git: inRepo, write: put } = temporaryRepository('tw-bench-measured-');
    inRepo('init', '-q');
    for (const file of ['lib/dispatch/loop.ts', 'bench/results/selectors.json', 'BENCHMARKS.md', 'docs/performance.md']) put(file, 'a');
    inRepo('add', '.');
    inRepo('commit', '-q', '-m', 'measured here');
    put('bench/results/selectors.json', 'b');
    put('BENCHMARKS.md', 'b');
    put('docs/performance.md', 'b');
    expect(measuredAt(repo)).toMatchObject({ dirty: false });
    put('lib/dispatch/loop.ts', 'b');
    expect(measuredAt(repo)).toMatchObject({ dirty: true });
  });

  it('leaves every benchmark unjudged, failing none, in a checkout without the history (a shallow clone, or no repository)', () => {
    const shallow = mkdtempSync(join(tmpdir(), 'tw-bench-shallow-'));
    execFileSync('git', ['clone', '-q', '--depth', '1', `file://${dir}`, shallow], { stdio: 'ignore' });
    const measured = git('rev-parse', '--short', 'HEAD~1');
    expect(gitChangedSince(shallow)(measured)).toBe('no history');
    expect(gitChangedSince(tmpdir())(measured)).toBe('no history');
    // A full history that lacks the commit (a rebased branch) still counts it stale.
    expect(gitChangedSince(dir)('0123456')).toBeNull();

    const unjudged = freshness('selectors', clean(measured), gitChangedSince(shallow));
    expect(unjudged).toEqual({ state: 'unjudged', commit: measured });
    const reported = staleBenchmarks({ ...allFresh(), selectors: unjudged, e2e: freshness('e2e', clean(measured), () => 'no history') });
    expect(reported.map((r) => [r.name, r.fails])).toEqual([
      ['selectors', false],
      ['e2e', false],
    ]);
    expect(reported[0]?.message).toContain('not judged: this checkout has no history of commit');
  });
});

// ---------------------------------------------------------------------------------------------
// The declarations against the code.

/** A relative import's file, as the bundler resolves it. */
function resolveImport(from: string, spec: string): string | null {
  if (!spec.startsWith('.')) return null;
  const base = resolve(dirname(from), spec);
  return [base, `${base}.ts`, `${base}.tsx`, join(base, 'index.ts')].find((f) => existsSync(f) && statSync(f).isFile()) ?? null;
}

/** Every repository file `entries` import, directly or not (static and dynamic imports, requires). */
function importClosure(entries: readonly string[]): Set<string> {
  const seen = new Set<string>();
  const todo = entries.map((e) => join(ROOT, e));
  for (let file = todo.pop(); file !== undefined; file = todo.pop()) {
    if (seen.has(file)) continue;
    seen.add(file);
    const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
    for (const { fileName } of importedFiles) {
      const next = resolveImport(file, fileName);
      if (next) todo.push(next);
    }
  }
  return new Set([...seen].map((f) => relative(ROOT, f)));
}

/**
 * What a benchmark runs beyond what it imports: the tasks bundle carries the worker-thread runtime
 * (lib/tasks/build.ts: `taskworker/runtime`), and the dev stack builds and runs the Lambda handler
 * and the local runner (`buildRuntimeFiles`).
 */
function runs(name: BenchmarkName): Set<string> {
  const files = importClosure([`bench/${name}.ts`]);
  const also = [
    ...(files.has('lib/tasks/build.ts') ? ['lib/runtime.ts'] : []),
    ...(files.has('lib/local/dev.ts') ? ['functions/dispatcher-handler.ts', 'lib/local/runner.ts'] : []),
  ];
  for (const file of importClosure(also)) files.add(file);
  return files;
}

describe("each benchmark's declared paths (bench/staleness.ts MEASURED)", () => {
  it.each(NAMES)('%s: cover every file it runs', (name) => {
    const files = [...runs(name)];
    expect(files.length).toBeGreaterThan(10);
    const uncovered = files.filter((f) => !RECORDS_ONLY.includes(f) && !measures(name, f)).sort();
    expect(uncovered).toEqual([]);
  });

  it.each(NAMES)('%s: name only paths that exist', (name) => {
    const m = MEASURED[name];
    const missing = [...m.paths, ...(m.except ?? [])].filter((p) => !existsSync(join(ROOT, p)));
    expect(missing).toEqual([]);
  });
});
