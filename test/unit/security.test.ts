import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { EnvelopeError } from '../../lib/errors';
import { PACKAGE_ROOT } from '../../lib/tasks/build';
import { createRegistry } from '../../lib/tasks/registry';
import { defineTask } from '../../lib/tasks/task';
import { readArchiveRecord } from '../../lib/wire/archive-record';
import { decodeEnvelope } from '../../lib/wire/envelope';
import { appConfig } from '../helpers/factories';
import { world } from '../helpers/world';

/** Task names that look like code: paths, module specifiers, URLs, prototype members. */
const CODE_LIKE = [
  '../tasks/ok',
  './ok',
  '/etc/passwd',
  'C:\\tasks\\ok.js',
  'node:child_process',
  '@aws-sdk/client-sqs',
  'file:///etc/passwd',
  'data:text/javascript,process.exit(1)',
  'https://example.com/x.js',
  '__proto__',
  'child_process',
  'fs',
  'ok.ts',
  'ok.js',
  'constructor',
  'toString',
  'hasOwnProperty',
  'valueOf',
  'prototype',
];

describe('message content selects registered task names and nothing else', () => {
  it('never resolves a code-like name: the codec refuses paths and specifiers, the registry knows only its own names', () => {
    const config = appConfig();
    const registry = createRegistry([defineTask({ name: 'ok', queue: 'urgent', timeLimitSeconds: 5, run: () => undefined })], config);
    for (const task of CODE_LIKE) {
      let name: string | undefined;
      try {
        name = decodeEnvelope(JSON.stringify({ task }), { messageId: 'm', sentTimestamp: 1 }).task;
      } catch (error) {
        expect(error).toBeInstanceOf(EnvelopeError);
        expect((error as EnvelopeError).code).toBe('bad-task-name');
      }
      // Names the codec lets through (letters, digits, . _ -) are looked up in a Map: own entries only.
      if (name !== undefined) expect([name, registry.get(name)]).toEqual([task, undefined]);
    }
    expect(registry).toBeInstanceOf(Map);
  });

  it('archives every code-like name (as malformed or unknown-task) without running anything', async () => {
    const w = world([{ name: 'ok', queue: 'urgent', timeLimitSeconds: 5, run: () => undefined }]);
    for (const task of CODE_LIKE) await w.send('urgent', JSON.stringify({ task, payload: {} }));
    await w.run();
    expect(w.runs).toEqual([]);
    const reasons = w.sqs.peek(w.urls.archive).map((m) => readArchiveRecord(m.attributes)?.reason);
    expect(reasons).toHaveLength(CODE_LIKE.length);
    expect(new Set(reasons)).toEqual(new Set(['malformed', 'unknown-task']));
  });
});

/**
 * Every place lib/ and functions/ load or start code: each takes its path from the build or the
 * deployment (the artifact directory, the config file, an environment variable set by the stack),
 * never from a message. A new one fails this test until it is reviewed and listed here.
 */
