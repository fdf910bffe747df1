/**
 * taskworker as a new team meets it: `npm pack` of both packages (taskworker, and taskworker-toolkit
 * from dist/toolkit), then projects in fresh directories outside the repository that install the
 * tarballs (no link to the sources, no path aliases) and use them the ways TypeScript and Node teams
 * load packages. Everything asserted comes from what those projects' own processes print and produce.
 */
import { type ChildProcess, execFile, execFileSync, spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, relative, sep } from 'node:path';
import { promisify } from 'node:util';
import { CreateBucketCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { CreateTopicCommand, SNSClient } from '@aws-sdk/client-sns';
import { CreateQueueCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { type Emulators, startEmulators } from '../../lib/local/emulators';
import { ensureBuilt } from '../helpers/built';
import { eventually } from '../helpers/run';
import { haveTools, TOOLS } from '../helpers/tools';

const ROOT = join(__dirname, '..', '..');

// Every test here waits on the team's own processes (npm, tsc, node, cdk, a dev stack), whose time
// follows the machine's speed: a bound of minutes per test, where jest's 60 s default was passed by
// tsc compiling the team's project on a busy 2-core machine. The verdicts read what those processes
// print and produce, never how long they took.
jest.setTimeout(600_000);
const { packedManifest } = require('../../scripts/pack-manifest.cjs') as { packedManifest: (manifest: unknown) => unknown };
const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  version: string;
  devDependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
};
const pinned = (name: string) => `${name}@${manifest.devDependencies[name]}`;
/** What `cdk init app --language typescript` puts in package.json (versions as this repository pins them). */
const CDK_INIT = {
  dev: ['aws-cdk', 'ts-node', 'typescript', '@types/node'],
  version: (name: string) => (name === 'ts-node' ? '10.9.2' : (manifest.devDependencies[name] as string)),
};

/** The packed packages: taskworker (what services and tasks import) and taskworker-toolkit (build, dev, deploy). */
let tarballs: { taskworker: string; toolkit: string };
let consumer: string;

/** The size of a publish-only install's node_modules must stay within this (MiB of file contents). */
const PUBLISH_ONLY_BUDGET_MB = 20;

/**
 * The suite's own npm caches, empty when it starts: every package comes from the registry as on a new
 * team's machine (a package that only an earlier install had left in a shared cache hides nothing).
 * One per project (its temporary directory): the projects install at once, and npm installs from
 * several processes into one empty cache failed here with "No matching version found" for versions
 * the registry has.
 */
const NPM_CACHES = mkdtempSync(join(tmpdir(), 'tw-adopt-npm-cache-'));

/** The environment of a user's shell in `cwd`: without this repository's AWS settings or npm's, with its project's own npm cache. */
function userEnv(cwd: string, env: Record<string, string>): NodeJS.ProcessEnv {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('AWS_') && !k.startsWith('npm_')));
  const [project = ''] = relative(tmpdir(), cwd).split(sep);
  return { ...clean, npm_config_cache: join(NPM_CACHES, project === '' || project === '..' ? 'outside' : project), ...env };
}

/** Runs a command in a project to completion. */
function sh(cwd: string, command: string, args: string[], env: Record<string, string> = {}): string {
  return execFileSync(command, args, { cwd, env: userEnv(cwd, env), encoding: 'utf8', stdio: 'pipe', timeout: 300_000 });
}

/** Runs a command expected to fail; returns its exit status and what it printed to stderr. */
function shFails(cwd: string, command: string, args: string[]): { status: number | null; stderr: string } {
  const ran = spawnSync(command, args, { cwd, env: userEnv(cwd, {}), encoding: 'utf8', timeout: 300_000 });
  return { status: ran.status, stderr: ran.stderr };
}

/** {@link sh} without blocking this process, for commands that talk to the emulators running in it. */
async function run(cwd: string, command: string, args: string[], env: Record<string, string> = {}): Promise<string> {
  const { stdout } = await promisify(execFile)(command, args, { cwd, env: userEnv(cwd, env), encoding: 'utf8', timeout: 300_000 });
  return stdout;
}

function write(dir: string, files: Record<string, string>): void {
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
}

function project(name: string, files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), `tw-adopt-${name}-`));
  write(dir, files);
  return dir;
}

/**
 * The bytes of the files under a directory (`find DIR -type f -printf '%s\n'`, added up): the measure
 * of an install's size that does not depend on the file system (`du` counts blocks, and its
 * `--apparent-size` the directories' own entries too).
 */
function sizeOf(dir: string): number {
  let bytes = 0;
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    const stat = statSync(path, { throwIfNoEntry: false });
    if (!stat) continue;
    bytes += stat.isDirectory() ? sizeOf(path) : stat.size;
  }
  return bytes;
}

