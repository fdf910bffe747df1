/**
 * Every TypeScript snippet in README.md and docs/*.md compiles against the package's public types.
 * Each ```ts block is written as a module into a project of its own document (in a temporary
 * directory), where `taskworker`, `taskworker/cdk`, `taskworker/testing` and `taskworker/runtime`
 * resolve to the repository's sources as tsconfig.json's paths have them, and other packages to
 * the repository's node_modules; the TypeScript compiler then checks every block of every document
 * in one program, with the repository's compiler options.
 *
 * A block whose first line is a path comment (`// tasks/charge-card.ts`) is written at that path of
 * its document's project, so the document's other blocks can import it (`./tasks/charge-card`), as a
 * user's files import each other; any other block is a module of its own. A fragment declares what
 * it uses (`declare const publisher: Publisher;`).
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import ts from 'typescript';

const ROOT = resolve(__dirname, '../..');

/** The documents whose snippets are checked: README.md and every page under docs/. */
function documents(): Array<{ readonly path: string; readonly text: string }> {
  const pages = readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`);
  return ['README.md', ...pages].map((path) => ({ path, text: readFileSync(join(ROOT, path), 'utf8') }));
}

interface Snippet {
  /** The document, relative to the repository. */
  readonly doc: string;
  /** 1-based line of the block's opening fence in the document. */
  readonly fence: number;
  /** Where it is written in its document's project. */
  readonly file: string;
  readonly code: string;
}

const OPEN = /^(\s*)```(?:ts|typescript)\s*$/;
const CLOSE = /^\s*```\s*$/;
const NAMED = /^\/\/ ([\w.-]+(?:\/[\w.-]+)*\.ts)$/;

/** The ```ts blocks of a document, each with its fence's line and the file it is written to. */
function snippetsOf(doc: string, text: string): Snippet[] {
  const lines = text.split('\n');
  const snippets: Snippet[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = OPEN.exec(lines[i] as string);
    if (!open) continue;
    const indent = (open[1] as string).length;
    const end = lines.findIndex((l, j) => j > i && CLOSE.test(l));
    if (end < 0) throw new Error(`${doc}:${i + 1}: a \`\`\`ts block that is never closed`);
    const code = lines.slice(i + 1, end).map((l) => l.slice(Math.min(indent, l.length - l.trimStart().length)));
    const named = NAMED.exec(code[0] ?? '');
    snippets.push({ doc, fence: i + 1, file: named ? (named[1] as string) : `snippet-line-${i + 1}.ts`, code: `${code.join('\n')}\n` });
    i = end;
  }
  return snippets;
}

/** One compiler diagnostic, placed in its document: `docs/x.md:12 (block at line 10): TS2304: …`. */
interface Placed {
  readonly doc: string;
  readonly message: string;
}

/** Writes every snippet into its document's project and checks them all in one program. */
function check(docs: ReadonlyArray<{ readonly path: string; readonly text: string }>): { snippets: Snippet[]; diagnostics: Placed[] } {
  const dir = mkdtempSync(join(tmpdir(), 'tw-doc-snippets-'));
  const byFile = new Map<string, Snippet>();
  const snippets = docs.flatMap((d) => snippetsOf(d.path, d.text));
  for (const snippet of snippets) {
    const file = join(dir, snippet.doc.replaceAll('/', '__'), snippet.file);
    if (byFile.has(file)) throw new Error(`${snippet.doc}:${snippet.fence}: a second block named ${snippet.file}`);
    byFile.set(file, snippet);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, snippet.code);
  }
  const config = ts.readConfigFile(join(ROOT, 'tsconfig.json'), ts.sys.readFile);
  if (config.error) throw new Error(ts.flattenDiagnosticMessageText(config.error.messageText, '\n'));
  const parsed = ts.parseJsonConfigFileContent(config.config, ts.sys, ROOT);
  const options: ts.CompilerOptions = {
    ...parsed.options,
    noEmit: true,
    incremental: false,
    // Every snippet is a module of its own: top-level names of two blocks never meet.
    moduleDetection: ts.ModuleDetectionKind.Force,
    typeRoots: [join(ROOT, 'node_modules', '@types')],
  };
  const host = ts.createCompilerHost(options);
  // Packages a snippet imports (aws-cdk-lib, the AWS SDK) come from the repository's node_modules,
  // as they would from a project's own; `taskworker` and its subpaths go to the sources (paths).
  const resolveFrom = (name: string, containing: string) => ts.resolveModuleName(name, containing, options, host).resolvedModule;
  host.resolveModuleNames = (names, containing) =>
    names.map((name) => resolveFrom(name, containing) ?? (name.startsWith('.') ? undefined : resolveFrom(name, join(ROOT, 'index.ts'))));
  const program = ts.createProgram({ rootNames: [...byFile.keys()], options, host });
  const diagnostics: Placed[] = [];
  for (const [file, snippet] of byFile) {
    const source = program.getSourceFile(file);
    if (!source) throw new Error(`${snippet.doc}:${snippet.fence}: not in the program`);
    for (const d of ts.getPreEmitDiagnostics(program, source)) {
      if (d.file && resolve(d.file.fileName) !== resolve(file)) continue;
      const line = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start).line : 0;
      diagnostics.push({
        doc: snippet.doc,
        message: `${snippet.doc}:${snippet.fence + 1 + line} (block at line ${snippet.fence}): TS${d.code}: ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`,
      });
    }
  }
  return { snippets, diagnostics };
}