const CODE_LOADING_SITES: Record<string, string> = {
  "lib/tasks/build.ts: const exported = loadModule({ file: relative(process.cwd(), file) || file, load: () => require(outfile) }, 'config file');":
    'the config module, compiled by esbuild at build time (CLI, CDK synth); never in a dispatcher',
  'lib/tasks/build.ts: .map((file) => `{ file: ${JSON.stringify(shown(file))}, load: () => require(${JSON.stringify(file)}) }`)':
    "the generated bundle entry's text: each task module of the tasks directory, listed at build time and bundled by esbuild",
  "lib/tasks/build.ts: `const configModule = loadModule({ file: ${JSON.stringify(shown(configFile))}, load: () => require(${JSON.stringify(configFile)}) }, 'config file');`,":
    "the generated bundle entry's text: the config module given to the build, bundled by esbuild",
  "lib/tasks/build.ts: return optionalDependency('esbuild', 'building task bundles', () => require('esbuild') as typeof Esbuild);":
    'esbuild, by its fixed package name, loaded only when a bundle is built (it is an optional peer dependency)',
  "lib/local/emulators.ts: dynalite: () => (require('dynalite') as { default?: typeof Dynalite }).default ?? (require('dynalite') as typeof Dynalite),":
    'the DynamoDB emulator, by its fixed package name, for taskworker dev (an optional peer dependency)',
  "lib/local/emulators.ts: fauxqs: () => import('fauxqs'),":
    'the SQS emulator, by its fixed package name, for taskworker dev (an optional peer dependency; ES modules only)',
  "lib/aws/cloudwatch-clients.ts: sdk = require('@aws-sdk/client-cloudwatch') as typeof CloudWatch;":
    "the CloudWatch client, by its fixed package name, for status's oldest-message age (an optional peer dependency)",
  "lib/aws/job-log-readers.ts: sdk = require('@aws-sdk/client-cloudwatch-logs') as typeof CloudWatchLogs;":
    'the CloudWatch Logs client, by its fixed package name, for jobs logs on AWS (an optional peer dependency)',
  "functions/dispatcher-handler.ts: sdk: () => require('@aws-sdk/client-s3'),":
    'the S3 client, by its fixed package name, bundled into the artifact and evaluated when the first claim-checked payload comes',
  'lib/adapters/s3.ts: const loaded = (await import(S3_MODULE)) as typeof S3 & { default?: typeof S3 };':
    'the S3 client, by its fixed package name (a constant, kept out of a literal so bundlers leave it), for claim-checked payloads (an optional peer dependency); import(), which the ES build has and require is not',
  "lib/trace/otel.ts: return require('@opentelemetry/api') as OtelApi;":
    'the OpenTelemetry API, by its fixed package name (a literal, so a bundler carries it where it is installed), for traces (an optional peer dependency); an ES module build, which has no require, resolves the same name from the working directory',
  'lib/tasks/bundle.ts: exports = require(path) as Partial<TaskBundleExports>;':
    'the tasks bundle: TASKWORKER_TASKS_BUNDLE (set by the stack) or tasks.cjs beside the handler',
  'lib/run/thread-pool-executor.ts: const worker = new Worker(this.options.bundlePath, {': 'pool threads run the same tasks bundle',
  "lib/local/runner.ts: const handlerModule = require(join(__dirname, 'index.js')) as {":
    'the local runner loads the handler built beside it',
  "lib/local/dispatcher-processes.ts: import { type ChildProcess, fork } from 'node:child_process';":
    'taskworker dev starts the local runner it built (fork), and stops it',
  "lib/local/dev.ts: import type { ChildProcess } from 'node:child_process';":
    "the type of the dev's dispatcher processes (the stack lists them; dispatcher-processes.ts starts them)",
  "lib/local/fleet.ts: import type { ChildProcess } from 'node:child_process';":
    "the type of the dev's dispatcher processes (the fleet keeps them as containers; dispatcher-processes.ts starts them)",
};

/** eval, the Function constructor, dynamic import, require, worker threads, child processes, the vm module. */
const CODE_LOADING =
  /\beval\s*\(|\bnew\s+Function\b|(?<![.\w])Function\s*\(|\bimport\s*\(|\brequire\s*\(|\bnew\s+Worker\s*\(|['"](?:node:)?(?:vm|child_process)['"]/;

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) return sources(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

describe('no code is evaluated or loaded from data', () => {
  it('lib/ and functions/ have no eval, new Function or vm, and load code (require, import(), threads, processes) only at the reviewed sites', () => {
    const found: string[] = [];
    for (const file of [...sources(join(PACKAGE_ROOT, 'lib')), ...sources(join(PACKAGE_ROOT, 'functions'))]) {
      for (const line of readFileSync(file, 'utf8').split('\n')) {
        const code = line.trim();
        if (code.startsWith('//') || code.startsWith('*') || code.startsWith('/*')) continue;
        if (CODE_LOADING.test(code)) found.push(`${relative(PACKAGE_ROOT, file)}: ${code}`);
      }
    }
    expect(found.sort()).toEqual(Object.keys(CODE_LOADING_SITES).sort());
  });
});
