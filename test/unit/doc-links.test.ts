/**
 * README.md and docs/*.md point at things that exist: every relative link reaches a file (and its
 * `#anchor` a heading there, as GitHub names headings), and every repository path a page names in
 * backticks (`lib/dispatch/loop.ts`, `test/chaos/`) is a file or folder of the repository. Pages
 * that walk through the code go stale the day a file moves; this says which page and line.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative, resolve } from 'node:path';

const ROOT = resolve(__dirname, '../..');

function documents(): string[] {
  const pages = readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`);
  return ['README.md', ...pages];
}

/** The lines outside fenced code blocks, with their 1-based numbers. */
function prose(text: string): Array<{ readonly line: number; readonly text: string }> {
  const out: Array<{ line: number; text: string }> = [];
  let fenced = false;
  text.split('\n').forEach((line, i) => {
    if (/^\s*```/.test(line)) fenced = !fenced;
    else if (!fenced) out.push({ line: i + 1, text: line });
  });
  return out;
}

/** A heading's anchor as GitHub makes it: lowercase, punctuation dropped, spaces to hyphens. */
function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** Every anchor a Markdown file's headings make (a repeated one gets -1, -2, … as on GitHub). */
function anchorsOf(file: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const { text } of prose(readFileSync(file, 'utf8'))) {
    const heading = /^#{1,6}\s+(.*)$/.exec(text);
    if (!heading) continue;
    const base = anchorOf(heading[1] as string);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

/** The top-level folders a page may name a path under. */
const REPOSITORY_ROOTS = /^(?:lib|cli|dashboard|functions|infra|bench|test|scripts|templates|examples|schema|docs|tools|types)\//;

describe('links and paths in README.md and docs/', () => {
  const problems: string[] = [];
  beforeAll(() => {
    for (const doc of documents()) {
      const file = join(ROOT, doc);
      for (const { line, text } of prose(readFileSync(file, 'utf8'))) {
        for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
          if (/^[a-z]+:/.test(target as string)) continue;
          const [path, anchor] = (target as string).split('#') as [string, string | undefined];
          const reached = path === '' ? file : normalize(join(dirname(file), decodeURIComponent(path)));
          if (!existsSync(reached)) {
            problems.push(`${doc}:${line}: ${target} reaches nothing (${relative(ROOT, reached)})`);
            continue;
          }
          if (anchor !== undefined && reached.endsWith('.md') && !anchorsOf(reached).has(anchor)) {
            problems.push(`${doc}:${line}: ${target}: ${relative(ROOT, reached)} has no heading #${anchor}`);
          }
        }
        for (const [, named] of text.matchAll(/`([^`\s]+)`/g)) {
          const path = (named as string).replace(/[.,:;)]+$/, '');
          if (!REPOSITORY_ROOTS.test(path) || /[*<>…{}]/.test(path)) continue;
          if (!existsSync(join(ROOT, path))) problems.push(`${doc}:${line}: \`${path}\` is not in the repository`);
        }
      }
    }
  });

  it('reach files, headings and repository paths that exist', () => {
    expect(problems).toEqual([]);
  });

  it('makes anchors as GitHub does', () => {
    expect(anchorOf('Against a running `taskworker dev`')).toBe('against-a-running-taskworker-dev');
    expect(anchorOf('The tour: `npm start` in this repository')).toBe('the-tour-npm-start-in-this-repository');
    expect(anchorOf('Limits: at most N at once, or N a second, across the fleet')).toBe(
      'limits-at-most-n-at-once-or-n-a-second-across-the-fleet',
    );
  });
});