/** A team's task and publisher, compiled by tsc and run by plain node (ESM, NodeNext). */
const SERVICE_SOURCES = {
  'src/tasks/resize-image.ts': `import { defineTask, UnrecoverableError } from 'taskworker';

export default defineTask({
  name: 'resize-image',
  queue: 'media',
  timeLimitSeconds: 20,
  limits: { concurrency: 2, perSecond: 50 },
  onSuccess(result, ctx) {
    console.log(\`resized \${ctx.jobId}: \${JSON.stringify(result)}\`);
  },
  validate(payload): { image: string; width: number } {
    const p = payload as { image?: unknown; width?: unknown };
    if (typeof p.image !== 'string' || typeof p.width !== 'number') throw new UnrecoverableError('image and width are required');
    return { image: p.image, width: p.width };
  },
  async run(payload, ctx) {
    return { resized: payload.image, width: payload.width, attempt: ctx.attempt };
  },
});
`,
  'taskworker.config.ts': `import { defineConfig } from 'taskworker';

export default defineConfig({
  app: 'orders',
  tasksDir: 'src/tasks',
  queues: [{ name: 'media', priority: 10 }, { name: 'mail', priority: 50 }],
  schedules: [{ name: 'nightly-thumbnails', task: 'resize-image', payload: { image: 'all', width: 64 }, cron: '0 3 * * *', timezone: 'America/New_York' }],
  // Another team's app emits orders.shipped; this one's notify-shipped task takes it.
  subscriptions: [{ app: 'shop', version: 'v1', events: ['orders.shipped'] }],
});
`,
  'src/tasks/notify-shipped.ts': `import { defineTask } from 'taskworker';

export default defineTask({
  name: 'notify-shipped',
  queue: 'mail',
  timeLimitSeconds: 10,
  on: 'orders.shipped',
  async run(payload: { order: string }, ctx) {
    return { notified: payload.order, event: ctx.event?.id, from: ctx.event?.source };
  },
});
`,
  'src/publish.ts': `import { Publisher, UnknownQueueError } from 'taskworker';
import config from '../taskworker.config.js';
import resizeImage from './tasks/resize-image.js';

const publisher = new Publisher({ config, version: 'v1', sqs: { clientConfig: { region: 'us-east-1' } } });
const published = await publisher.publish(resizeImage, { image: 'cat.png', width: 320 });
let refused = '';
try {
  await publisher.publish('resize-image', {}, { queue: 'nowhere' });
} catch (error) {
  if (error instanceof UnknownQueueError) refused = error.name;
}
console.log(JSON.stringify({ ...published, refused }));
`,
};

