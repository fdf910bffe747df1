/**
 * When a benchmark's JSON no longer describes the code: the rule, in one place.
 *
 * Every `bench/results/NAME.json` records the commit it was measured at (`measuredAt`, written by
 * bench/results.ts). {@link MEASURED} declares, per benchmark, the paths whose code its figures
 * come from. A JSON is **stale** when
 *
 * - it records no commit (written before commits were recorded), or
 * - it was measured with uncommitted changes (`dirty`: no commit holds the code it measured), or
 * - its commit is not in this checkout's history (a rebased branch), or
 * - a file under its paths differs from that commit now: `git diff --name-only <commit>`, the
 *   working tree against the commit, which is what changed in commits since (`<commit> HEAD`) and
 *   what is not committed yet, less a file put back as it was. Untracked files are not counted, as
 *   `measuredAt.dirty` does not count them: nothing tracked imports them. Nor is a TypeScript or
 *   JavaScript file whose tokens are what they were ({@link sameCode}): a formatter's line breaks or
 *   a comment change nothing a benchmark runs.
 *
 * What follows from it:
 *
 * - a **simulation** benchmark (deterministic, minutes on a laptop) must be fresh:
 *   `npm run bench:tables -- --check` and test/unit/bench-tables.test.ts (so `npm test` and CI)
 *   fail, naming the benchmark, its commit, the changed files and the command that re-measures it;
 * - an **emulator** benchmark (timings of real processes, or an AWS model fed by them) that is stale
 *   does not fail: each of its generated blocks in BENCHMARKS.md and docs/performance.md carries a
 *   line saying so and how to re-measure (bench/tables.ts writes it), and the check prints it.
 *
 * A checkout without the history to judge by (not a git repository, or a shallow clone missing the
 * commit, as some CI systems check out) leaves every benchmark **unjudged**: nothing fails on it, the
 * check says so in one line, and the documents' Stale lines are neither required nor refused. The
 * simulation's figures are still held to the code there: test/unit/bench-tables.test.ts runs its
 * check cell again.
 *
 * To re-measure, commit the code first, then run the benchmark (a run on uncommitted code is stale
 * by the second rule), then commit the JSON and `npm run bench:tables`'s output.
 *
 * test/unit/bench-staleness.test.ts holds the declarations to the code: every repository file a
 * benchmark imports (or builds and runs: the tasks bundle's runtime, the dev stack's handler) is under
 * its paths, and every declared path exists.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as ts from 'typescript';
import type { MeasuredAt } from './results';

export type BenchmarkName =
  | 'selectors'
  | 'e2e'
  | 'idle'
  | 'scheduled'
  | 'tracking'
  | 'flows'
  | 'events'
  | 'payloads'
  | 'limits'
  | 'reality'
  | 'load'
  | 'mixed'
  | 'steps'
  | 'keys';

/** What a benchmark's figures come from. */
export interface Measured {
  /** `simulation`: deterministic, and must be fresh. `emulators`: real processes; stale is said, not failed. */
  readonly kind: 'simulation' | 'emulators';
  /** Repository paths whose code the figures come from: a folder ends with `/`, anything else is one file. */
  readonly paths: readonly string[];
  /** Paths under {@link paths} the benchmark does not run. */
  readonly except?: readonly string[];
}

/**
 * Parts of lib/ no emulator benchmark runs: the operator's queries and the dashboard API, the test
 * kit, and the public entry point's re-exports (the benchmarks import the modules themselves).
 */
const UNRUN = ['lib/operate/', 'lib/testing/', 'lib/index.ts'];
/** The in-memory stores: run only where an emulator benchmark also simulates (e2e, idle, reality). */
const UNRUN_NO_FAKES = [...UNRUN, 'lib/fakes/'];
/**
 * The emulators (dynalite, fauxqs), the AWS SDK and the peers (sqs-consumer, Powertools) that an
 * emulator benchmark runs are the versions package-lock.json pins.
 */
const LOCK = 'package-lock.json';