/** A page with a snippet broken on purpose, checked in the same program: the test can fail, and says where. */
const BROKEN = {
  path: 'docs/broken-on-purpose.md',
  text: [
    '# A page',
    '',
    '```ts',
    "import { Publisher } from 'taskworker';",
    '',
    'declare const publisher: Publisher;',
    "await publisher.publish('charge-card', { order: 'o-1' }, { delaySecond: 30 });",
    '```',
    '',
  ].join('\n'),
};

describe('TypeScript snippets in README.md and docs/', () => {
  let result: ReturnType<typeof check>;
  beforeAll(() => {
    result = check([...documents(), BROKEN]);
  }, 240_000);

  it('compile against the package’s public types (file, line and diagnostic of each failure)', () => {
    const real = result.diagnostics.filter((d) => d.doc !== BROKEN.path).map((d) => d.message);
    expect(real).toEqual([]);
  });

  it('are found in README and every page (a block the extractor missed would pass unchecked)', () => {
    const docs = new Set(result.snippets.map((s) => s.doc));
    expect(docs).toContain('README.md');
    expect(docs).toContain('docs/architecture.md');
    expect(result.snippets.length).toBeGreaterThanOrEqual(25);
    // Every ```ts fence of every document was taken as a block.
    for (const { path, text } of documents()) {
      const fences = text.split('\n').filter((l) => OPEN.test(l)).length;
      expect({ path, blocks: result.snippets.filter((s) => s.doc === path).length }).toEqual({ path, blocks: fences });
    }
  });

  it('names the document, the line and the diagnostic of a snippet broken on purpose', () => {
    const broken = result.diagnostics.filter((d) => d.doc === BROKEN.path).map((d) => d.message);
    expect(broken).toEqual([
      expect.stringMatching(
        /^docs\/broken-on-purpose\.md:7 \(block at line 3\): TS2561: .*'delaySecond' does not exist in type 'PublishOptions'/,
      ),
    ]);
  });

  it('writes a block named by its first line at that path, for the others to import', () => {
    const [named] = snippetsOf('x.md', '```ts\n// tasks/a.ts\nexport default 1;\n```\n\n  ```ts\n  const b = 2;\n  ```\n');
    expect(named).toMatchObject({ file: 'tasks/a.ts', fence: 1 });
    expect(snippetsOf('x.md', '  ```ts\n  const b = 2;\n  ```\n')).toEqual([
      { doc: 'x.md', fence: 1, file: 'snippet-line-1.ts', code: 'const b = 2;\n' },
    ]);
  });
});
