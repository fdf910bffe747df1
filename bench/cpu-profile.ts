/**
 * Where a benchmark's CPU went: reads the `.cpuprofile` files `node --cpu-prof` wrote and prints,
 * per file, the functions with the most self time and the shares of the parts named in
 * {@link PARTS} (dynalite's expression parsing, the rest of dynalite, the AWS SDK, Node's own
 * HTTP and crypto, this repository's lib/, …).
 *
 *   NODE_OPTIONS="--cpu-prof --cpu-prof-dir=/tmp/prof" npm run -s bench:e2e -- --sections full --peer-rounds 1
 *   npm run -s bench:cpu-profile -- /tmp/prof [--top 15] [--part 'taskworker lib/'] [--json]
 *
 * bench:e2e profiles its own measured parts (each consumer's run, the emulators' process beside it,
 * publishing and the threads' load left out), on any Node:
 *
 *   npm run -s bench:e2e -- --sections full,trigger --peer-rounds 1 --profile /tmp/prof
 *
 * Node 20 refuses `--cpu-prof` in NODE_OPTIONS (22 and 24 take it): there, run the bundle
 * `scripts/run-ts.mjs` leaves in dist/run/ with the flag (the emulators' child is then not profiled):
 *
 *   npm run -s bench:e2e -- --sections off --rounds 1 --tasks 100 && node --cpu-prof --cpu-prof-dir=/tmp/prof dist/run/e2e.js --sections off
 *
 * The dispatcher's process and the emulators' (a child process) each write their own file; worker
 * threads write one each too.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { round } from './prices';

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
  readonly children?: readonly number[];
}

interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
  readonly startTime: number;
  readonly endTime: number;
}

/** A part of the code, by the script it runs in (first match wins). */
export const PARTS: ReadonlyArray<readonly [string, RegExp]> = [
  ['dynalite: expression parsing', /dynalite\/db\/(condition|update|projection)Parser\.js/],
  ['dynalite: other', /node_modules\/dynalite\//],
  [
    'level / memdown (dynalite storage)',
    /node_modules\/(level|memdown|abstract-leveldown|levelup|subleveldown|encoding-down|deferred-leveldown|lock|once|big\.js)/,
  ],
  ['fauxqs', /node_modules\/fauxqs\//],
  ['AWS SDK', /node_modules\/@(aws-sdk|smithy|aws-crypto)\//],
  ['Powertools', /node_modules\/@aws-lambda-powertools\//],
  ['other packages', /node_modules\//],
  ['taskworker lib/', /\/lib\/|dist\/run\/e2e\.js/],
  ['Node: http, net, stream', /^node:(_http|http|net|stream|internal\/(http|stream|streams|net))/],
  ['Node: crypto', /^node:(crypto|internal\/crypto)/],
  ['Node: other', /^node:/],
  ['garbage collector', /^\(garbage collector\)$/],
  ['idle', /^\((idle|program)\)$/],
];

export interface ProfileSummary {
  readonly file: string;
  readonly seconds: number;
  /** Busy ms (idle excluded) and its shares by part. */
  readonly busyMs: number;
  readonly parts: Record<string, number>;
  readonly top: ReadonlyArray<{ readonly fn: string; readonly where: string; readonly ms: number; readonly share: number }>;
}

const partOf = (url: string, fn: string) => {
  const key = url === '' ? `(${fn.replace(/^\(|\)$/g, '')})` : url;
  return PARTS.find(([, test]) => test.test(key))?.[0] ?? (url === '' ? 'native (writev, postMessage, microtasks, …)' : 'other');
};

/** Self time by function and by part, from one profile (the bundle's functions keep their names). */
export function summarize(file: string, profile: CpuProfile, top = 15, part?: string): ProfileSummary {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  profile.samples.forEach((id, i) => {
    self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000);
  });
  const fns = new Map<string, { fn: string; where: string; ms: number; part: string }>();
  for (const [id, ms] of self) {
    const frame = (byId.get(id) as ProfileNode).callFrame;
    const where =
      frame.url === ''
        ? ''
        : `${frame.url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*\/(dist|lib|bench)\//, '$1/')}:${frame.lineNumber + 1}`;
    const key = `${frame.functionName}@${where}`;
    const entry = fns.get(key) ?? { fn: frame.functionName || '(anonymous)', where, ms: 0, part: partOf(frame.url, frame.functionName) };
    entry.ms += ms;
    fns.set(key, entry);
  }
  const all = [...fns.values()];
  const busy = all.filter((f) => f.part !== 'idle').reduce((a, f) => a + f.ms, 0);
  const parts: Record<string, number> = {};
  for (const f of all) if (f.part !== 'idle') parts[f.part] = (parts[f.part] ?? 0) + f.ms;
  return {
    file,
    seconds: round((profile.endTime - profile.startTime) / 1e6, 1),
    busyMs: Math.round(busy),
    parts: Object.fromEntries(
      Object.entries(parts)
        .sort((a, b) => b[1] - a[1])
        .map(([k, ms]) => [k, round(ms / busy, 3)]),
    ),
    top: all
      .filter((f) => f.part !== 'idle' && (part === undefined || f.part === part))
      .sort((a, b) => b.ms - a.ms)
      .slice(0, top)
      .map((f) => ({ fn: f.fn, where: f.where, ms: Math.round(f.ms), share: round(f.ms / busy, 3) })),
  };
}

function main(): void {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { top: { type: 'string', default: '15' }, part: { type: 'string' }, json: { type: 'boolean', default: false } },
  });
  const files = positionals.flatMap((p) =>
    statSync(p).isDirectory()
      ? readdirSync(p)
          .filter((f) => f.endsWith('.cpuprofile'))
          .map((f) => join(p, f))
      : [p],
  );
  const summaries = files.map((f) => summarize(f, JSON.parse(readFileSync(f, 'utf8')) as CpuProfile, Number(values.top), values.part));
  if (values.json) {
    process.stdout.write(`${JSON.stringify(summaries, null, 2)}\n`);
    return;
  }
  for (const s of summaries.sort((a, b) => b.busyMs - a.busyMs)) {
    const lines = [
      `${s.file}: ${s.seconds} s, ${s.busyMs} ms busy`,
      `  by part: ${Object.entries(s.parts)
        .map(([k, v]) => `${k} ${round(v * 100, 1)} %`)
        .join(', ')}`,
      ...s.top.map((f) => `  ${String(f.ms).padStart(7)} ms ${`${round(f.share * 100, 1)} %`.padStart(7)}  ${f.fn}  ${f.where}`),
    ];
    process.stdout.write(`${lines.join('\n')}\n\n`);
  }
}

if (require.main === module) main();
