import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SQSClient } from '@aws-sdk/client-sqs';
import type { DispatcherRuntime } from '../../lib/invocation/dispatcher-runtime';
import { type Emulators, startEmulators } from '../../lib/local/emulators';
import { buildTasksBundle } from '../../lib/tasks/build';
import { loadTaskBundle, type TaskBundle } from '../../lib/tasks/bundle';

export const FIXTURE_CONFIG = join(__dirname, '..', 'fixtures', 'taskworker.config.ts');

export interface EmulatorHarness {
  readonly emulators: Emulators;
  readonly sqs: SQSClient;
}

/** Starts fauxqs and dynalite on free ports for one test file. */
export async function startHarness(): Promise<EmulatorHarness> {
  const emulators = await startEmulators();
  const sqs = new SQSClient({
    region: 'us-east-1',
    endpoint: emulators.sqsEndpoint,
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
  });
  return { emulators, sqs };
}

export async function stopHarness(h: EmulatorHarness | undefined): Promise<void> {
  h?.sqs.destroy();
  await h?.emulators.stop();
}

/** Builds the fixture tasks bundle with esbuild (the same path Lambda's artifact takes). */
export async function buildFixtureBundle(configFile = FIXTURE_CONFIG): Promise<TaskBundle> {
  const dir = mkdtempSync(join(tmpdir(), 'tw-test-bundle-'));
  const { tasksFile } = await buildTasksBundle({ configFile, outFile: join(dir, 'tasks.cjs') });
  return loadTaskBundle(tasksFile);
}

let versionCounter = 0;

/** A version name no other test in this file uses: fresh queues and tables for each test. */
export function nextVersion(): string {
  versionCounter += 1;
  return `t${versionCounter}`;
}

export function tempFile(name: string): string {
  return join(mkdtempSync(join(tmpdir(), 'tw-test-')), name);
}

/** A dispatcher left running for a whole file (ten minutes of invocation), and how to stop it. */
export interface RunningDispatcher {
  /** Aborts its invocation, waits for it to end, and closes its thread pool. */
  stop(): Promise<void>;
}

/** Starts one long invocation of `runtime`, as a deployed dispatcher would run through a test file. */
export function keepDispatching(runtime: DispatcherRuntime): RunningDispatcher {
  const abort = new AbortController();
  const done = runtime.invoke(Date.now() + 600_000, abort.signal);
  return {
    async stop() {
      abort.abort();
      await done.catch(() => undefined);
      await runtime.close();
    },
  };
}