/** The commands of README's first sh block after `heading`, each as its words, with its comment taken off. */
function readmeCommands(heading: string): string[][] {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const at = readme.indexOf(heading);
  if (at < 0) throw new Error(`README has no ${JSON.stringify(heading)}`);
  const block = /```sh\n([\s\S]*?)```/.exec(readme.slice(at))?.[1] ?? '';
  return block
    .split('\n')
    .map((line) => line.replace(/#.*/, '').trim())
    .filter((line) => line.length > 0)
    .map((line) => line.split(/\s+/));
}

/**
 * Whether the Python publishers README shows can run here. Without boto3 the same plain messages go
 * from the AWS SDK for JavaScript, said in one line; under .ci/run (TASKWORKER_REQUIRE_TOOLS=1) that
 * is a failure, not a substitution.
 */
let saidNoBoto3 = false;
function withBoto3(): boolean {
  if (haveTools('boto3')) return true;
  if (process.env.TASKWORKER_REQUIRE_TOOLS === '1') throw new Error(TOOLS.boto3.install);
  if (!saidNoBoto3) process.stdout.write(`adoption: the Python publishers sent with @aws-sdk instead, ${TOOLS.boto3.install}\n`);
  saidNoBoto3 = true;
  return false;
}

/** README's commands that add taskworker to a project with a CDK app of its own (after "Or add it to a project you have"). */
const readmeInstallCommands = () => readmeCommands('Or add it to a project you have');

/**
 * Installs that only later tests read, started beside the consumer's install in the suite's
 * `beforeAll` (each is minutes of network and disk, not CPU) and awaited by the tests that need them.
 */
let publishOnly: Promise<string>;
let cdkApp: Promise<{ app: string; before: Record<string, Record<string, string>> }>;
let readmeInit: Promise<{ scratch: string; init: string[]; made: string; written: string[]; commands: string[][] }>;

beforeAll(async () => {
  // As `npm publish` packs (prepack builds both packages and trims the manifest), but without
  // touching the repository's package.json, which the other suites read while this one runs: the
  // build once for the run, then taskworker packed from a copy of the files npm would pack with the
  // trimmed manifest beside them; the toolkit is packed from its build.
  await ensureBuilt();
  const packs = mkdtempSync(join(tmpdir(), 'tw-adopt-pack-'));
  execFileSync('npm', ['pack', stageTaskworker(), '--ignore-scripts', '--pack-destination', packs], { encoding: 'utf8', stdio: 'pipe' });
  execFileSync('npm', ['pack', './dist/toolkit', '--pack-destination', packs], { cwd: ROOT, encoding: 'utf8', stdio: 'pipe' });
  const packed = (name: string) => join(packs, readdirSync(packs).find((f) => f === `${name}-${manifest.version}.tgz`) as string);
  tarballs = { taskworker: packed('taskworker'), toolkit: packed('taskworker-toolkit') };
  // One project a team would have: its tasks and publisher, a CDK app, the local tools.
  consumer = project('orders', {
    'package.json': JSON.stringify({ name: 'orders', version: '1.0.0', private: true, type: 'module' }),
    'tsconfig.json': JSON.stringify({
      compilerOptions: {
        target: 'ES2022',
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        outDir: 'dist',
        strict: true,
        skipLibCheck: false,
      },
      include: ['src', 'taskworker.config.ts'],
    }),
    ...SERVICE_SOURCES,
  });
  const consumerInstalled = run(consumer, 'npm', [
    'install',
    '--no-audit',
    '--no-fund',
    tarballs.taskworker,
    tarballs.toolkit,
    pinned('typescript'),
    pinned('@types/node'),
    pinned('aws-cdk-lib'),
    pinned('constructs'),
    pinned('esbuild'),
    pinned('fauxqs'),
    pinned('dynalite'),
    pinned('tsx'),
    'ts-node@10.9.2',
  ]);
  publishOnly = installPublishOnly();
  cdkApp = installCdkApp();
  readmeInit = initFromReadme();
  // A failed side install fails the test that awaits it, not this hook.
  for (const side of [publishOnly, cdkApp, readmeInit]) side.catch(() => undefined);
  await consumerInstalled;
}, 600_000);

/** The files `npm pack` takes from this repository, copied to a directory with the packed manifest (scripts/pack-manifest.cjs). */
function stageTaskworker(): string {
  const listed = JSON.parse(
    execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
      cwd: ROOT,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  ) as Array<{ files: Array<{ path: string }> }>;
  const staged = mkdtempSync(join(tmpdir(), 'tw-adopt-stage-'));
  for (const { path } of listed[0]?.files ?? []) {
    if (path === 'package.json') continue;
    mkdirSync(dirname(join(staged, path)), { recursive: true });
    cpSync(join(ROOT, path), join(staged, path));
  }
  writeFileSync(join(staged, 'package.json'), `${JSON.stringify(packedManifest(manifest), null, 2)}\n`);
  return staged;
}

/** A service that only publishes: taskworker alone, production dependencies only. */
async function installPublishOnly(): Promise<string> {
  const dir = project('publish-only', { 'package.json': JSON.stringify({ name: 'svc', version: '1.0.0', private: true }) });
  await run(dir, 'npm', ['install', '--no-audit', '--no-fund', '--omit=dev', tarballs.taskworker]);
  return dir;
}

describe('a publish-only service', () => {
  // One install, read by both tests (neither writes to it): an install is most of their time.
  let dir: string;
  beforeAll(async () => {
    dir = await publishOnly;
  }, 300_000);

  it(`installs taskworker alone, within ${PUBLISH_ONLY_BUDGET_MB} MB, the size README gives`, () => {
    const mb = sizeOf(join(dir, 'node_modules')) / 1_048_576;
    process.stdout.write(`publish-only node_modules: ${mb.toFixed(1)} MB of files\n`);
    expect(mb).toBeLessThanOrEqual(PUBLISH_ONLY_BUDGET_MB);
    // README's figure is this one (within the drift of the SDK's own dependencies between releases).
    const stated = Number(/a publish-only service installs ([\d.]+) MB/.exec(readFileSync(join(ROOT, 'README.md'), 'utf8'))?.[1]);
    expect(Math.abs(stated - mb)).toBeLessThanOrEqual(1);
    // Nothing only the toolkit needs came along: not the toolkit, its esbuild and cron-parser, nor any optional peer.
    for (const heavy of ['taskworker-toolkit', 'esbuild', 'cron-parser', 'luxon', 'aws-cdk-lib', 'fauxqs', 'dynalite']) {
      expect(existsSync(join(dir, 'node_modules', heavy))).toBe(false);
    }
    // The SNS client (publisher.emit) is there.
    expect(existsSync(join(dir, 'node_modules', '@aws-sdk', 'client-sns'))).toBe(true);
  });

  it('is told in one line everything taskworker/cdk and the command need, and the command that installs it', () => {
    const needs =
      `taskworker/cdk needs taskworker-toolkit, aws-cdk-lib and constructs: npm install --save-dev taskworker-toolkit@${manifest.version} ` +
      `aws-cdk-lib@${manifest.peerDependencies['aws-cdk-lib']} constructs@${manifest.peerDependencies.constructs}`;
    for (const load of [
      ['-e', "require('taskworker/cdk')"],
      ['--input-type=module', '-e', "import { TaskworkerVersion } from 'taskworker/cdk';"],
    ]) {
      const cdk = shFails(dir, 'node', load);
      expect(cdk.status).not.toBe(0);
      expect(cdk.stderr).toContain(`MissingDependencyError: ${needs}\n`);
    }
    const dev = shFails(dir, join(dir, 'node_modules', '.bin', 'taskworker'), ['dev']);
    expect(dev.status).not.toBe(0);
    expect(dev.stderr.trim().split('\n')).toEqual([
      `taskworker: the command needs taskworker-toolkit: npm install --save-dev taskworker-toolkit@${manifest.version}`,
    ]);
  });

  describe('against an SQS endpoint', () => {
    let emulators: Emulators;
    let env: Record<string, string>;
    beforeAll(async () => {
      emulators = await startEmulators();
      env = { AWS_ENDPOINT_URL_SQS: emulators.sqsEndpoint, AWS_REGION: 'us-east-1', AWS_ACCESS_KEY_ID: 'x', AWS_SECRET_ACCESS_KEY: 'x' };
      const sqs = new SQSClient({
        region: 'us-east-1',
        endpoint: emulators.sqsEndpoint,
        credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
      });
      for (const q of ['orders-v1-media', 'orders-v1-mail', 'orders-v1-archive']) await sqs.send(new CreateQueueCommand({ QueueName: q }));
      sqs.destroy();
    });
    afterAll(() => emulators.stop());

    const received = async () => {
      const sqs = new SQSClient({
        region: 'us-east-1',
        endpoint: emulators.sqsEndpoint,
        credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
      });
      const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: 'orders-v1-media' }));
      const got = await sqs.send(new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10, VisibilityTimeout: 0 }));
      sqs.destroy();
      return (got.Messages ?? []).map((m) => JSON.parse(m.Body as string) as { task: string; payload: unknown });
    };

    it('compiles with tsc (NodeNext) and runs with plain node: typed errors are classes it can check', async () => {
      sh(consumer, 'npx', ['tsc']);
      const printed = JSON.parse(await run(consumer, 'node', ['dist/src/publish.js'], env)) as {
        jobId: string;
        queue: string;
        refused: string;
      };
      expect(printed).toMatchObject({ queue: 'media', refused: 'UnknownQueueError' });
      expect((await received()).map((m) => m.task)).toContain('resize-image');
    });

    it('runs under tsx, and from esbuild bundles in both formats', async () => {
      expect(JSON.parse(await run(consumer, 'npx', ['tsx', 'src/publish.ts'], env))).toMatchObject({ queue: 'media' });
      for (const format of ['esm', 'cjs'] as const) {
        const out = `bundle.${format === 'esm' ? 'mjs' : 'cjs'}`;
        // The AWS SDK's own recipe for ES bundles on Node prefers its ES builds (main fields).
        sh(consumer, 'npx', [
          'esbuild',
          format === 'esm' ? 'src/publish.ts' : 'src/tasks/resize-image.ts',
          '--bundle',
          '--platform=node',
          `--format=${format}`,
          ...(format === 'esm' ? ['--main-fields=module,main'] : []),
          `--outfile=${out}`,
          '--log-level=warning',
        ]);
        if (format === 'esm') expect(JSON.parse(await run(consumer, 'node', [out], env))).toMatchObject({ queue: 'media' });
        else expect(sh(consumer, 'node', ['-e', `console.log(require('./${out}').default.name)`]).trim()).toBe('resize-image');
      }
    });
    it('puts large payloads and events in S3 alike from the ES build and from CommonJS', async () => {
      const bucket = 'orders-v1-large';
      const s3 = new S3Client({
        region: 'us-east-1',
        endpoint: emulators.sqsEndpoint,
        forcePathStyle: true,
        credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
      });
      await s3.send(new CreateBucketCommand({ Bucket: bucket }));
      const sns = new SNSClient({
        region: 'us-east-1',
        endpoint: emulators.sqsEndpoint,
        credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
      });
      const { TopicArn } = await sns.send(new CreateTopicCommand({ Name: 'orders-v1-events' }));
      sns.destroy();
      // 300 KB each, over the 200 KB a message keeps: the payload goes to the bucket, the message carries a pointer.
      const script = (load: string) => `${load}
const config = { app: 'orders', queues: [{ name: 'media', priority: 10 }], events: [{ name: 'orders.exported' }] };
const s3 = { clientConfig: { endpoint: process.env.AWS_ENDPOINT_URL_SQS, forcePathStyle: true } };
const publisher = new Publisher({ config, version: 'v1', payloads: { bucket: '${bucket}', s3 }, events: { topicArn: '${TopicArn}' } });
const big = { rows: 'x'.repeat(300_000) };
Promise.all([publisher.publish('resize-image', big, { queue: 'media' }), publisher.emit('orders.exported', big)]).then(
  ([published, emitted]) => console.log(JSON.stringify({ jobId: published.jobId, eventId: emitted.eventId })),
);
`;
      write(consumer, {
        'large.mjs': script("import { Publisher } from 'taskworker';"),
        'large.cjs': script("const { Publisher } = require('taskworker');"),
      });
      for (const file of ['large.mjs', 'large.cjs']) {
        const { jobId, eventId } = JSON.parse(
          await run(consumer, 'node', [file], { ...env, AWS_ENDPOINT_URL_SNS: emulators.sqsEndpoint }),
        ) as {
          jobId: string;
          eventId: string;
        };
        const listed = await s3.send(new ListObjectsV2Command({ Bucket: bucket }));
        const keys = (listed.Contents ?? []).map((o) => o.Key ?? '');
        expect({ file, job: keys.some((k) => k.startsWith(`payloads/${jobId}/`)), event: keys.some((k) => k.includes(eventId)) }).toEqual({
          file,
          job: true,
          event: true,
        });
      }
      s3.destroy();
    });
  });

  it('is required from CommonJS, every entry point, with one copy of the error classes across them', () => {
    const printed = sh(consumer, 'node', [
      '-e',
      [
        "const tw = require('taskworker');",
        "const { runTask } = require('taskworker/testing');",
        "const cdk = require('taskworker/cdk');",
        "const runtime = require('taskworker/runtime');",
        // An error class from the main entry is the one taskworker/testing judges by.
        "const task = tw.defineTask({ name: 't', queue: 'q', timeLimitSeconds: 1, run() { throw new tw.UnrecoverableError('no'); } });",
        'runTask(task, {}).then((run) => console.log(JSON.stringify({',
        '  publisher: typeof tw.Publisher, version: typeof cdk.TaskworkerVersion, worker: typeof runtime.startTaskWorker, verdict: run.verdict,',
        '})));',
      ].join(' '),
    ]);
    expect(JSON.parse(printed)).toEqual({
      publisher: 'function',
      version: 'function',
      worker: 'function',
      verdict: { kind: 'archive', reason: 'unrecoverable' },
    });
  });

  it('typechecks under moduleResolution bundler too', () => {
    write(consumer, {
      'tsconfig.bundler.json': JSON.stringify({
        compilerOptions: { target: 'ES2022', module: 'preserve', moduleResolution: 'bundler', noEmit: true, strict: true },
        include: ['src'],
      }),
    });
    expect(() => sh(consumer, 'npx', ['tsc', '-p', 'tsconfig.bundler.json'])).not.toThrow();
  });
});