export const MEASURED: { readonly [K in BenchmarkName]: Measured } = {
  // bench/sim drives the dispatcher's own invocation (lib/invocation, lib/dispatch, the selectors of
  // lib/select, settle and tracking on the in-memory stores) on a simulated SQS and a virtual clock;
  // its tasks are simulated, so the thread pool, the bundler and the AWS adapters are not run.
  selectors: {
    kind: 'simulation',
    paths: [
      'bench/selectors.ts',
      'bench/sim/',
      'bench/prices.ts',
      'lib/dispatch/',
      'lib/select/',
      'lib/invocation/',
      'lib/settle/',
      'lib/track/',
      'lib/policy/',
      'lib/wire/',
      'lib/events/',
      'lib/trace/',
      'lib/run/attempt.ts',
      'lib/run/heartbeat.ts',
      'lib/run/memory-guard.ts',
      'lib/run/executor-types.ts',
      'lib/tasks/backoff.ts',
      'lib/tasks/registry.ts',
      'lib/tasks/retry-policy.ts',
      'lib/tasks/task.ts',
      'lib/layout/aws-limits.ts',
      'lib/layout/payloads.ts',
      'lib/layout/queue-url.ts',
      'lib/layout/queues.ts',
      'lib/layout/s3-limits.ts',
      'lib/layout/sqs-limits.ts',
      'lib/layout/topics.ts',
      'lib/fakes/memory-controls.ts',
      'lib/fakes/memory-limits.ts',
      'lib/claim-check.ts',
      'lib/clock.ts',
      'lib/config/',
      'lib/deadlines.ts',
      'lib/errors.ts',
      'lib/hook-types.ts',
      'lib/ports.ts',
      'lib/random.ts',
      'lib/retry-entries.ts',
      'lib/wake-up.ts',
    ],
  },
  // The real DispatcherRuntime in-process on the emulators against a raw loop, sqs-consumer and the
  // Lambda trigger with Powertools (bench/peers); its AWS latency model and idle cost use bench/sim.
  e2e: {
    kind: 'emulators',
    paths: ['bench/e2e.ts', 'bench/critical-path.ts', 'bench/meter.ts', 'bench/prices.ts', 'bench/peers/', 'bench/sim/', 'lib/', LOCK],
    except: UNRUN,
  },
  // taskworker dev's stack (built handler from functions/, the local Lambda service of lib/local) idle
  // and woken; its under-load rows are simulated (bench/sim).
  idle: {
    kind: 'emulators',
    paths: ['bench/idle.ts', 'bench/prices.ts', 'bench/sim/', 'lib/', 'functions/', LOCK],
    except: UNRUN,
  },
  // Write units per task and tracking mode: the real dispatcher in-process on the emulators.
  tracking: {
    kind: 'emulators',
    paths: ['bench/tracking.ts', 'bench/tracking-rows.ts', 'bench/one-queue.ts', 'bench/prices.ts', 'lib/', LOCK],
    except: UNRUN_NO_FAKES,
  },
  // Durable steps, sleeps and token waits: the real dispatcher in-process on the emulators; the peers from list prices.
  steps: {
    kind: 'emulators',
    paths: ['bench/steps.ts', 'bench/one-queue.ts', 'bench/meter.ts', 'bench/prices.ts', 'lib/', LOCK],
    except: UNRUN,
  },
  // Keys: what each rule costs, the real dispatcher in-process on the emulators; the fairness scenario on bench/sim's clock and the in-memory stores.
  keys: {
    kind: 'emulators',
    paths: ['bench/keys.ts', 'bench/one-queue.ts', 'bench/meter.ts', 'bench/prices.ts', 'bench/sim/', 'lib/', LOCK],
    except: UNRUN,
  },
  scheduled: {
    kind: 'emulators',
    paths: ['bench/scheduled.ts', 'bench/one-queue.ts', 'bench/meter.ts', 'bench/prices.ts', 'lib/', LOCK],
    except: UNRUN_NO_FAKES,
  },
  flows: {
    kind: 'emulators',
    paths: ['bench/flows.ts', 'bench/one-queue.ts', 'bench/meter.ts', 'bench/prices.ts', 'lib/', LOCK],
    except: UNRUN_NO_FAKES,
  },
  events: {
    kind: 'emulators',
    paths: ['bench/events.ts', 'bench/meter.ts', 'bench/prices.ts', 'lib/', LOCK],
    except: UNRUN_NO_FAKES,
  },
  payloads: {
    kind: 'emulators',
    paths: ['bench/payloads.ts', 'bench/meter.ts', 'bench/prices.ts', 'lib/', LOCK],
    except: UNRUN_NO_FAKES,
  },
  limits: {
    kind: 'emulators',
    paths: ['bench/limits.ts', 'bench/meter.ts', 'bench/prices.ts', 'lib/', LOCK],
    except: UNRUN_NO_FAKES,
  },
  // The simulation's predictions against the DispatcherRuntime on the emulators, same workload.
  reality: {
    kind: 'emulators',
    paths: ['bench/reality.ts', 'bench/meter.ts', 'bench/prices.ts', 'bench/sim/', 'lib/', LOCK],
    except: UNRUN,
  },
  load: {
    kind: 'emulators',
    paths: ['bench/load.ts', 'lib/', 'functions/', LOCK],
    except: UNRUN_NO_FAKES,
  },
  // taskworker dev's stack invoked on demand, as deployed; the same cases on bench/sim first.
  mixed: {
    kind: 'emulators',
    paths: ['bench/mixed.ts', 'bench/prices.ts', 'bench/sim/', 'lib/', 'functions/', LOCK],
    except: UNRUN,
  },
};

