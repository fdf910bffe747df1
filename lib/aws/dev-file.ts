import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

/**
 * What a running `taskworker dev` leaves in `.taskworker/dev.json` of the directory it started in,
 * for the CLI's other commands and `Publisher.forLocalDev()` to find it. Written by the dev, read
 * by everything else: one definition. Only node:fs here, so a publisher can read it.
 */
export interface DevState {
  readonly pid: number;
  readonly version: string;
  readonly region: string;
  readonly configFile: string;
  readonly sqsEndpoint: string;
  readonly dynamodbEndpoint: string;
  /** Dispatcher processes running when the state was last written. */
  readonly dispatchersAlive?: number;
  /** Dispatcher processes that ended while dev ran (and were replaced). */
  readonly dispatchersDied?: number;
  /** Dev's log file (absolute): every line its dispatchers write, a job's own lines among them (`jobs logs`). */
  readonly logFile?: string;
}

export const DEV_DIR = '.taskworker';
/** Credentials the emulators accept; never valid anywhere else. */
export const LOCAL_CREDENTIALS = { accessKeyId: 'local', secretAccessKey: 'local' } as const;
const STATE_FILE = 'dev.json';
/** Every running dev also registers here, so a command elsewhere can find it by its endpoint. */
const REGISTRY_DIR = join(tmpdir(), 'taskworker-dev');

/** Records a running dev in the working directory's `.taskworker/dev.json` (and in the registry by pid). */
export function writeDevState(state: DevState): void {
  const text = `${JSON.stringify(state, null, 2)}\n`;
  mkdirSync(DEV_DIR, { recursive: true });
  writeFileSync(join(DEV_DIR, STATE_FILE), text);
  mkdirSync(REGISTRY_DIR, { recursive: true });
  writeFileSync(join(REGISTRY_DIR, `${state.pid}.json`), text);
}

export function clearDevState(): void {
  rmSync(join(DEV_DIR, STATE_FILE), { force: true });
  rmSync(join(REGISTRY_DIR, `${process.pid}.json`), { force: true });
}

/** Whether a process with this id is running (one another user owns counts too). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function aliveState(file: string): DevState | undefined {
  try {
    const state = JSON.parse(readFileSync(file, 'utf8')) as DevState;
    return processAlive(state.pid) ? state : undefined;
  } catch {
    return undefined;
  }
}

/** The running `taskworker dev` of this directory or the nearest one above it. */
export function readDevState(from = process.cwd()): DevState | undefined {
  for (let dir = resolve(from); ; dir = dirname(dir)) {
    const state = aliveState(join(dir, DEV_DIR, STATE_FILE));
    if (state) return state;
    if (dirname(dir) === dir) return undefined;
  }
}

/** The running `taskworker dev` whose SQS endpoint is `endpoint`, wherever it was started. */
export function devStateByEndpoint(endpoint: string): DevState | undefined {
  const wanted = endpoint.replace(/\/+$/, '');
  let files: string[];
  try {
    files = readdirSync(REGISTRY_DIR).filter((f) => f.endsWith('.json'));
  } catch {
    return undefined;
  }
  for (const file of files) {
    const state = aliveState(join(REGISTRY_DIR, file));
    if (state?.sqsEndpoint.replace(/\/+$/, '') === wanted) return state;
  }
  return undefined;
}