describe('a CDK app of the team’s own (cdk init’s CommonJS + ts-node)', () => {
  it('puts a TaskworkerVersion into its own stack, from a relative config path, with the team’s queues and tasks', () => {
    const app = join(consumer, 'infra');
    write(app, {
      'package.json': JSON.stringify({ name: 'orders-infra', version: '1.0.0', private: true, type: 'commonjs' }),
      'tsconfig.json': JSON.stringify({ compilerOptions: { target: 'ES2022', module: 'commonjs', strict: true, esModuleInterop: true } }),
      'app.ts': `import { App, Stack } from 'aws-cdk-lib';
import { TaskworkerVersion } from 'taskworker/cdk';

const app = new App();
const stack = new Stack(app, 'OrdersTasks');
const version = new TaskworkerVersion(stack, 'V1', { config: './taskworker.config.ts', version: 'v1' });
console.log(JSON.stringify(version.queueNames()));
app.synth();
`,
    });
    const outdir = mkdtempSync(join(tmpdir(), 'tw-adopt-cdk-out-'));
    // Run from the project root, as cdk runs an app: the config path is the project's.
    const printed = sh(consumer, 'npx', ['ts-node', '--project', 'infra/tsconfig.json', 'infra/app.ts'], { CDK_OUTDIR: outdir });
    expect(JSON.parse(printed.trim().split('\n').at(-1) as string)).toEqual({
      queues: { media: 'orders-v1-media', mail: 'orders-v1-mail' },
      archive: 'orders-v1-archive',
    });
    const template = JSON.parse(readFileSync(join(outdir, 'OrdersTasks.template.json'), 'utf8')) as {
      Resources: Record<string, { Type: string; Properties: Record<string, unknown> }>;
    };
    const queues = Object.values(template.Resources)
      .filter((r) => r.Type === 'AWS::SQS::Queue')
      .map((r) => r.Properties.QueueName);
    expect(queues).toEqual(expect.arrayContaining(['orders-v1-media', 'orders-v1-mail', 'orders-v1-archive']));
    const fn = Object.values(template.Resources).find((r) => r.Type === 'AWS::Lambda::Function');
    const code = fn?.Properties.Code as { S3Key: string } | undefined;
    const asset = join(outdir, `asset.${code?.S3Key.replace(/\.zip$/, '')}`);
    expect(readFileSync(join(asset, 'tasks.cjs'), 'utf8')).toContain('resize-image');
    expect(existsSync(join(asset, 'index.js'))).toBe(true);
    // The team's recurring task: scheduled in EventBridge Scheduler, sent to its task's queue.
    const schedule = Object.values(template.Resources).find((r) => r.Type === 'AWS::Scheduler::Schedule');
    expect(schedule?.Properties).toMatchObject({
      Name: 'nightly-thumbnails',
      ScheduleExpression: 'cron(0 3 * * ? *)',
      ScheduleExpressionTimezone: 'America/New_York',
    });
    const mediaId = Object.entries(template.Resources).find(([, r]) => r.Properties.QueueName === 'orders-v1-media')?.[0];
    expect((schedule?.Properties.Target as { Arn: unknown } | undefined)?.Arn).toEqual({ 'Fn::GetAtt': [mediaId, 'Arn'] });
    // The subscription to the shop's events: the mail queue, raw, filtered on the event's name.
    const mailId = Object.entries(template.Resources).find(([, r]) => r.Properties.QueueName === 'orders-v1-mail')?.[0];
    const subscription = Object.values(template.Resources).find((r) => r.Type === 'AWS::SNS::Subscription');
    expect(subscription?.Properties).toMatchObject({
      Endpoint: { 'Fn::GetAtt': [mailId, 'Arn'] },
      RawMessageDelivery: true,
      FilterPolicyScope: 'MessageBody',
      FilterPolicy: { event: ['orders.shipped'] },
    });
    expect(JSON.stringify(subscription?.Properties.TopicArn)).toContain(':shop-v1-events');
  });
});

