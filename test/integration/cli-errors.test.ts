/**
 * The CLI's first failures a new user meets, each one readable line (no stack trace): no region,
 * no credentials, a port already taken, a task module that throws while loading. And a failed
 * start leaves no temporary build directory behind.
 */
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { cli } from '../helpers/cli';
import { FIXTURE_CONFIG } from '../helpers/emulators';

const saved = { ...process.env };
afterEach(() => {
  process.env = { ...saved };
});

/** The environment of a machine with no AWS setup at all. */
function noAws(extra: Record<string, string> = {}): void {
  for (const key of Object.keys(process.env)) if (key.startsWith('AWS_')) delete process.env[key];
  Object.assign(process.env, {
    HOME: mkdtempSync(join(tmpdir(), 'tw-home-')),
    AWS_EC2_METADATA_DISABLED: 'true',
    AWS_CONFIG_FILE: '/nonexistent',
    AWS_SHARED_CREDENTIALS_FILE: '/nonexistent',
    ...extra,
  });
}

/**
 * The temporary directories a command makes while `act` runs (every one it asks for, synchronously
 * or not), and which of them are left afterwards: counting the shared temporary directory instead
 * would count another suite's dev running beside this one.
 */
async function tempDirsLeftBy<T>(act: () => Promise<T>): Promise<{ result: T; made: number; left: string[] }> {
  const made: string[] = [];
  const fs = require('node:fs') as typeof import('node:fs');
  const fsPromises = require('node:fs/promises') as typeof import('node:fs/promises');
  const [realSync, realAsync] = [fs.mkdtempSync, fsPromises.mkdtemp];
  const sync = jest.spyOn(fs, 'mkdtempSync').mockImplementation((prefix: string) => {
    const dir = realSync(prefix);
    made.push(dir);
    return dir;
  });
  const promised = jest.spyOn(fsPromises, 'mkdtemp').mockImplementation(async (prefix: string) => {
    const dir = await realAsync(prefix);
    made.push(dir);
    return dir;
  });
  try {
    const result = await act();
    return { result, made: made.length, left: made.filter((dir) => existsSync(dir)) };
  } finally {
    sync.mockRestore();
    promised.mockRestore();
  }
}

const oneLine = (text: string) => text.trim().split('\n').length === 1 && !/\n\s+at /.test(text);