/**
 * bench/results.ts only records where a benchmark ran (`measuredAt`): every benchmark imports it,
 * and no figure depends on it.
 */
export const RECORDS_ONLY: readonly string[] = ['bench/results.ts'];

const under = (file: string, path: string) => (path.endsWith('/') ? file.startsWith(path) : file === path);

/** Whether `file` (a repository path) is code the benchmark's figures come from. */
export function measures(name: BenchmarkName, file: string): boolean {
  const m = MEASURED[name];
  return m.paths.some((p) => under(file, p)) && !(m.except ?? []).some((p) => under(file, p));
}

/** Its results file, from the repository's root. */
export const resultsFile = (name: BenchmarkName) => `bench/results/${name}.json`;

/** The command that re-measures it and rewrites the Markdown from the new JSON. */
export const remeasure = (name: BenchmarkName) => `npm run -s bench:${name} -- --json > ${resultsFile(name)} && npm run bench:tables`;

/**
 * The repository files that differ now from `commit` (committed since, or not committed yet), null
 * when the commit cannot be found in a full history, or 'no history' when the checkout has none to
 * look in (not a git repository, or a shallow clone). Injected in tests; {@link gitChangedSince} in use.
 */
export type ChangedSince = (commit: string) => readonly string[] | null | 'no history';

/** Files whose code {@link sameCode} can compare: what TypeScript parses. */
const CODE = /\.(?:[cm]?ts|tsx|[cm]?js|jsx)$/;

/**
 * Whether two texts of the source file `path` are the same program: the same tokens, as the parser
 * reads them, in the same order, less a trailing comma (`[a, b,]` is `[a, b]`; an elision such as
 * `[a,,]` or `[,]` keeps its commas). Layout and comments differ freely; a literal (string, template,
 * regular expression, number) is one token with its text, so a change inside one counts.
 */
export function sameCode(path: string, before: string, after: string): boolean {
  if (before === after) return true;
  const tokens = (text: string) => {
    const file = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);
    const out: string[] = [];
    const visit = (node: ts.Node) => {
      if (node.kind >= ts.SyntaxKind.FirstJSDocNode && node.kind <= ts.SyntaxKind.LastJSDocNode) return;
      const children = node.getChildren(file);
      if (children.length === 0) out.push(`${node.kind}:${node.getText(file)}`);
      else for (const child of children) visit(child);
    };
    visit(file);
    const closers = new Set([ts.SyntaxKind.CloseBracketToken, ts.SyntaxKind.CloseParenToken, ts.SyntaxKind.CloseBraceToken]);
    const kind = (token: string | undefined) => Number(token?.slice(0, token.indexOf(':')));
    const comma = ts.SyntaxKind.CommaToken;
    return out.filter((token, i) => {
      if (kind(token) !== comma || !closers.has(kind(out[i + 1]))) return true;
      return kind(out[i - 1]) === comma || kind(out[i - 1]) === ts.SyntaxKind.OpenBracketToken;
    });
  };
  const a = tokens(before);
  const b = tokens(after);
  return a.length === b.length && a.every((token, i) => token === b[i]);
}

/** {@link ChangedSince} from git in the checkout at `root`, each commit asked once. */
export function gitChangedSince(root: string): ChangedSince {
  const asked = new Map<string, readonly string[] | null | 'no history'>();
  const git = (args: readonly string[]) =>
    execFileSync('git', args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], maxBuffer: 64 * 1024 * 1024 });
  let history: boolean | undefined;
  const hasHistory = () => {
    if (history === undefined) {
      try {
        history = git(['rev-parse', '--is-shallow-repository']).trim() === 'false';
      } catch {
        history = false;
      }
    }
    return history;
  };
  return (commit) => {
    let files = asked.get(commit);
    if (files === undefined) {
      try {
        const full = git(['rev-parse', '--verify', '--quiet', `${commit}^{commit}`]).trim();
        const read = (text: () => string) => {
          try {
            return text();
          } catch {
            return null; // added or deleted since: changed
          }
        };
        const reformatted = (file: string) => {
          if (!CODE.test(file)) return false;
          const before = read(() => git(['show', `${full}:${file}`]));
          const after = read(() => readFileSync(join(root, file), 'utf8'));
          return before !== null && after !== null && sameCode(file, before, after);
        };
        files = git(['diff', '--name-only', '--no-renames', full, '--'])
          .split('\n')
          .filter((line) => line.length > 0 && !reformatted(line));
      } catch {
        files = hasHistory() ? null : 'no history';
      }
      asked.set(commit, files);
    }
    return files;
  };
}