/** A project with a CDK app of its own (as `cdk init` leaves it), then README's install commands as written there. */
async function installCdkApp(): Promise<{ app: string; before: Record<string, Record<string, string>> }> {
  // What `cdk init app --language typescript` leaves: aws-cdk-lib and constructs, the CDK CLI, ts-node.
  const app = project('cdk-app', {
    'package.json': JSON.stringify({
      name: 'billing',
      version: '0.1.0',
      private: true,
      bin: { billing: 'bin/billing.js' },
      dependencies: { 'aws-cdk-lib': CDK_INIT.version('aws-cdk-lib'), constructs: CDK_INIT.version('constructs') },
      devDependencies: Object.fromEntries(CDK_INIT.dev.map((name) => [name, CDK_INIT.version(name)])),
    }),
    'cdk.json': JSON.stringify({ app: 'npx ts-node --prefer-ts-exts bin/billing.ts', context: { 'cli-telemetry': false } }),
    'tsconfig.json': JSON.stringify({
      compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, skipLibCheck: true },
      exclude: ['node_modules', 'cdk.out'],
    }),
    'bin/billing.ts': `import { App, Stack } from 'aws-cdk-lib';
import { TaskworkerVersion } from 'taskworker/cdk';

const app = new App();
const stack = new Stack(app, 'BillingStack');
new TaskworkerVersion(stack, 'TasksV1', { config: './taskworker.config.ts', version: 'v1' });
`,
    'taskworker.config.ts': `import { defineConfig } from 'taskworker';

export default defineConfig({ app: 'billing', tasksDir: 'tasks', queues: [{ name: 'invoices', priority: 20 }] });
`,
    'tasks/send-invoice.ts': `import { defineTask } from 'taskworker';

export default defineTask({
name: 'send-invoice',
queue: 'invoices',
timeLimitSeconds: 30,
async run(payload: { invoiceId: string }) {
  return { sent: payload.invoiceId };
},
});
`,
  });
  // As `cdk init` does: its package.json written, then one `npm install`.
  await run(app, 'npm', ['install', '--no-audit', '--no-fund']);
  const before = JSON.parse(readFileSync(join(app, 'package.json'), 'utf8')) as Record<string, Record<string, string>>;

  // README's commands as written there, the packages' names standing for their tarballs.
  const commands = readmeInstallCommands();
  if (commands.length === 0) throw new Error('README has no install commands after "Or add it to a project you have"');
  // The tarballs where README's commands have them (`./taskworker-<version>.tgz`): in the project, as copied there.
  for (const tarball of Object.values(tarballs)) cpSync(tarball, join(app, basename(tarball)));
  for (const [command, ...args] of commands) {
    if (command !== 'npm') throw new Error(`README's install command is not npm: ${command}`);
    await run(app, command as string, [...args, '--no-audit', '--no-fund']);
  }
  return { app, before };
}