describe('CLI errors are one readable line', () => {
  it.each(['dev', 'publish', 'jobs', 'ui'])('`taskworker %s --help` prints that command’s usage and exits 0', async (command) => {
    const result = await cli(command, '--help');
    expect(result.code).toBe(0);
    expect(result.out).toMatch(new RegExp(`^usage:\\n\\ntaskworker ${command === 'jobs' ? 'status' : command} `));
    expect(result.err).toBe('');
  });

  it('a mistyped subcommand is named before any version or running dev is looked for', async () => {
    noAws();
    const result = await cli('jobs', 'lsit', '--config', FIXTURE_CONFIG);
    expect(result.code).toBe(2);
    expect(result.err).toMatch(/^taskworker: unknown jobs command "lsit"; usage: taskworker jobs show ID \| list/);
    expect(oneLine(result.err)).toBe(true);
  });

  it('an unknown option: one line naming it and the command, no error class', async () => {
    const result = await cli('publish', 'send', '--payload', '{}', '--dly', '3');
    expect(result.code).toBe(2);
    expect(result.err).toBe("taskworker publish: Unknown option '--dly' (taskworker publish --help lists its options)\n");
  });

  it('no AWS region', async () => {
    noAws();
    const result = await cli('status', '--version', 'v1', '--config', FIXTURE_CONFIG);
    expect(result.code).toBe(1);
    expect(result.err).toMatch(/^taskworker: no AWS region: set AWS_REGION/);
    expect(oneLine(result.err)).toBe(true);
  });

  it('no AWS credentials', async () => {
    noAws({ AWS_REGION: 'eu-west-1' });
    const result = await cli('status', '--version', 'v1', '--config', FIXTURE_CONFIG);
    expect(result.code).toBe(1);
    expect(result.err).toMatch(/^taskworker: no AWS credentials found/);
    expect(oneLine(result.err)).toBe(true);
  });

  it.each([
    ['no region', {}, /^taskworker: no AWS region: set AWS_REGION/],
    ['no credentials', { AWS_REGION: 'eu-west-1' }, /^taskworker: no AWS credentials found/],
  ])('taskworker ui with %s: one line at start, nothing served', async (_, extra, said) => {
    noAws(extra);
    const result = await cli('ui', '--version', 'v1', '--port', '0', '--config', FIXTURE_CONFIG);
    expect(result.code).toBe(1);
    expect(result.err).toMatch(said);
    expect(oneLine(result.err)).toBe(true);
    expect(result.out).toBe('');
  });

  it('a port already in use, and no build left behind', async () => {
    const busy: Server = createServer();
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
    const port = (busy.address() as { port: number }).port;
    try {
      const { result, made, left } = await tempDirsLeftBy(() => cli('dev', '--config', FIXTURE_CONFIG, '--sqs-port', String(port)));
      expect(result.code).toBe(1);
      expect(result.err).toBe(
        `taskworker: port ${port} is already in use: choose another with --sqs-port / --dynamodb-port, or leave them out for free ports\n`,
      );
      expect({ left, made: made > 0 }).toEqual({ left: [], made: true });
    } finally {
      busy.close();
    }
  }, 60_000);

  it('a task module that throws while loading is named, with the line that threw', async () => {
    const tasks = mkdtempSync(join(tmpdir(), 'tw-bad-tasks-'));
    mkdirSync(join(tasks, 'lib'));
    writeFileSync(join(tasks, 'lib', 'settings.ts'), "export function limit(): number {\n  throw new Error('SHOP_LIMIT is not set');\n}\n");
    writeFileSync(
      join(tasks, 'charge.ts'),
      "import { limit } from './lib/settings';\nconst max = limit();\nexport default { name: 'charge', queue: 'urgent', timeLimitSeconds: 1, run: () => max };\n",
    );
    const { result, made, left } = await tempDirsLeftBy(() => cli('dev', '--config', FIXTURE_CONFIG, '--tasks', tasks));
    expect(result.code).toBe(2);
    expect(result.err).toMatch(
      /^taskworker: ModuleLoadError: task module .*charge\.ts threw while loading: Error: SHOP_LIMIT is not set \(.*settings\.ts:2:\d+\)$/m,
    );
    expect(result.err).not.toContain('tasks.cjs');
    expect(oneLine(result.err)).toBe(true);
    expect({ left, made: made > 0 }).toEqual({ left: [], made: true });
  }, 60_000);

  it('a config that does not compile is one line, and leaves no temporary directory', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tw-bad-config-'));
    const config = join(dir, 'taskworker.config.ts');
    writeFileSync(config, 'export default { app: "shop", queues: [ };\n');
    const { result, made, left } = await tempDirsLeftBy(() => cli('status', '--version', 'v1', '--config', config));
    expect(result.code).toBe(2);
    expect(result.err).toMatch(/^taskworker: BundleError: esbuild failed: /);
    expect({ left, made: made > 0 }).toEqual({ left: [], made: true });
  });

  it('a config module that throws while loading is named', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tw-bad-config-'));
    const config = join(dir, 'taskworker.config.ts');
    writeFileSync(config, "if (!process.env.SHOP_REGION) throw new Error('SHOP_REGION is not set');\nexport default {};\n");
    const result = await cli('status', '--version', 'v1', '--config', config);
    expect(result.code).toBe(2);
    expect(result.err).toMatch(
      /^taskworker: ModuleLoadError: config file .*taskworker\.config\.ts threw while loading: Error: SHOP_REGION is not set/,
    );
    expect(oneLine(result.err)).toBe(true);
  });

  it('a schedule that could never fire fails dev at start, naming the field, and leaves no build behind', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tw-bad-schedule-'));
    const config = join(dir, 'taskworker.config.json');
    writeFileSync(
      config,
      JSON.stringify({
        app: 'shop',
        tasksDir: join(FIXTURE_CONFIG, '..', 'tasks'),
        queues: [
          { name: 'urgent', priority: 90, visibilityTimeoutSeconds: 10 },
          { name: 'routine', priority: 10, visibilityTimeoutSeconds: 10 },
          { name: 'bulk', priority: 5, visibilityTimeoutSeconds: 10, tracking: 'off', maxReceiveCount: 10 },
        ],
        schedules: [{ name: 'nightly', task: 'record', payload: {}, cron: '0 24 * * *' }],
      }),
    );
    const { result, made, left } = await tempDirsLeftBy(() => cli('dev', '--config', config));
    expect(result.code).not.toBe(0);
    expect(result.err).toMatch(/^taskworker: ConfigError: Invalid config schedules\[0\]\.cron = "0 24 \* \* \*": expected a valid crontab/);
    expect(oneLine(result.err)).toBe(true);
    expect({ left, made: made > 0 }).toEqual({ left: [], made: true });
  }, 60_000);
});