/** Whether a benchmark's JSON still describes the code, and if not, why. */
export type Freshness =
  | { readonly state: 'fresh'; readonly commit: string }
  /** No JSON: the benchmark has not been measured (only a benchmark bench/tables.ts lets be absent). */
  | { readonly state: 'absent' }
  /** The checkout has no history to judge by (not a git repository, or a shallow clone). */
  | { readonly state: 'unjudged'; readonly commit: string }
  | {
      readonly state: 'stale';
      readonly reason: 'no commit' | 'dirty' | 'unknown commit' | 'changed';
      readonly commit: string | null;
      /** The files under its paths that differ from its commit (reason `changed`), sorted. */
      readonly files: readonly string[];
    };

/** The rule above, for one benchmark's `measuredAt` (undefined: its JSON records none, or there is no JSON). */
export function freshness(name: BenchmarkName, measuredAt: MeasuredAt | undefined, changedSince: ChangedSince, absent = false): Freshness {
  if (absent) return { state: 'absent' };
  const commit = measuredAt?.commit ?? null;
  if (commit === null) return { state: 'stale', reason: 'no commit', commit, files: [] };
  if (measuredAt?.dirty !== false) return { state: 'stale', reason: 'dirty', commit, files: [] };
  const changed = changedSince(commit);
  if (changed === 'no history') return { state: 'unjudged', commit };
  if (changed === null) return { state: 'stale', reason: 'unknown commit', commit, files: [] };
  const files = changed.filter((file) => measures(name, file)).sort();
  return files.length === 0 ? { state: 'fresh', commit } : { state: 'stale', reason: 'changed', commit, files };
}

/** How many changed files a message names before it counts the rest. */
const FILES_NAMED = 20;

/** Why it is stale, in a clause: "measured at commit X, and N files it measures changed since: …". */
function why(f: Extract<Freshness, { state: 'stale' }>): string {
  switch (f.reason) {
    case 'no commit':
      return 'its JSON records no commit, so nothing ties its figures to the code';
    case 'dirty':
      return `measured at commit ${f.commit} with uncommitted changes, so no commit holds the code it measured`;
    case 'unknown commit':
      return `measured at commit ${f.commit}, which is not in this checkout's history`;
    case 'changed': {
      const named = f.files.slice(0, FILES_NAMED).join(', ');
      const more = f.files.length > FILES_NAMED ? `, and ${f.files.length - FILES_NAMED} more` : '';
      return `measured at commit ${f.commit}; ${f.files.length} file${f.files.length === 1 ? '' : 's'} it measures changed since: ${named}${more}`;
    }
  }
}

/** One benchmark that is stale or absent, as the check reports it; `fails` for a simulation. */
export interface Staleness {
  readonly name: BenchmarkName;
  readonly fails: boolean;
  readonly message: string;
}

/** Every benchmark that is not fresh: the simulations first (they fail), then the rest. */
export function staleBenchmarks(all: Readonly<Record<BenchmarkName, Freshness>>): Staleness[] {
  const out: Staleness[] = [];
  for (const name of Object.keys(MEASURED) as BenchmarkName[]) {
    const f = all[name];
    const fails = MEASURED[name].kind === 'simulation';
    if (f.state === 'fresh') continue;
    if (f.state === 'unjudged') {
      const message = `${resultsFile(name)} is not judged: this checkout has no history of commit ${f.commit} (not a git repository, or a shallow clone)`;
      out.push({ name, fails: false, message });
      continue;
    }
    const what = fails ? 'a simulation: it must be re-measured' : 'on the emulators: the Markdown says so, the check does not fail';
    const message =
      f.state === 'absent'
        ? `${resultsFile(name)} is absent (not measured yet; ${what}). Measure it: ${remeasure(name)}`
        : `${resultsFile(name)} is stale (${what}): ${why(f)}. Re-measure it: ${remeasure(name)}`;
    out.push({ name, fails, message });
  }
  return out.sort((a, b) => Number(b.fails) - Number(a.fails));
}

/** The line a stale benchmark's generated blocks carry under their source line (null when fresh). */
export function staleNote(name: BenchmarkName, f: Freshness): string | null {
  if (f.state !== 'stale') return null;
  const since =
    f.reason === 'changed'
      ? `files it measures have changed since commit ${f.commit} (\`npm run bench:tables -- --check\` names them)`
      : f.reason === 'no commit'
        ? 'its JSON records no commit, so nothing ties these figures to the code'
        : f.reason === 'dirty'
          ? `it was measured with uncommitted changes at commit ${f.commit}`
          : `commit ${f.commit} is not in this checkout's history`;
  return `**Stale:** ${since}. Re-measure: \`${remeasure(name)}\`.`;
}