describe('a project with a CDK app of its own, after README’s install commands and nothing else', () => {
  it('synthesizes a stack with a TaskworkerVersion: queues in the template, the tasks bundled by the toolkit’s esbuild', async () => {
    const { app, before } = await cdkApp;
    const after = JSON.parse(readFileSync(join(app, 'package.json'), 'utf8')) as Record<string, Record<string, string>>;
    const added = (field: string) => Object.keys(after[field] ?? {}).filter((name) => !(name in (before[field] ?? {})));
    expect({ dependencies: added('dependencies'), devDependencies: added('devDependencies') }).toEqual({
      dependencies: ['taskworker'],
      devDependencies: ['taskworker-toolkit'],
    });
    // The command loads with what those installs brought, and nothing else (it crashed on the S3 client once).
    expect(sh(app, 'npx', ['taskworker', '--help'])).toMatch(/^usage:/);
    sh(app, 'npx', ['cdk', 'synth', '--quiet', '--no-notices']);
    const template = JSON.parse(readFileSync(join(app, 'cdk.out', 'BillingStack.template.json'), 'utf8')) as {
      Resources: Record<string, { Type: string; Properties: Record<string, unknown> }>;
    };
    const queues = Object.values(template.Resources)
      .filter((r) => r.Type === 'AWS::SQS::Queue')
      .map((r) => r.Properties.QueueName);
    expect(queues).toEqual(expect.arrayContaining(['billing-v1-invoices', 'billing-v1-archive']));
    const fn = Object.values(template.Resources).find((r) => r.Type === 'AWS::Lambda::Function');
    const code = fn?.Properties.Code as { S3Key: string } | undefined;
    const asset = join(app, 'cdk.out', `asset.${code?.S3Key.replace(/\.zip$/, '')}`);
    expect(readFileSync(join(asset, 'tasks.cjs'), 'utf8')).toContain('send-invoice');
    expect(existsSync(join(asset, 'index.js'))).toBe(true);
  }, 600_000);
});

