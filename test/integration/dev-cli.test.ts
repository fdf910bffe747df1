/**
 * `taskworker dev` as a user runs it: the real CLI in its own process, in a project directory
 * of the user's (its own config and tasks), driven by other CLI processes started where a user
 * would start them — a subdirectory, another directory with dev's export line, a `tsx` script
 * using the library's Publisher. What is asserted comes from what those processes print and from
 * the jobs table (`jobs show`), before and after dev is restarted in the same directory.
 */
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { JobShowAnswer } from '../../lib/operate/answers';
import type { JobLogs } from '../../lib/operate/job-logs';
import { ensureBuilt } from '../helpers/built';
import { eventually } from '../helpers/run';

const ROOT = join(__dirname, '..', '..');
const CLI = join(ROOT, 'bin', 'taskworker.js');

let project: string;
let dev: ChildProcess;
let out = '';
let err = '';
let exportedEnv: Record<string, string> = {};
/** A job archived by the first dev, looked for again after the restarts. */
let archivedJobId = '';
/** Devs started after the first (restarts), stopped at the end if still running. */
const restarted: ChildProcess[] = [];

/** The environment a user's shell has, less every AWS_ variable (no region, no endpoint). */
/**
 * The temporary directory of every command this file starts (its devs' builds, their registry):
 * its own, so what another suite running beside it creates or removes is never counted here.
 */
const CHILD_TMPDIR = mkdtempSync(join(tmpdir(), 'tw-dev-cli-tmp-'));

function withoutAws(): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('AWS_'))) as NodeJS.ProcessEnv;
  return { ...env, TMPDIR: CHILD_TMPDIR };
}

/** Runs one CLI command to completion in `cwd`; the environment is the user's plus `env`. */
function run(cwd: string, args: string[], env: Record<string, string> = {}) {
  try {
    const stdout = execFileSync(process.execPath, [CLI, ...args], {
      cwd,
      env: { ...withoutAws(), ...env },
      encoding: 'utf8',
      stdio: 'pipe',
    });
    return { code: 0, stdout, stderr: '' };
  } catch (error) {
    const e = error as { status: number; stdout: string; stderr: string };
    return { code: e.status, stdout: e.stdout, stderr: e.stderr };
  }
}

function writeTask(name: string, body: string): void {
  writeFileSync(join(project, 'tasks', `${name}.ts`), body);
}

const FLAKY = (outcome: string) => `class DownstreamError extends Error {
  override name = 'DownstreamError';
}

export default {
  name: 'flaky',
  queue: 'default',
  timeLimitSeconds: 2,
  maxRetries: 1,
  backoff: { baseSeconds: 0, capSeconds: 0 },
  run(payload: { item: number }) {
    ${outcome}
  },
};
`;