describe('taskworker dev with the team’s own tasks', () => {
  let dev: ChildProcess | undefined;
  afterAll(async () => {
    if (dev && dev.exitCode === null) {
      dev.kill('SIGINT');
      await new Promise((resolve) => dev?.once('exit', resolve));
    }
  });

  it('runs a task the team published, to success', async () => {
    let out = '';
    dev = spawn(join(consumer, 'node_modules', '.bin', 'taskworker'), ['dev'], {
      cwd: consumer,
      env: userEnv(consumer, {}),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    dev.stdout?.on('data', (chunk) => {
      out += String(chunk);
    });
    dev.stderr?.on('data', (chunk) => {
      out += String(chunk);
    });
    await eventually('dev to start', () => out.includes('Ctrl-C to stop.'), 120_000);
    const published = JSON.parse(
      sh(consumer, 'npx', ['taskworker', 'publish', 'resize-image', '--payload', '{"image":"a.png","width":64}', '--json']),
    ) as {
      jobId: string;
    };
    await eventually('the job to succeed', () => /media: 1 received: 1 succeeded/.test(out), 60_000);
    const { job } = JSON.parse(sh(consumer, 'npx', ['taskworker', 'jobs', 'show', published.jobId, '--json'])) as {
      job: { state: string; result: unknown } | null;
    };
    expect(job).toMatchObject({ state: 'succeeded', result: { resized: 'a.png', width: 64, attempt: 1 } });
    // The team waits for a result, and its task's hook ran after the outcome was recorded.
    expect(sh(consumer, 'npx', ['taskworker', 'jobs', 'wait', published.jobId, '--timeout', '30']).trim()).toBe(
      `job ${published.jobId} succeeded after 1 attempt(s): {"resized":"a.png","width":64,"attempt":1}`,
    );
    await eventually(
      'the hook to log',
      () => out.includes(`resized ${published.jobId}: {"resized":"a.png","width":64,"attempt":1}`),
      30_000,
    );
  });

  it('serves the dashboard from the installed package, with no build step: page, prebuilt bundle and the status of its dev', async () => {
    const ui = spawn(join(consumer, 'node_modules', '.bin', 'taskworker'), ['ui', '--port', '0'], {
      cwd: consumer,
      env: userEnv(consumer, {}),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    ui.stdout?.on('data', (chunk) => {
      out += String(chunk);
    });
    try {
      await eventually('the dashboard to listen', () => /http:\/\/127\.0\.0\.1:\d+\//.test(out), 60_000);
      const url = out.match(/http:\/\/127\.0\.0\.1:\d+\//)?.[0] as string;
      expect(await (await fetch(url)).text()).toContain('<script type="module" src="/assets/app.js">');
      const bundle = await fetch(`${url}assets/app.js`);
      expect(bundle.headers.get('content-type')).toContain('text/javascript');
      expect((await bundle.text()).length).toBeGreaterThan(10_000);
      const status = (await (await fetch(`${url}api/status`)).json()) as { queues: Array<{ queue: string }> };
      expect(status.queues.map((q) => q.queue)).toContain('media');
    } finally {
      ui.kill('SIGINT');
      await new Promise((resolve) => ui.once('exit', resolve));
    }
  });

  it('runs a chain published from TypeScript and a dependency sent with plain SendMessage (boto3), each in order', async () => {
    const state = JSON.parse(readFileSync(join(consumer, '.taskworker', 'dev.json'), 'utf8')) as {
      version: string;
      sqsEndpoint: string;
      dynamodbEndpoint: string;
    };
    const env = {
      AWS_ENDPOINT_URL_SQS: state.sqsEndpoint,
      AWS_ENDPOINT_URL_DYNAMODB: state.dynamodbEndpoint,
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'dev',
      AWS_SECRET_ACCESS_KEY: 'dev',
      TW_VERSION: state.version,
    };
    writeFileSync(
      join(consumer, 'src', 'chain.ts'),
      `import { Publisher } from 'taskworker';
import config from '../taskworker.config.js';
import resizeImage from './tasks/resize-image.js';

const publisher = new Publisher({ config, version: process.env.TW_VERSION as string });
const steps = await publisher.chain([
  { task: resizeImage, payload: { image: 'chain-1.png', width: 8 } },
  { task: resizeImage, payload: { image: 'chain-2.png', width: 16 } },
]);
console.log(JSON.stringify(steps.map((s) => s.jobId)));
`,
    );
    const chain = JSON.parse(sh(consumer, 'npx', ['tsx', 'src/chain.ts'], env).trim()) as string[];
    // Another service's SDK: the dependent first, then its dependency, as plain messages.
    const queueName = `orders-${state.version}-media`;
    const dependent = { task: 'resize-image', id: 'py-second', payload: { image: 'py-2.png', width: 4 }, dependsOn: ['py-first'] };
    const dependency = { task: 'resize-image', id: 'py-first', payload: { image: 'py-1.png', width: 2 } };
    if (withBoto3()) {
      sh(
        consumer,
        'python3',
        [
          '-c',
          [
            'import boto3, json, sys',
            'sqs = boto3.client("sqs", endpoint_url=sys.argv[1], region_name="us-east-1")',
            'url = sqs.get_queue_url(QueueName=sys.argv[2])["QueueUrl"]',
            'for body in sys.argv[3:]: sqs.send_message(QueueUrl=url, MessageBody=body)',
          ].join('\n'),
          state.sqsEndpoint,
          queueName,
          JSON.stringify(dependent),
          JSON.stringify(dependency),
        ],
        env,
      );
    } else {
      // No boto3 on this machine (said in one line): the same two plain messages from the AWS SDK for JavaScript.
      writeFileSync(
        join(consumer, 'src', 'raw.ts'),
        `import { GetQueueUrlCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
const sqs = new SQSClient({ endpoint: process.env.AWS_ENDPOINT_URL_SQS });
const { QueueUrl } = await sqs.send(new GetQueueUrlCommand({ QueueName: process.argv[2] }));
for (const body of process.argv.slice(3)) await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: body }));
`,
      );
      sh(consumer, 'npx', ['tsx', 'src/raw.ts', queueName, JSON.stringify(dependent), JSON.stringify(dependency)], env);
    }
    const show = (id: string) =>
      (
        JSON.parse(sh(consumer, 'npx', ['taskworker', 'jobs', 'show', id, '--json'])) as {
          job: { state: string; firstStartedAt?: number; finishedAt?: number };
        }
      ).job;
    const pairs: Array<[string, string]> = [chain as [string, string], ['py-first', 'py-second']];
    for (const [first, second] of pairs) {
      await eventually(`${second} to succeed`, () => show(second).state === 'succeeded', 90_000);
      expect(show(first).state).toBe('succeeded');
      expect(show(second).firstStartedAt).toBeGreaterThanOrEqual(show(first).finishedAt as number);
    }
  }, 180_000);

  it('runs its subscriber of another app’s event, published by a Python service through SNS to that app’s topic', async () => {
    const state = JSON.parse(readFileSync(join(consumer, '.taskworker', 'dev.json'), 'utf8')) as { sqsEndpoint: string };
    const env = { AWS_REGION: 'us-east-1', AWS_ACCESS_KEY_ID: 'dev', AWS_SECRET_ACCESS_KEY: 'dev' };
    // The event envelope, as README documents it for any SDK: no attributes, the filter reads the body.
    const event = { event: 'orders.shipped', id: 'shipped-o-9', source: 'shop', payload: { order: 'o-9' } };
    const topicArn = 'arn:aws:sns:us-east-1:000000000000:shop-v1-events';
    if (withBoto3()) {
      sh(
        consumer,
        'python3',
        [
          '-c',
          [
            'import boto3, sys',
            'sns = boto3.client("sns", endpoint_url=sys.argv[1], region_name="us-east-1")',
            'sns.publish(TopicArn=sys.argv[2], Message=sys.argv[3])',
          ].join('\n'),
          state.sqsEndpoint,
          topicArn,
          JSON.stringify(event),
        ],
        env,
      );
    } else {
      writeFileSync(
        join(consumer, 'src', 'emit.ts'),
        `import { PublishCommand, SNSClient } from '@aws-sdk/client-sns';
await new SNSClient({ endpoint: process.argv[2] }).send(new PublishCommand({ TopicArn: process.argv[3], Message: process.argv[4] }));
`,
      );
      sh(consumer, 'npx', ['tsx', 'src/emit.ts', state.sqsEndpoint, topicArn, JSON.stringify(event)], env);
    }
    const show = () =>
      (
        JSON.parse(sh(consumer, 'npx', ['taskworker', 'jobs', 'show', 'shipped-o-9/notify-shipped', '--json'])) as {
          job: { state: string; result?: unknown; event?: { id: string; name: string; source?: string } };
        }
      ).job;
    await eventually('the subscriber to succeed', () => show().state === 'succeeded', 90_000);
    expect(show()).toMatchObject({
      result: { notified: 'o-9', event: 'shipped-o-9', from: 'shop' },
      event: { id: 'shipped-o-9', name: 'orders.shipped', source: 'shop' },
    });
  }, 120_000);

  it('parks a job published an hour ahead, shows it scheduled with its due time, and cancels it', async () => {
    const later = JSON.parse(
      sh(consumer, 'npx', [
        'taskworker',
        'publish',
        'resize-image',
        '--payload',
        '{"image":"b.png","width":32}',
        '--delay',
        '3600',
        '--json',
      ]),
    ) as { jobId: string; runAt: number };
    expect(later.runAt).toBeGreaterThan(Date.now() + 3_500_000);
    // Read the list once the dispatcher parked the job (the park drops `announced`): the park
    // rewrites the job's index entry, and a list read in between finds no jobs.
    await eventually(
      'the job to be parked',
      () => {
        const { job } = JSON.parse(sh(consumer, 'npx', ['taskworker', 'jobs', 'show', later.jobId, '--json'])) as {
          job: { state: string; announced?: boolean };
        };
        return job.state === 'scheduled' && job.announced !== true;
      },
      60_000,
    );
    expect(sh(consumer, 'npx', ['taskworker', 'jobs', 'list', '--state', 'scheduled'])).toContain(new Date(later.runAt).toISOString());
    expect(sh(consumer, 'npx', ['taskworker', 'jobs', 'cancel', later.jobId])).toContain(`cancelled job ${later.jobId}`);
    const schedules = JSON.parse(sh(consumer, 'npx', ['taskworker', 'schedules', '--json'])) as Array<{ name: string; queue: string }>;
    expect(schedules).toMatchObject([{ name: 'nightly-thumbnails', queue: 'media' }]);
  });
});

/** README's first block, to the letter: the init line from an empty directory, then the scaffold's install. */
async function initFromReadme(): Promise<{ scratch: string; init: string[]; made: string; written: string[]; commands: string[][] }> {
  // README's block under "Use it in your project": the init line, `cd my-tasks && npm install`,
  // `npm test`; the ones that need an AWS account or run for ever (deploy, `npm start`) are left out.
  const commands = readmeCommands('## Use it in your project');
  const init = commands.find((words) => words.includes('init'));
  if (!init) throw new Error('README has no init line under "Use it in your project"');
  const scratch = mkdtempSync(join(tmpdir(), 'tw-adopt-readme-'));
  // The tarballs where README's line has them (`./taskworker-<version>.tgz`): beside it, as `npm pack` leaves them.
  for (const tarball of Object.values(tarballs)) cpSync(tarball, join(scratch, basename(tarball)));
  await run(scratch, init[0] as string, init.slice(1));
  const made = join(scratch, init.at(-1) as string);
  const written = readdirSync(made).sort();
  await run(made, 'npm', ['install', '--no-audit', '--no-fund']);
  return { scratch, init, made, written, commands };
}

describe('README’s first commands, to the letter, from an empty directory', () => {
  it('init from the tarballs, then the scaffold installs, passes its own tests and runs the command', async () => {
    const { scratch, init, made, written, commands } = await readmeInit;
    expect(init.slice(0, 1)).toEqual(['npx']);
    const name = init.at(-1) as string;
    expect(written).toEqual(
      ['.gitignore', 'README.md', 'cdk.json', 'infra', 'package.json', 'tasks', 'taskworker.config.ts', 'tsconfig.json', 'vendor'].sort(),
    );
    const after = commands.slice(commands.indexOf(init) + 1);
    expect(after[0]).toEqual(['cd', name, '&&', 'npm', 'install']);
    expect(after[1]).toEqual(['npm', 'test']);
    // Node 20's runner reports TAP when not on a terminal, Node 24's the spec reporter.
    const report = sh(made, 'npm', ['test']);
    expect(report).toMatch(/^(?:# |ℹ )pass 3$/m);
    expect(report).toMatch(/^(?:# |ℹ )fail 0$/m);
    expect(() => sh(made, 'npx', ['tsc'])).not.toThrow();
    expect(sh(made, 'npx', ['taskworker', '--help'])).toMatch(/^usage:/);
    // A second init refuses, and writes nothing.
    expect(() => sh(scratch, init[0] as string, init.slice(1))).toThrow(/already has/);
  }, 600_000);
});

describe('the packed packages', () => {
  const installed = (name = 'taskworker') => join(consumer, 'node_modules', name);

  it('carry package.jsons with only what a consumer reads: no scripts (no install-time script), no devDependencies', () => {
    const packed = JSON.parse(readFileSync(join(installed(), 'package.json'), 'utf8')) as Record<string, unknown>;
    const toolkit = JSON.parse(readFileSync(join(installed('taskworker-toolkit'), 'package.json'), 'utf8')) as Record<string, unknown>;
    for (const pkg of [packed, toolkit]) {
      expect(pkg.scripts).toBeUndefined();
      expect(pkg.devDependencies).toBeUndefined();
    }
    expect(packed).toMatchObject({ name: 'taskworker', version: manifest.version, bin: { taskworker: 'bin/taskworker.js' } });
    // The toolkit: esbuild its own, taskworker at this very version the user's.
    expect(toolkit).toMatchObject({
      name: 'taskworker-toolkit',
      version: manifest.version,
      dependencies: { esbuild: `^${manifest.devDependencies.esbuild}` },
      peerDependencies: { taskworker: manifest.version },
    });
    expect(toolkit.bin).toBeUndefined();
    // The repository's own manifest is back whole after the pack: npm ci still builds and installs Node 24.
    const home = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    expect(home.scripts.prepare).toContain('node-runtime.cjs 24');
    expect(existsSync(join(ROOT, '.package.json.unpacked'))).toBe(false);
  });

  it('has source maps whose every source is shipped or carried in the map, so a stack frame from it can be read', () => {
    const maps = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
        e.isDirectory() ? maps(join(dir, e.name)) : e.name.endsWith('.map') ? [join(dir, e.name)] : [],
      );
    const readable = new Set<string>();
    const unreadable: string[] = [];
    const all = [...maps(join(installed(), 'dist')), ...maps(join(installed('taskworker-toolkit'), 'dist'))];
    expect(all.length).toBeGreaterThan(10);
    expect(all.some((file) => file.endsWith(join('artifact', 'index.js.map')))).toBe(true);
    for (const file of all) {
      const map = JSON.parse(readFileSync(file, 'utf8')) as { sources: string[]; sourcesContent?: Array<string | null> };
      map.sources.forEach((source, i) => {
        const path = join(dirname(file), source);
        if (typeof map.sourcesContent?.[i] === 'string' || existsSync(path)) readable.add(path);
        else unreadable.push(`${file}: ${source}`);
      });
    }
    expect(unreadable).toEqual([]);
    // A frame of an error thrown inside the package, as Node prints it with source maps on.
    const stack = sh(consumer, 'node', [
      '--enable-source-maps',
      '-e',
      "try { require('taskworker').decodeEnvelope('not json') } catch (e) { console.log(e.stack) }",
    ]);
    const frame = /\((\/[^)]*node_modules\/taskworker\/[^):]+):\d+:\d+\)/.exec(stack)?.[1] as string;
    expect(frame).toMatch(/envelope\.ts$/);
    expect(existsSync(frame) || readable.has(frame)).toBe(true);
  });
});