beforeAll(async () => {
  await ensureBuilt();
  project = mkdtempSync(join(tmpdir(), 'tw-dev-project-'));
  mkdirSync(join(project, 'tasks'));
  mkdirSync(join(project, 'src', 'deep'), { recursive: true });
  writeFileSync(
    join(project, 'taskworker.config.ts'),
    // Room for a doorbell invocation: a 2 s task, 1 s kill grace and the 5 s settle margin.
    "export default { app: 'shop', queues: [{ name: 'default', priority: 10, visibilityTimeoutSeconds: 10, longPollSeconds: 0 }] };\n",
  );
  writeTask('flaky', FLAKY("throw new DownstreamError('inventory said 503 for item ' + payload.item);"));
  writeTask(
    'chatty',
    "export default { name: 'chatty', queue: 'default', timeLimitSeconds: 2, run(p: { n: number }, ctx: { log: { info(m: string, f?: object): void } }) { ctx.log.info('hello', { n: p.n }); console.warn('careful with', p.n); } };\n",
  );
  writeTask(
    'crash',
    "export default { name: 'crash', queue: 'default', timeLimitSeconds: 2, run() { process.kill(process.pid, 'SIGKILL'); } };\n",
  );
  dev = spawn(process.execPath, [CLI, 'dev', '--watch', '--dispatchers', '2'], {
    cwd: project,
    env: { ...process.env, TMPDIR: CHILD_TMPDIR },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  dev.stdout?.on('data', (chunk) => {
    out += String(chunk);
  });
  dev.stderr?.on('data', (chunk) => {
    err += String(chunk);
  });
  // Hang guards, not speed figures: the build and dev's start take many times longer on a loaded machine.
  await eventually('dev to start', () => out.includes('Ctrl-C to stop.'), 180_000);
  const line = /export (.*)/.exec(out)?.[1] ?? '';
  exportedEnv = Object.fromEntries(line.split(' ').map((pair) => pair.split('=') as [string, string]));
}, 300_000);

/** Starts `taskworker dev` in the project again; resolves once it is up, with what it prints. */
async function startDev(args: string[] = []): Promise<{ proc: ChildProcess; out: () => string; err: () => string }> {
  let printed = '';
  let warned = '';
  const proc = spawn(process.execPath, [CLI, 'dev', ...args], { cwd: project, env: withoutAws(), stdio: ['ignore', 'pipe', 'pipe'] });
  restarted.push(proc);
  proc.stdout?.on('data', (chunk) => {
    printed += String(chunk);
  });
  proc.stderr?.on('data', (chunk) => {
    warned += String(chunk);
  });
  await eventually('dev to start again', () => printed.includes('Ctrl-C to stop.'), 60_000);
  return { proc, out: () => printed, err: () => warned };
}

async function stopDev(proc: ChildProcess, signal: NodeJS.Signals = 'SIGINT'): Promise<number | null> {
  if (proc.exitCode !== null || proc.signalCode !== null) return proc.exitCode;
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  proc.kill(signal);
  return exited;
}

afterAll(async () => {
  for (const proc of [dev, ...restarted]) await stopDev(proc);
});

describe('taskworker dev, used from other shells', () => {
  it('prints an export line that every SDK reads, AWS_DEFAULT_REGION included', () => {
    expect(Object.keys(exportedEnv)).toEqual(
      expect.arrayContaining(['AWS_REGION', 'AWS_DEFAULT_REGION', 'AWS_ENDPOINT_URL_SQS', 'AWS_ENDPOINT_URL_DYNAMODB']),
    );
  });

  it('is found from a subdirectory of the project, and says how many dispatchers are alive', () => {
    const status = run(join(project, 'src', 'deep'), ['status', '--json']);
    expect(status.code).toBe(0);
    // Two containers of the dispatcher function (--dispatchers 2) and the one doorbell's.
    expect(JSON.parse(status.stdout)).toMatchObject({ version: 'dev', localDispatchers: { alive: 3, died: 0 } });
  });

  it('is found from anywhere through the endpoint of its export line', () => {
    const status = run(tmpdir(), ['status', '--json'], exportedEnv);
    expect(status.code).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({ version: 'dev', queues: [expect.objectContaining({ queue: 'default' })] });
  });

  it('prints one readable line per failed attempt, pointing at the task source; jobs show has the mapped stack', async () => {
    const published = run(join(project, 'src'), ['publish', 'flaky', '--payload', '{"item":42}', '--json']);
    expect(published.code).toBe(0);
    const { jobId } = JSON.parse(published.stdout) as { jobId: string };
    archivedJobId = jobId;
    await eventually('two failed attempts', () => err.includes(`flaky ${jobId} attempt 2`), 30_000);
    const lines = err.split('\n').filter((l) => l.includes(jobId));
    expect(lines).toEqual([
      expect.stringMatching(
        new RegExp(`✗ flaky ${jobId} attempt 1: DownstreamError: inventory said 503 for item 42 at tasks/flaky\\.ts:12:\\d+ → retrying$`),
      ),
      expect.stringMatching(/attempt 2: DownstreamError: .* → archived \(exhausted\)$/),
    ]);
    const shown = run(project, ['jobs', 'show', jobId, '--json']);
    const { job } = JSON.parse(shown.stdout) as JobShowAnswer;
    if (!job?.lastError?.stack) throw new Error(`no error stack on the job: ${shown.stdout}`);
    expect(job.state).toBe('archived');
    expect(job.lastError.stack).toContain(`${join(project, 'tasks', 'flaky.ts')}:12:`);
    expect(job.lastError.stack).not.toContain('tasks.cjs');
  });

  it("jobs logs: a job's own lines (ctx.log, console) from dev's log file, with --json and --follow; the console shows them whatever the level", async () => {
    const published = run(project, ['publish', 'chatty', '--payload', '{"n":7}', '--json']);
    const { jobId } = JSON.parse(published.stdout) as { jobId: string };
    expect(run(project, ['jobs', 'wait', jobId, '--timeout', '30']).code).toBe(0);
    await eventually("the job's lines in dev's log", () => run(project, ['jobs', 'logs', jobId]).stdout.includes('careful with 7'), 10_000);
    const text = run(project, ['jobs', 'logs', jobId]);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain('log lines from .taskworker/dev.log');
    expect(text.stdout).toMatch(/ #1 INFO {2}hello {2}n=7$/m);
    expect(text.stdout).toMatch(/ #1 WARN {2}careful with 7$/m);
    const json = JSON.parse(run(project, ['jobs', 'logs', jobId, '--json']).stdout) as JobLogs;
    expect(json).toMatchObject({ jobId, ended: true, where: '.taskworker/dev.log' });
    expect(json.lines.map((l) => [l.source, l.attempt, l.level, l.message, l.fields])).toEqual([
      ['task', 1, 'info', 'hello', { n: 7 }],
      ['task', 1, 'warn', 'careful with 7', {}],
    ]);
    // Following a job that has ended prints its lines and returns.
    const followed = run(project, ['jobs', 'logs', jobId, '--follow', '--json']);
    expect(followed.code).toBe(0);
    expect(
      followed.stdout
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as { message: string }).message),
    ).toEqual(['hello', 'careful with 7']);
    await eventually("the job's lines on dev's console", () => err.includes(`[job ${jobId} #1] INFO hello  n=7`), 15_000);
    expect(run(project, ['jobs', 'logs']).stderr).toContain('usage: taskworker jobs logs ID');
  });

  it('keeps JSON log lines off the console and in .taskworker/dev.log', () => {
    expect(err).not.toMatch(/^\{"level"/m);
    expect(existsSync(join(project, '.taskworker', 'dev.log'))).toBe(true);
  });

  it('replaces a dispatcher whose task killed its process, naming the signal and the job it held', async () => {
    const published = run(project, ['publish', 'crash', '--payload', '{}', '--json']);
    const { jobId } = JSON.parse(published.stdout) as { jobId: string };
    await eventually(
      'the death to be reported',
      () => new RegExp(`was killed by SIGKILL; it held 1 job\\(s\\): crash ${jobId}`).test(err),
      30_000,
    );
    expect(err).toMatch(/starting dispatcher \d+ in 0\.5 s/);
    // Replaced: the configured containers are alive again. (A container the local Lambda service
    // started for a busy moment may be alive beside them until it idles out, so at least two.)
    await eventually(
      'two dispatchers alive again',
      () => (JSON.parse(run(project, ['status', '--json']).stdout) as { localDispatchers: { alive: number } }).localDispatchers.alive >= 2,
      30_000,
    );
    const status = JSON.parse(run(project, ['status', '--json']).stdout) as { localDispatchers: { died: number } };
    expect(status.localDispatchers.died).toBeGreaterThanOrEqual(1);
  });

  it('--watch: a changed task is rebuilt and the dispatchers restart on it', async () => {
    writeTask('flaky', FLAKY("return 'in stock';"));
    await eventually('the reload', () => out.includes('reloaded:'), 30_000);
    const published = run(project, ['publish', 'flaky', '--payload', '{"item":7}', '--json']);
    const { jobId } = JSON.parse(published.stdout) as { jobId: string };
    await eventually('the new code to run', () => run(project, ['jobs', 'show', jobId, '--json']).stdout.includes('"succeeded"'), 30_000);
    expect(JSON.parse(run(project, ['jobs', 'show', jobId, '--json']).stdout)).toMatchObject({ job: { result: 'in stock' } });
  });

  it('--watch: two atomic saves (a temporary file renamed over the task) are two rebuilds, the temporary file never named', async () => {
    const reloads = () => out.split('\n').filter((l) => l.startsWith('reloaded:')).length;
    for (const [i, outcome] of ["return 'saved once';", "return 'saved twice';"].entries()) {
      const before = reloads();
      const temporary = join(project, 'tasks', `sedAlFQ3${i}`);
      writeFileSync(temporary, FLAKY(outcome));
      renameSync(temporary, join(project, 'tasks', 'flaky.ts'));
      await eventually(`rebuild ${i + 1}`, () => reloads() === before + 1, 30_000);
    }
    const published = run(project, ['publish', 'flaky', '--payload', '{"item":8}', '--json']);
    const { jobId } = JSON.parse(published.stdout) as { jobId: string };
    await eventually(
      'the twice-saved code to run',
      () => run(project, ['jobs', 'show', jobId, '--json']).stdout.includes('"succeeded"'),
      30_000,
    );
    expect(JSON.parse(run(project, ['jobs', 'show', jobId, '--json']).stdout)).toMatchObject({ job: { result: 'saved twice' } });
    expect(out).toMatch(/change in tasks\/flaky\.ts: rebuilding/);
    expect(out + err).not.toContain('sedAlFQ3');
  });

  it("the library's Publisher in a tsx script: with no region one MissingRegionError saying how; Publisher.forLocalDev publishes to this dev", async () => {
    writeFileSync(
      join(project, 'publish.ts'),
      [
        `import { Publisher } from ${JSON.stringify(join(ROOT, 'lib', 'index.ts'))};`,
        "import config from './taskworker.config';",
        'async function main(mode: string) {',
        "  const publisher = mode === 'local' ? Publisher.forLocalDev({ config }) : new Publisher({ config, version: 'dev' });",
        "  const { jobId } = await publisher.publish('flaky', { item: 11 }, { queue: 'default' });",
        '  console.log(jobId);',
        '}',
        'main(process.argv[2] as string).catch((error: Error) => {',
        "  console.error(error.name + ': ' + error.message);",
        '  process.exitCode = 1;',
        '});',
      ].join('\n'),
    );
    // A fresh process as a user starts one: no AWS_ variable, no ~/.aws to find a region in; the
    // SDK's Node version warning off, so what is printed is the script's alone.
    const script = (mode: string) =>
      spawnSync(join(ROOT, 'node_modules', '.bin', 'tsx'), ['publish.ts', mode], {
        cwd: project,
        env: { ...withoutAws(), HOME: mkdtempSync(join(tmpdir(), 'tw-home-')), NODE_OPTIONS: '--no-warnings' },
        encoding: 'utf8',
      });
    const plain = script('plain');
    expect(plain.status).toBe(1);
    expect(plain.stderr.trim().split('\n')).toEqual([
      expect.stringMatching(/^MissingRegionError: No AWS region for SQS: .*Publisher\.forLocalDev\(\{ config \}\)$/),
    ]);
    expect(plain.stderr).not.toContain('Region is missing');

    const local = script('local');
    expect(local.stderr).toBe('');
    const jobId = local.stdout.trim();
    await eventually(
      'the job to run on this dev',
      () => run(project, ['jobs', 'show', jobId, '--json']).stdout.includes('"succeeded"'),
      30_000,
    );
    expect(JSON.parse(run(project, ['jobs', 'show', jobId, '--json']).stdout)).toMatchObject({ job: { result: 'saved twice' } });
  });

  it('archive list shows, for a malformed message, the id jobs show accepts', async () => {
    const sqs = new SQSClient({
      region: 'us-east-1',
      endpoint: exportedEnv.AWS_ENDPOINT_URL_SQS as string,
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
    const queueUrl = /default\s+(http\S+)/.exec(out)?.[1] as string;
    await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: 'not json at all' }));
    sqs.destroy();
    let listed: Array<{ record: { reason: string; jobId: string } }> = [];
    await eventually(
      'the malformed message in the archive',
      () => {
        listed = JSON.parse(run(project, ['archive', 'list', '--reason', 'malformed', '--json']).stdout);
        return listed.length === 1;
      },
      30_000,
    );
    const id = listed[0]?.record.jobId as string;
    const shown = run(project, ['jobs', 'show', id, '--json']);
    expect(shown.code).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({
      job: { jobId: id, state: 'archived', reason: 'malformed' },
      filedUnderMessageIds: [],
    });
  });

  it('stops on Ctrl-C, leaving no state file and no build directory behind', async () => {
    const builds = () => readdirSync(CHILD_TMPDIR).filter((f) => f.startsWith('taskworker-dev-')).length;
    const before = builds();
    dev.kill('SIGINT');
    const code = await new Promise((resolve) => dev.once('exit', resolve));
    expect(code).toBe(0);
    expect(existsSync(join(project, '.taskworker', 'dev.json'))).toBe(false);
    expect(builds()).toBe(before - 1);
    const after = run(project, ['status']);
    expect(after.code).toBe(2);
    expect(after.stderr.trim().split('\n')).toHaveLength(1);
  });
});

describe('taskworker dev, started again in the same directory', () => {
  let second: Awaited<ReturnType<typeof startDev>>;
  /**
   * Each test's own bound: the waits inside it (60 s for each start, 30 s for a job) and the stops,
   * with room. Jest's 60 s default was less than one start's wait, and a busy machine's two starts
   * with a job between went past it.
   */
  const STARTS = (n: number) => n * 90_000 + 60_000;

  it(
    'carries on with what the clean stop kept, and says so in one line',
    async () => {
      second = await startDev();
      expect(second.out()).toMatch(
        /^ {2}state: kept from the last run in \.taskworker\/emulators: the jobs tables, \d+ message\(s\) in \d+ queue\(s\), \d+ stored object\(s\) \(--reset starts empty\)$/m,
      );
      expect(JSON.parse(run(project, ['jobs', 'show', archivedJobId, '--json']).stdout)).toMatchObject({
        job: { jobId: archivedJobId, state: 'archived' },
      });
    },
    STARTS(1),
  );

  it(
    'after a dev that was killed: one line says so, and it starts empty',
    async () => {
      await stopDev(second.proc, 'SIGKILL');
      const third = await startDev();
      const said = third
        .err()
        .split('\n')
        .filter((l) => l.includes('did not stop cleanly'));
      expect(said).toEqual([
        expect.stringMatching(/^the last taskworker dev here \(pid \d+\) did not stop cleanly \(killed\?\): .* starts empty/),
      ]);
      expect(run(project, ['jobs', 'show', archivedJobId, '--json']).code).not.toBe(0);
      await stopDev(third.proc);
    },
    STARTS(1),
  );

  it(
    '--reset starts empty after a clean stop too',
    async () => {
      const fourth = await startDev();
      expect(fourth.out()).toMatch(/^ {2}state: kept from the last run in \.taskworker\/emulators: /m);
      const { jobId } = JSON.parse(run(project, ['publish', 'flaky', '--payload', '{"item":12}', '--json']).stdout) as { jobId: string };
      await eventually('the job to run', () => run(project, ['jobs', 'show', jobId, '--json']).stdout.includes('"succeeded"'), 30_000);
      expect(await stopDev(fourth.proc)).toBe(0);

      const fifth = await startDev(['--reset']);
      expect(fifth.out()).toMatch(/^ {2}state: started empty \(--reset\); kept in \.taskworker\/emulators between runs from now on$/m);
      expect(run(project, ['jobs', 'show', jobId, '--json']).code).not.toBe(0);
      expect(await stopDev(fifth.proc)).toBe(0);
    },
    STARTS(2),
  );
});
